package testcases

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"verdict/internal/domain"
)

func mustParse(t *testing.T, file string) *Parsed {
	t.Helper()
	p, err := ParseCSV([]byte(file))
	if err != nil {
		t.Fatalf("ParseCSV: %v", err)
	}
	return p
}

func rowLines(p *Parsed) []int {
	out := []int{}
	for _, r := range p.Rows {
		out = append(out, r.Line)
	}
	return out
}

func check[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\n got  %#v\n want %#v", what, got, want)
	}
}

// A file as TestRail exports it: a byte-order mark, CRLF line ends, columns Verdict ignores,
// multi-line quoted cells, priorities in TestRail's words and numbers.
func TestParseCSVTestRailExport(t *testing.T) {
	file := "\xef\xbb\xbf" + strings.ReplaceAll(`ID,Title,Section,Suite,Type,Priority,Preconditions,Steps,Expected Result,Tags,References
C1,Log in with a password,Login,Master,Functional,High,"A user ""ann"" exists","1. Open /login
2. Enter the password

3. Submit","The form shows
The dashboard opens","smoke, auth",
C2,  Log out  ,,Master,Functional,4 - Must Test,,Click Log out,,auth,
C3,Reset the password,Login,,Other,2,,,"A mail arrives
It holds a link",,
`, "\n", "\r\n")
	p := mustParse(t, file)
	check(t, "skipped", p.Skipped, []Skip{})
	check(t, "lines", rowLines(p), []int{2, 7, 8})
	check(t, "first", p.Rows[0].Case, domain.TestCase{Title: "Log in with a password", Suite: "Login",
		Tags: []string{"smoke", "auth"}, Priority: domain.PriorityHigh, Preconditions: `A user "ann" exists`,
		Steps: []domain.TestStep{{Action: "1. Open /login", Expected: "The form shows"},
			{Action: "2. Enter the password", Expected: "The dashboard opens"}, {Action: "3. Submit"}}})
	check(t, "second: trimmed, Suite when Section is empty", p.Rows[1].Case, domain.TestCase{Title: "Log out", Suite: "Master",
		Tags: []string{"auth"}, Priority: domain.PriorityCritical, Steps: []domain.TestStep{{Action: "Click Log out"}}})
	check(t, "third: expected results without steps", p.Rows[2].Case, domain.TestCase{Title: "Reset the password", Suite: "Login",
		Tags: []string{}, Priority: domain.PriorityMedium, Steps: []domain.TestStep{{Expected: "A mail arrives\nIt holds a link"}}})
}

func TestParseCSVHeadersAndSeparators(t *testing.T) {
	// Headers in any case and order, with spaces; only Title is needed.
	p := mustParse(t, " tags ;  TITLE ;expected   RESULTS;SUITE\nx;One;;S\n")
	check(t, "semicolons", p.Rows[0].Case, domain.TestCase{Title: "One", Suite: "S", Tags: []string{"x"}, Steps: []domain.TestStep{}})
	p = mustParse(t, "Title\tSteps\tExpected Result\nTabbed\t\"a\nb\"\t\"A\nB\nC\"\n")
	check(t, "tabs; expected results paired by line, extra ones join the last step", p.Rows[0].Case.Steps,
		[]domain.TestStep{{Action: "a", Expected: "A"}, {Action: "b", Expected: "B\nC"}})
	p = mustParse(t, "Title\nOnly a title\n\n,\n")
	check(t, "a file of titles; blank records ignored", len(p.Rows), 1)
	p = mustParse(t, "\"Title\",\"Note, with a comma; and a semicolon; and another;\"\n\"T\",\"n\"\n")
	check(t, "separators inside quotes do not count", p.Rows[0].Case.Title, "T")
}

