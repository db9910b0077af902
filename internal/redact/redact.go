// Package redact makes an outside service's text fit for an error message or a log: the
// caller's secret removed, one line, bounded.
package redact

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxBytes bounds the text Clean returns (plus the "…" that marks a cut).
const MaxBytes = 300

// Clean returns s with every occurrence of secret replaced by "[redacted]", control characters
// (line breaks included) turned into spaces, trimmed, and cut at MaxBytes on a rune boundary.
func Clean(s, secret string) string {
	if secret != "" {
		s = strings.ReplaceAll(s, secret, "[redacted]")
	}
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	s = strings.TrimSpace(s)
	if len(s) > MaxBytes {
		cut := MaxBytes
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}
