package testcases

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"unicode/utf8"

	"verdict/internal/domain"
)

// The CSV files an import takes are those test-management tools export (TestRail's "Export to
// CSV" among them): a header row naming the columns, then a record per test case.
//
//   - Columns are found by their header, ignoring case and surrounding spaces, in any order:
//     Title (required), Section or Suite (Section wins when both are filled), Tags
//     (comma-separated), Priority, Preconditions, Steps and Expected Result. TestRail's
//     separated steps, "Steps (Step)" and "Steps (Expected Result)", are read when Steps and
//     Expected Result are empty. Other columns are ignored.
//   - Steps are split on line breaks (blank lines dropped); the expected results likewise, and
//     paired with the steps by line: the n-th expected result goes with the n-th step, extra
//     lines of expected results join the last step's, and expected results without any steps
//     make one step of their own.
//   - A record whose title is empty and whose only filled cells are steps or expected results
//     continues the test case above it with more steps (TestRail's layout with a row per
//     step).
//   - Priority: critical, high, medium or low in any case (TestRail's Critical, High, Medium,
//     Low), or TestRail's priority numbers 1 (low) to 4 (critical), also as "4 - Must Test".
//   - The separator is a comma, or a semicolon or tab when the header line holds more of those
//     (spreadsheets in some locales write semicolons). A UTF-8 byte-order mark is skipped.
//
// A record that breaks a rule is skipped with its line (where the record starts in the file)
// and the reason; the others are kept. A record whose cells are all empty is ignored. A file
// that cannot be read as such a CSV file is refused whole (ErrInvalidCSV, or "Too many rows").

// Bounds of an import.
const (
	MaxImportBytes = 10 << 20 // the file's size
	MaxImportRows  = 5000     // records after the header
	maxColumns     = 256      // fields of one record
)

// Row is a test case read from the file: its fields are normalised and valid, and Line is the
// line where its record starts.
type Row struct {
	Line int
	Case domain.TestCase
}

// Skip is a record left out of an import, and why.
type Skip struct {
	Line   int
	Reason string
}

// Parsed is what a CSV file holds: its test cases and the records skipped, each in file order.
type Parsed struct {
	Rows    []Row
	Skipped []Skip
}

func errCSV(format string, args ...any) *domain.Error {
	return domain.BadRequest("Invalid CSV", fmt.Sprintf(format, args...))
}

var errTooManyRows = domain.BadRequest("Too many rows",
	fmt.Sprintf("An import takes at most %d rows after the header; split the file", MaxImportRows))

// column is a field a header can name.
type column int

const (
	colTitle column = iota
	colSection
	colSuite
	colTags
	colPriority
	colPreconditions
	colSteps
	colExpected
	colStepsSeparated
	colExpectedSeparated
	numColumns
)

// headers are the header texts of each column, lower-cased.
var headers = map[string]column{
	"title":                   colTitle,
	"section":                 colSection,
	"suite":                   colSuite,
	"tags":                    colTags,
	"priority":                colPriority,
	"preconditions":           colPreconditions,
	"steps":                   colSteps,
	"expected result":         colExpected,
	"expected results":        colExpected,
	"steps (step)":            colStepsSeparated,
	"steps (expected result)": colExpectedSeparated,
}

// ParseCSV reads a CSV file of test cases. A malformed file (empty, not UTF-8 text, not CSV, an
// unterminated quote, no Title column, a column named twice, a record of more than 256
// fields, only a header) is a 400 Invalid CSV; more than MaxImportRows records a 400 Too many
// rows. The caller bounds the file's size.
func ParseCSV(data []byte) (*Parsed, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errCSV("The file is empty")
	}
	if !utf8.Valid(data) {
		return nil, errCSV("The file is not UTF-8 text; save it as CSV in UTF-8")
	}
	if bytes.IndexByte(data, 0) >= 0 {
		return nil, errCSV("The file is not text (it holds NUL bytes)")
	}
	sep := separator(data)
	if err := checkFieldCounts(data, sep); err != nil {
		return nil, err
	}
	r := csv.NewReader(bytes.NewReader(data))
	r.Comma = sep
	r.FieldsPerRecord = -1

	header, err := r.Read()
	if err != nil {
		return nil, readError(err)
	}
	cols, err := mapHeader(header)
	if err != nil {
		return nil, err
	}

	out := &Parsed{Rows: []Row{}, Skipped: []Skip{}}
	p := parser{out: out, cols: cols, width: len(header), seen: map[caseKey]int{}}
	records := 0
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, readError(err)
		}
		line, _ := r.FieldPos(0)
		if allEmpty(rec) {
			continue
		}
		if records++; records > MaxImportRows {
			return nil, errTooManyRows
		}
		p.record(line, rec)
	}
	p.flush()
	if records == 0 {
		return nil, errCSV("The file has a header but no rows")
	}
	// A skipped test case is reported when its last continuation record has been read.
	sort.SliceStable(out.Skipped, func(i, j int) bool { return out.Skipped[i].Line < out.Skipped[j].Line })
	return out, nil
}