// TestRail's separated steps: the Steps (Step) and Steps (Expected Result) columns, with a row
// per step after the first.
func TestParseCSVSeparatedSteps(t *testing.T) {
	p := mustParse(t, `Title,Priority,Steps,Steps (Step),Steps (Expected Result)
Checkout,low,,Add to cart,In the cart
,,,Pay,Paid
,,,"Open the
receipt",
Text template,,Do it,Ignored,Ignored
,,,More,Less
Bad priority,urgent,,x,
,,,continued,
`)
	check(t, "lines", rowLines(p), []int{2, 6})
	check(t, "separated steps over three rows", p.Rows[0].Case.Steps, []domain.TestStep{
		{Action: "Add to cart", Expected: "In the cart"}, {Action: "Pay", Expected: "Paid"}, {Action: "Open the"}, {Action: "receipt"}})
	check(t, "text steps win, and rows continue them", p.Rows[1].Case.Steps, []domain.TestStep{{Action: "Do it"}, {Action: "More", Expected: "Less"}})
	check(t, "skipped", p.Skipped, []Skip{
		{Line: 8, Reason: `priority "urgent" is not critical, high, medium or low (or 1 to 4)`},
		{Line: 9, Reason: "it continues the record of line 8, which is skipped"},
	})
	p = mustParse(t, "Title,Steps\n,orphan step\nReal,\n")
	check(t, "a continuation without a test case above", p.Skipped, []Skip{{Line: 2, Reason: "title is required"}})
}

func TestParseCSVSkipsBadRecords(t *testing.T) {
	long := strings.Repeat("é", domain.MaxTestCaseTitle+1)
	file := fmt.Sprintf(`Title,Section,Tags,Priority,Steps
Good,S,,,
,S,a,,
%s,S,,,
"Two
lines",S,,,
Short,S
Good,S,,,
Good,s,,,
Tagged,S,"a,b,%s",,
Priority zero,S,,0,
Bidi`+"\u202e"+`,S,,,
Many steps,S,,,"%s"
`, long, strings.Repeat("t", 51), strings.Repeat("x\n", domain.MaxTestCaseSteps+1))
	p := mustParse(t, file)
	check(t, "kept", rowLines(p), []int{2, 9})
	check(t, "skipped", p.Skipped, []Skip{
		{Line: 3, Reason: "title is required"},
		{Line: 4, Reason: "title must be at most 300 characters"},
		{Line: 5, Reason: "title must be one line of visible characters, without control, invisible or text-direction characters"},
		{Line: 7, Reason: "the record has 2 fields, the header 5"},
		{Line: 8, Reason: "it repeats the test case of line 2 (same suite and title)"},
		{Line: 10, Reason: `tag "` + strings.Repeat("t", 40) + `…" must be at most 50 characters`},
		{Line: 11, Reason: `priority "0" is not critical, high, medium or low (or 1 to 4)`},
		{Line: 12, Reason: "title must be one line of visible characters, without control, invisible or text-direction characters"},
		{Line: 13, Reason: "at most 200 steps"},
	})
}

