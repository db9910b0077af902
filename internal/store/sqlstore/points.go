package sqlstore

import (
	"strings"
	"time"
	"unicode/utf8"

	"verdict/internal/domain"
)

// A test's row keeps its newest results (tests.recent, a JSON list of domain.TestPoint), and
// recording a run reads and rewrites the row of each of its tests: for a run of 2,000 tests,
// 40,000 points each way. encoding/json's reflection made most of that cost, so the points are
// written and read here as json.Marshal writes them, by hand; anything else (a string that
// needs an escape, a text written otherwise) is left to encoding/json.

// appendPoints appends pts as the column encoder writes them (newColumnEncoder: no HTML
// escapes), or reports false when a string needs an escape or a time is out of JSON's range.
func appendPoints(b []byte, pts []domain.TestPoint) ([]byte, bool) {
	b = append(b, '[')
	for i, p := range pts {
		if !plainText(p.TaskID) || !plainText(string(p.Status)) || !plainText(p.Branch) || !plainText(p.Commit) ||
			p.At.Year() < 0 || p.At.Year() > 9999 {
			return nil, false
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"t":"`...)
		b = append(b, p.TaskID...)
		b = append(b, `","s":"`...)
		b = append(b, p.Status...)
		b = append(b, '"')
		if p.Branch != "" {
			b = append(append(append(b, `,"b":"`...), p.Branch...), '"')
		}
		if p.Commit != "" {
			b = append(append(append(b, `,"c":"`...), p.Commit...), '"')
		}
		b = append(b, `,"a":"`...)
		b = p.At.AppendFormat(b, time.RFC3339Nano)
		b = append(b, `"}`...)
	}
	return append(b, ']'), true
}

// plainText reports a string json.Marshal writes as it is, between quotes: valid UTF-8 with no
// quote, backslash, control character or line or paragraph separator (U+2028, U+2029).
func plainText(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			return plainUnicode(s)
		}
	}
	return true
}

func plainUnicode(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == '"' || r == '\\' || r == '\u2028' || r == '\u2029' {
			return false
		}
	}
	return true
}

// plainPoints decodes points as appendPoints writes them; false for anything else, which is
// left to encoding/json.
func plainPoints(text string) ([]domain.TestPoint, bool) {
	if text == "[]" {
		return []domain.TestPoint{}, true
	}
	if len(text) < 2 || text[0] != '[' || text[len(text)-1] != ']' || !utf8.ValidString(text) ||
		strings.IndexByte(text, '\\') >= 0 || strings.Contains(text, "\u2028") || strings.Contains(text, "\u2029") {
		return nil, false
	}
	for i := 0; i < len(text); i++ {
		if text[i] < 0x20 {
			return nil, false
		}
	}
	out := make([]domain.TestPoint, 0, strings.Count(text, `{"t":"`))
	rest := text[1:]
	for {
		var p domain.TestPoint
		var status, at string
		var ok bool
		if p.TaskID, rest, ok = plainString(rest, `{"t":"`); !ok {
			return nil, false
		}
		if status, rest, ok = plainString(rest, `,"s":"`); !ok {
			return nil, false
		}
		p.Status = domain.TestStatus(status)
		if strings.HasPrefix(rest, `,"b":"`) {
			if p.Branch, rest, ok = plainString(rest, `,"b":"`); !ok || p.Branch == "" {
				return nil, false
			}
		}
		if strings.HasPrefix(rest, `,"c":"`) {
			if p.Commit, rest, ok = plainString(rest, `,"c":"`); !ok || p.Commit == "" {
				return nil, false
			}
		}
		if at, rest, ok = plainString(rest, `,"a":"`); !ok {
			return nil, false
		}
		// As encoding/json reads a time: Time.UnmarshalJSON, the strict RFC 3339 parser.
		if err := p.At.UnmarshalJSON([]byte(`"` + at + `"`)); err != nil {
			return nil, false
		}
		out = append(out, p)
		switch {
		case rest == "}]":
			return out, true
		case strings.HasPrefix(rest, "},"):
			rest = rest[2:]
		default:
			return nil, false
		}
	}
}

// encodePoints is the recent column's text of pts: by hand when it can, else encoding/json.
func encodePoints(pts []domain.TestPoint) (string, error) {
	if b, ok := appendPoints(make([]byte, 0, 96*len(pts)+2), pts); ok {
		return string(b), nil
	}
	j, err := marshalJSON(pts)
	if err != nil {
		return "", err
	}
	return j[0], nil
}
