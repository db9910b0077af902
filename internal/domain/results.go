package domain

import (
	"strconv"
	"unicode/utf8"
)

// A run's parsed results are bounded per test by the parsers and as a whole here: a report of
// a hundred thousand tests, or of long failure messages, would otherwise be read back whole by
// every view of the run.
const (
	// MaxKeptTests is the most tests a run keeps.
	MaxKeptTests = 10_000
	// MaxKeptTestBytes bounds the JSON of the tests a run keeps, as stored.
	MaxKeptTestBytes = 1 << 20
)

// Rank orders tests for a reader, failures first: failed 0, flaky 1, passed 2, skipped 3.
func (t *TestResult) Rank() int {
	switch t.Status {
	case TestFailed:
		return 0
	case TestFlaky:
		return 1
	case TestPassed:
		return 2
	}
	return 3
}

// KeepTests bounds a run's tests for storage (MaxKeptTests, MaxKeptTestBytes), failures first.
// It returns the tests kept, in report order, and how many were left out; the run's Summary is
// made from all of them before.
func KeepTests(tests []TestResult) (kept []TestResult, dropped int) {
	kept = PickTests(tests, MaxKeptTests, MaxKeptTestBytes)
	return kept, len(tests) - len(kept)
}

// PickTests chooses at most n of tests whose JSON (JSONSize, with the separating commas)
// takes at most budget bytes, by Rank and, within a rank, in report order, and returns them in
// report order. The choice ends at the first test that does not fit, so a test is never kept
// over one of a lower rank. tests itself is returned when all of them fit.
func PickTests(tests []TestResult, n, budget int) []TestResult {
	var byRank [4][]int32
	for i := range tests {
		r := tests[i].Rank()
		byRank[r] = append(byRank[r], int32(i))
	}
	keep := make([]bool, len(tests))
	count, size := 0, 2 // the list's brackets
	func() {
		for _, idx := range byRank {
			for _, i := range idx {
				cost := tests[i].JSONSize()
				if count > 0 {
					cost++ // the comma before it
				}
				if count == n || size+cost > budget {
					return
				}
				keep[i], count, size = true, count+1, size+cost
			}
		}
	}()
	if count == len(tests) {
		return tests
	}
	out := make([]TestResult, 0, count)
	for i := range tests {
		if keep[i] {
			out = append(out, tests[i])
		}
	}
	return out
}

// JSONSize is the length of t's JSON as the store keeps it and the API answers it (HTML
// characters not escaped): the encoder's output, computed without encoding.
func (t *TestResult) JSONSize() int {
	// {"name":"","suite":"","status":"","durationMs":,"retries":}
	n := 59 + jsonStringSize(t.Name) + jsonStringSize(t.Suite) + jsonStringSize(string(t.Status)) +
		len(strconv.FormatInt(t.DurationMs, 10)) + len(strconv.Itoa(t.Retries))
	if t.Error != "" {
		n += 11 + jsonStringSize(t.Error) // ,"error":""
	}
	if t.Shard != 0 {
		n += 9 + len(strconv.Itoa(t.Shard)) // ,"shard":
	}
	if len(t.Attachments) > 0 {
		n += 17 + len(t.Attachments) - 1 // ,"attachments":[] and the commas between them
		for i := range t.Attachments {
			a := &t.Attachments[i]
			// {"name":"","contentType":"","path":""}
			n += 38 + jsonStringSize(a.Name) + jsonStringSize(a.ContentType) + jsonStringSize(a.Path)
			if a.Retry != 0 {
				n += 9 + len(strconv.Itoa(a.Retry)) // ,"retry":
			}
		}
	}
	return n
}

// jsonStringSize is the length of s's contents as encoding/json writes them without HTML
// escaping: quote, backslash and the control characters that have a short escape take two
// bytes, other control characters six (\u00XX), as do U+2028 and U+2029 and an invalid byte
// (\ufffd).
func jsonStringSize(s string) int {
	n := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t':
				n += 2
			case c < 0x20:
				n += 6
			default:
				n++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			n += 6 // \ufffd
		case r == '\u2028' || r == '\u2029':
			n += 6
		default:
			n += size
		}
		i += size
	}
	return n
}