// readError turns a CSV reader's error into the file's 400.
func readError(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return errCSV("The file is not valid CSV: %v", pe)
	}
	if errors.Is(err, io.EOF) {
		return errCSV("The file is empty")
	}
	return errCSV("The file is not valid CSV")
}

// separator is the comma, or the semicolon or tab when the first line holds more of those
// outside quotes.
func separator(data []byte) rune {
	first := data
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		first = data[:i]
	}
	counts := map[rune]int{}
	quoted := false
	for _, b := range first {
		switch {
		case b == '"':
			quoted = !quoted
		case !quoted && (b == ',' || b == ';' || b == '\t'):
			counts[rune(b)]++
		}
	}
	sep := ','
	for _, c := range []rune{';', '\t'} {
		if counts[c] > counts[sep] {
			sep = c
		}
	}
	return sep
}

// checkFieldCounts refuses a file with a record of more than maxColumns fields before the CSV
// reader holds it: a line of ten million commas would otherwise become ten million fields in
// memory. Quotes toggle a quoted span (a doubled quote toggles twice), which is exact for
// valid CSV; for anything else the reader's own error follows.
func checkFieldCounts(data []byte, sep rune) error {
	fields, line, start := 1, 1, 1
	quoted := false
	for _, b := range data {
		switch {
		case b == '"':
			quoted = !quoted
		case b == '\n':
			line++
			if !quoted {
				fields, start = 1, line
			}
		case !quoted && rune(b) == sep:
			if fields++; fields > maxColumns {
				return errCSV("The record on line %d has more than %d fields", start, maxColumns)
			}
		}
	}
	return nil
}

// mapHeader finds the known columns of the header row.
func mapHeader(header []string) ([numColumns]int, error) {
	var cols [numColumns]int
	for i := range cols {
		cols[i] = -1
	}
	for i, h := range header {
		c, ok := headers[strings.Join(strings.Fields(strings.ToLower(h)), " ")]
		if !ok {
			continue
		}
		if cols[c] >= 0 {
			return cols, errCSV("The column %s appears twice in the header", quote(strings.TrimSpace(h)))
		}
		cols[c] = i
	}
	if cols[colTitle] < 0 {
		names := make([]string, 0, 10)
		for i, h := range header {
			if i == 10 {
				names = append(names, "…")
				break
			}
			names = append(names, quote(strings.TrimSpace(h)))
		}
		return cols, errCSV("The file has no Title column (its header: %s)", strings.Join(names, ", "))
	}
	return cols, nil
}

func allEmpty(rec []string) bool {
	for _, f := range rec {
		if strings.TrimSpace(f) != "" {
			return false
		}
	}
	return true
}

// caseKey is what makes a test case unique in a project.
type caseKey struct{ suite, title string }

// parser turns records into rows and skips. A test case stays pending until the next record
// that does not continue it, so continuation records can add its steps before it is checked.
type parser struct {
	out   *Parsed
	cols  [numColumns]int
	width int
	seen  map[caseKey]int // the line of each test case kept so far

	pending     *domain.TestCase
	pendingLine int
	pendingBad  string // the reason a pending record is skipped; "" when it is a test case
	open        bool   // a record (kept or skipped) is pending
}

func (p *parser) cell(rec []string, c column) string {
	if i := p.cols[c]; i >= 0 {
		return rec[i]
	}
	return ""
}

// record reads one record, which starts on line.
func (p *parser) record(line int, rec []string) {
	if len(rec) != p.width {
		p.flush()
		p.skip(line, fmt.Sprintf("the record has %d fields, the header %d", len(rec), p.width))
		return
	}
	if p.continues(rec) {
		if p.open && p.pendingBad == "" {
			p.pending.Steps = append(p.pending.Steps, p.steps(rec)...)
			return
		}
		if p.open {
			p.skip(line, fmt.Sprintf("it continues the record of line %d, which is skipped", p.pendingLine))
			return
		}
		p.skip(line, "title is required")
		return
	}
	p.flush()
	p.open, p.pendingLine, p.pendingBad = true, line, ""
	c := &domain.TestCase{Title: p.cell(rec, colTitle), Preconditions: p.cell(rec, colPreconditions)}
	c.Suite = p.cell(rec, colSection)
	if strings.TrimSpace(c.Suite) == "" {
		c.Suite = p.cell(rec, colSuite)
	}
	if tags := p.cell(rec, colTags); strings.TrimSpace(tags) != "" {
		c.Tags = strings.Split(tags, ",")
	}
	prio, ok := parsePriority(p.cell(rec, colPriority))
	if !ok {
		p.pendingBad = fmt.Sprintf("priority %s is not critical, high, medium or low (or 1 to 4)", quote(p.cell(rec, colPriority)))
		return
	}
	c.Priority = prio
	c.Steps = p.steps(rec)
	p.pending = c
}

