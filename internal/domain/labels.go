package domain

import (
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Bounds of a run's labels.
const (
	MaxLabels         = 20
	MaxLabelKeyLen    = 63
	MaxLabelValueLen  = 256 // characters
	labelValueMaxByte = MaxLabelValueLen * utf8.UTFMax
)

// Label is one key:value label of a run, as a filter names it.
type Label struct {
	Key, Value string
}

// ValidLabelKey reports a label key: 1 to 63 of a-z, 0-9, _, . and -.
func ValidLabelKey(k string) bool {
	if k == "" || len(k) > MaxLabelKeyLen {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

// validLabelValue reports a label value: valid UTF-8 of at most 256 characters, without
// control characters.
func validLabelValue(v string) bool {
	if len(v) > labelValueMaxByte || !utf8.ValidString(v) || utf8.RuneCountInString(v) > MaxLabelValueLen {
		return false
	}
	for _, r := range v {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}

// ValidateLabels checks a run's labels: at most 20, each key [a-z0-9_.-]{1,63}, each value at
// most 256 characters (no control characters). The error is a 400 naming the label.
func ValidateLabels(labels map[string]string) error {
	if len(labels) > MaxLabels {
		return BadRequest("Validation error", "at most "+strconv.Itoa(MaxLabels)+" labels, got "+strconv.Itoa(len(labels)))
	}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys) // the first bad label in key order is named, whatever the map's order
	for _, k := range keys {
		if !ValidLabelKey(k) {
			return BadRequest("Validation error", "label "+quoteLabel(k)+": a key is 1 to 63 of a-z, 0-9, _, . and -")
		}
		if !validLabelValue(labels[k]) {
			return BadRequest("Validation error", "label "+quoteLabel(k)+": a value is at most 256 characters, without control characters")
		}
	}
	return nil
}

// ParseLabelFilter reads a label filter, key:value (the value may be empty or hold colons).
func ParseLabelFilter(s string) (Label, error) {
	k, v, ok := strings.Cut(s, ":")
	if !ok || !ValidLabelKey(k) || !validLabelValue(v) {
		return Label{}, BadRequest("Validation error", "label filter "+quoteLabel(s)+" must be key:value, the key 1 to 63 of a-z, 0-9, _, . and -")
	}
	return Label{Key: k, Value: v}, nil
}

// quoteLabel quotes a label key or filter for an error, cut short and with invalid bytes
// replaced.
func quoteLabel(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return strconv.Quote(strings.ToValidUTF8(s, "\uFFFD"))
}
