package analyzer

import (
	"regexp"
	"strconv"
)

// statusPatterns find the HTTP status an application answered in assertion messages; the
// first group is the actual status, never the expected one.
var statusPatterns = []*regexp.Regexp{
	regexp.MustCompile(`(?i)\bassert (\d{3}) ==\s*\d{3}\b`),                                                           // pytest
	regexp.MustCompile(`(?i)\bexpected(?: status code)?:? ?(?:is )?<?\d{3}>?,?\s+but(?::| was| got)*:? ?<?(\d{3})\b`), // JUnit, RestAssured, MockMvc, Hamcrest
	regexp.MustCompile(`(?i)\bexpected:? \d{3}\s+received:? (\d{3})\b`),                                               // Jest, Playwright
	regexp.MustCompile(`(?i)\bexpected (\d{3}) to (?:equal|eq|be|deep equal) \d{3}\b`),                                // chai
	regexp.MustCompile(`(?m)^(?:AssertionError: )?(\d{3}) != \d{3}\b`),                                                // unittest
	regexp.MustCompile(`<Response \[(\d{3})\]>`),                                                                      // requests
	regexp.MustCompile(`(?i)\bstatus(?: code)?(?: was| of| is|:)? <?(\d{3})\b`),                                       // "Response status: 500"
	regexp.MustCompile(`(?i)(?:^|[\s>:])(\d{3}):? (?:Internal Server Error|Bad Gateway|Service Unavailable|Gateway Time-?out|Not Found|Unauthorized|Forbidden|Bad Request|Conflict|Unprocessable (?:Entity|Content)|Method Not Allowed)\b`),
}

// maxStatusScan bounds the text searched for a status: assertion messages state it early.
const maxStatusScan = 4 << 10

// httpStatus returns the HTTP status the failure says the application answered, and where in
// the text it is; 0 and -1 when it names none.
func (ft *failureText) httpStatus() (int, int) {
	if ft.statusKnown {
		return ft.status, ft.statusAt
	}
	ft.statusKnown, ft.statusAt = true, -1
	text := ft.text
	if len(text) > maxStatusScan {
		text = text[:maxStatusScan]
	}
	if !hasThreeDigits(text) {
		return 0, -1
	}
	for _, p := range statusPatterns {
		m := p.FindStringSubmatchIndex(text)
		if m == nil {
			continue
		}
		if s, _ := strconv.Atoi(text[m[2]:m[3]]); isHTTPStatus(s) && allHTTPStatuses(text[m[0]:m[1]]) {
			ft.status, ft.statusAt = s, m[2]
			break
		}
	}
	return ft.status, ft.statusAt
}

// hasThreeDigits reports whether s holds a run of exactly three digits: most failures do not,
// and the patterns are skipped for them.
func hasThreeDigits(s string) bool {
	run := 0
	for i := 0; i <= len(s); i++ {
		if i < len(s) && isDigit(s[i]) {
			run++
			continue
		}
		if run == 3 {
			return true
		}
		run = 0
	}
	return false
}

// isHTTPStatus reports whether n is a status HTTP defines (RFC 9110 and its registry), not
// merely a three-digit number: "expected: <119> but was: <120>" compares counts.
func isHTTPStatus(n int) bool {
	switch {
	case n >= 100 && n <= 103, n >= 200 && n <= 208, n == 226, n >= 300 && n <= 308,
		n >= 400 && n <= 418, n >= 421 && n <= 426, n == 428, n == 429, n == 431, n == 451,
		n >= 500 && n <= 508, n == 510, n == 511:
		return true
	}
	return false
}

// allHTTPStatuses reports whether every three-digit number in a pattern's match (the expected
// status as well as the actual one) is an HTTP status.
func allHTTPStatuses(match string) bool {
	for i := 0; i < len(match); {
		if !isDigit(match[i]) {
			i++
			continue
		}
		j := i
		for j < len(match) && isDigit(match[j]) {
			j++
		}
		if j-i == 3 {
			n, _ := strconv.Atoi(match[i:j])
			if !isHTTPStatus(n) {
				return false
			}
		}
		i = j
	}
	return true
}