func TestParseCSVPriorities(t *testing.T) {
	for in, want := range map[string]domain.Priority{
		"": "", "Critical": domain.PriorityCritical, " HIGH ": domain.PriorityHigh, "medium": domain.PriorityMedium,
		"Low": domain.PriorityLow, "1": domain.PriorityLow, "2 - Test If Time": domain.PriorityMedium,
		"3": domain.PriorityHigh, "4 - Must Test": domain.PriorityCritical,
	} {
		if got, ok := parsePriority(in); !ok || got != want {
			t.Errorf("parsePriority(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	for _, in := range []string{"5", "0", "urgent", "P1", "12", "highest", "1x"} {
		if got, ok := parsePriority(in); ok {
			t.Errorf("parsePriority(%q) = %q, want refused", in, got)
		}
	}
}

// Malformed files are refused whole, with the reason.
func TestParseCSVRefusesMalformedFiles(t *testing.T) {
	many := "Title\n" + strings.Repeat("t\n", MaxImportRows+1)
	for _, c := range []struct{ name, file, code, message string }{
		{"empty", "", "Invalid CSV", "The file is empty"},
		{"blank", " \r\n\n", "Invalid CSV", "The file is empty"},
		{"only a byte-order mark", "\xef\xbb\xbf", "Invalid CSV", "The file is empty"},
		{"only a header", "Title,Steps\n", "Invalid CSV", "The file has a header but no rows"},
		{"only a header and blank records", "Title,Steps\n,\n\n", "Invalid CSV", "The file has a header but no rows"},
		{"no Title column", "Name,Steps\nx,y\n", "Invalid CSV", `The file has no Title column (its header: "Name", "Steps")`},
		{"JSON", `{"title": "x"}`, "Invalid CSV", `The file is not valid CSV: parse error on line 1, column 2: bare " in non-quoted-field`},
		{"JSON without quotes", `[1, 2]`, "Invalid CSV", `The file has no Title column (its header: "[1", "2]")`},
		{"a column twice", "Title,Tags,title\nx,y,z\n", "Invalid CSV", `The column "title" appears twice in the header`},
		{"unterminated quote", "Title,Steps\nx,\"open\n", "Invalid CSV", `The file is not valid CSV: parse error on line 2, column 9: extraneous or missing " in quoted-field`},
		{"bare quote", "Title\nsay \"hi\"\n", "Invalid CSV", `The file is not valid CSV: parse error on line 2, column 5: bare " in non-quoted-field`},
		{"Latin-1", "Title\nCaf\xe9\n", "Invalid CSV", "The file is not UTF-8 text; save it as CSV in UTF-8"},
		{"binary", "Title\nx\x00y\n", "Invalid CSV", "The file is not text (it holds NUL bytes)"},
		{"too many fields", "Title\n" + strings.Repeat(",", maxColumns) + "\n", "Invalid CSV", "The record on line 2 has more than 256 fields"},
		{"too many rows", many, "Too many rows", "An import takes at most 5000 rows after the header; split the file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := ParseCSV([]byte(c.file))
			var de *domain.Error
			if !errors.As(err, &de) || de.Kind != domain.KindInvalid || de.Code != c.code || de.Message != c.message {
				t.Fatalf("got %v, %v; want 400 %s: %s", p, err, c.code, c.message)
			}
		})
	}
	if p := mustParse(t, "Title\n"+strings.Repeat("t\n", MaxImportRows)); len(p.Rows) != 1 || len(p.Skipped) != MaxImportRows-1 {
		t.Fatalf("5000 rows: %d kept, %d skipped", len(p.Rows), len(p.Skipped))
	}
}

// FuzzParseCSV: whatever the file, ParseCSV does not panic and answers either a 400 or rows and
// skips that stay within the bounds, each on a line of the file where a record starts (after
// the header, once, in order), every row a valid test case.
func FuzzParseCSV(f *testing.F) {
	for _, seed := range []string{
		"Title,Section,Tags,Priority,Preconditions,Steps,Expected Result\nA,S,\"a,b\",High,p,\"1\n2\",\"x\ny\"\n,,,,,3,z\n",
		"title;suite\nx;y\n",
		"Title,Steps (Step),Steps (Expected Result)\nT,a,b\n,c,d\n,,\n",
		"\xef\xbb\xbfTitle\r\nA\r\nA\r\n",
		"Title,Priority\nx,9\n\"q\"\"\",1 - low\n",
		"Title\n\"unterminated\n",
		"Title\tTags\n\"a\tb\"\tc,d\n",
		"",
		"Title,x\n" + strings.Repeat(",", 300),
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParseCSV(data)
		if err != nil {
			var de *domain.Error
			if p != nil || !errors.As(err, &de) || de.Kind != domain.KindInvalid || de.Message == "" {
				t.Fatalf("ParseCSV(%q) = %v, %v; want nil and a 400", data, p, err)
			}
			return
		}
		if p == nil || p.Rows == nil || p.Skipped == nil {
			t.Fatalf("ParseCSV(%q) = %#v with no error", data, p)
		}
		if n := len(p.Rows) + len(p.Skipped); n == 0 || n > MaxImportRows {
			t.Fatalf("ParseCSV(%q): %d rows and skips", data, n)
		}
		lines := bytes.Count(data, []byte("\n")) + 1
		used := map[int]bool{}
		last := 1
		for _, r := range p.Rows {
			if r.Line <= last || r.Line > lines {
				t.Fatalf("ParseCSV(%q): row line %d after %d, file of %d lines", data, r.Line, last, lines)
			}
			last, used[r.Line] = r.Line, true
			c := r.Case
			if err := c.Normalize(); err != nil || !reflect.DeepEqual(c, r.Case) {
				t.Fatalf("ParseCSV(%q): row of line %d is not a normalised test case: %+v (%v)", data, r.Line, r.Case, err)
			}
		}
		last = 1
		for _, s := range p.Skipped {
			if s.Line < last || s.Line < 2 || s.Line > lines || used[s.Line] || s.Reason == "" || len(s.Reason) > 300 {
				t.Fatalf("ParseCSV(%q): skip %+v after line %d, file of %d lines", data, s, last, lines)
			}
			last, used[s.Line] = s.Line, true
		}
	})
}