// continues reports whether a record only adds steps to the test case above it: an empty
// title, nothing else filled among the known columns, and steps or expected results.
func (p *parser) continues(rec []string) bool {
	steps := false
	for c := column(0); c < numColumns; c++ {
		filled := strings.TrimSpace(p.cell(rec, c)) != ""
		switch c {
		case colSteps, colExpected, colStepsSeparated, colExpectedSeparated:
			steps = steps || filled
		default:
			if filled {
				return false
			}
		}
	}
	return steps
}

// steps pairs a record's steps with its expected results: the text columns, else the
// separated ones.
func (p *parser) steps(rec []string) []domain.TestStep {
	steps, expected := p.cell(rec, colSteps), p.cell(rec, colExpected)
	if strings.TrimSpace(steps) == "" && strings.TrimSpace(expected) == "" {
		steps, expected = p.cell(rec, colStepsSeparated), p.cell(rec, colExpectedSeparated)
	}
	return pairSteps(lines(steps), lines(expected))
}

// pairSteps pairs the n-th expected result with the n-th step; extra expected results join the
// last step's, or make a step of their own when there are no steps.
func pairSteps(actions, expected []string) []domain.TestStep {
	if len(actions) == 0 {
		if len(expected) == 0 {
			return nil
		}
		return []domain.TestStep{{Expected: strings.Join(expected, "\n")}}
	}
	out := make([]domain.TestStep, len(actions))
	for i, a := range actions {
		out[i].Action = a
		if i < len(expected) {
			out[i].Expected = expected[i]
		}
	}
	if len(expected) > len(actions) {
		last := &out[len(out)-1]
		last.Expected = strings.Join(append([]string{last.Expected}, expected[len(actions):]...), "\n")
	}
	return out
}

// lines splits text on line breaks, trimmed, without blank lines.
func lines(text string) []string {
	var out []string
	for _, l := range strings.FieldsFunc(text, func(r rune) bool { return r == '\n' || r == '\r' }) {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// flush ends the pending record: a valid, new test case becomes a row, anything else a skip.
func (p *parser) flush() {
	if !p.open {
		return
	}
	line, c, bad := p.pendingLine, p.pending, p.pendingBad
	p.open, p.pending, p.pendingBad = false, nil, ""
	if bad != "" {
		p.skip(line, bad)
		return
	}
	if err := c.Normalize(); err != nil {
		var de *domain.Error
		if errors.As(err, &de) {
			p.skip(line, de.Message)
		} else {
			p.skip(line, err.Error())
		}
		return
	}
	k := caseKey{c.Suite, c.Title}
	if first, dup := p.seen[k]; dup {
		p.skip(line, fmt.Sprintf("it repeats the test case of line %d (same suite and title)", first))
		return
	}
	p.seen[k] = line
	p.out.Rows = append(p.out.Rows, Row{Line: line, Case: *c})
}

func (p *parser) skip(line int, reason string) {
	p.out.Skipped = append(p.out.Skipped, Skip{Line: line, Reason: reason})
}

// parsePriority reads a priority as test-management tools write it; false when it is none.
func parsePriority(s string) (domain.Priority, bool) {
	s = strings.ToLower(strings.TrimSpace(s))
	switch s {
	case "":
		return "", true
	case "critical", "high", "medium", "low":
		return domain.Priority(s), true
	}
	// TestRail's priority numbers, alone or as "4 - Must Test": 1 is the lowest.
	if d, rest := s[0], strings.TrimSpace(s[1:]); d >= '1' && d <= '4' && (rest == "" || strings.HasPrefix(rest, "-")) {
		return []domain.Priority{domain.PriorityLow, domain.PriorityMedium, domain.PriorityHigh, domain.PriorityCritical}[d-'1'], true
	}
	return "", false
}

// quote quotes a user's text for a message, cut to 40 characters.
func quote(s string) string {
	if utf8.RuneCountInString(s) > 40 {
		s = string([]rune(s)[:40]) + "…"
	}
	return fmt.Sprintf("%q", s)
}
