package planner

import (
	"fmt"
	"strconv"
	"strings"
)

// maxListed bounds the test IDs an error of Validate names.
const maxListed = 10

// Validate checks that markdown is a complete plan of cases: the six Sections as level-two
// headings, in order and outside code blocks; a table in the coverage map with a row naming
// every case by its ID in a cell of its own; and a fenced block, closed, in the master coding
// prompt. It is how a model's document is checked before it is kept; Generate's documents
// always pass. Its error matches ErrInvalidPlan and says what is wrong.
func Validate(markdown string, cases []Case) error {
	d := outline(markdown)
	problems := d.sectionProblems()
	if start := d.found[3]; start >= 0 {
		problems = append(problems, d.coverageProblems(start, cases)...)
	}
	if start := d.found[5]; start >= 0 && !d.closedBlockIn(start) {
		problems = append(problems, "the master coding prompt has no closed fenced block")
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalidPlan, strings.Join(problems, "; "))
	}
	return nil
}

// block is a fenced code block's lines; end is -1 while it is open.
type block struct{ start, end int }

// document is a plan's Markdown as Validate reads it: its lines, where each section's heading
// is (-1 if none), every level-two heading and every fenced block.
type document struct {
	lines    []string
	found    []int
	headings []int
	blocks   []block
}

func outline(markdown string) *document {
	d := &document{
		lines: strings.Split(strings.NewReplacer("\r\n", "\n", "\r", "\n").Replace(markdown), "\n"),
		found: make([]int, len(Sections)),
	}
	for i := range d.found {
		d.found[i] = -1
	}
	var fence string
	for i, line := range d.lines {
		if fence != "" {
			if closesFence(line, fence) {
				fence = ""
				d.blocks[len(d.blocks)-1].end = i
			}
			continue
		}
		if f := opensFence(line); f != "" {
			fence = f
			d.blocks = append(d.blocks, block{i, -1})
			continue
		}
		title, ok := levelTwo(line)
		if !ok {
			continue
		}
		d.headings = append(d.headings, i)
		for s, name := range Sections {
			if d.found[s] < 0 && title == strings.ToLower(name) {
				d.found[s] = i
			}
		}
	}
	return d
}

// sectionProblems names the sections missing or out of order.
func (d *document) sectionProblems() []string {
	var problems []string
	last := -1
	for s, line := range d.found {
		switch {
		case line < 0:
			problems = append(problems, "no section "+strconv.Quote(Sections[s]))
		case line < last:
			problems = append(problems, "section "+strconv.Quote(Sections[s])+" is out of order")
		default:
			last = line
		}
	}
	return problems
}

// end is where the section starting at line ends: the next level-two heading.
func (d *document) end(line int) int {
	for _, h := range d.headings {
		if h > line {
			return h
		}
	}
	return len(d.lines)
}

func (d *document) inBlock(i int) bool {
	for _, b := range d.blocks {
		if i >= b.start && (b.end < 0 || i <= b.end) {
			return true
		}
	}
	return false
}

// coverageProblems names the cases the coverage map (the section at start) has no row for.
func (d *document) coverageProblems(start int, cases []Case) []string {
	cells := map[string]bool{}
	for i := start + 1; i < d.end(start); i++ {
		if d.inBlock(i) {
			continue
		}
		row := splitRow(d.lines[i])
		if len(row) < 2 {
			continue
		}
		for _, c := range row {
			cells[c] = true
		}
	}
	var missing []string
	for _, c := range cases {
		if id := oneLine(c.ID); !cells[id] {
			missing = append(missing, strconv.Quote(clip(id, 64)))
		}
	}
	if len(missing) == 0 {
		return nil
	}
	more := ""
	if len(missing) > maxListed {
		more = fmt.Sprintf(" and %d more", len(missing)-maxListed)
		missing = missing[:maxListed]
	}
	return []string{"the coverage map has no row for " + strings.Join(missing, ", ") + more}
}

// closedBlockIn reports whether the section at start holds a closed fenced block.
func (d *document) closedBlockIn(start int) bool {
	for _, b := range d.blocks {
		if b.start > start && b.start < d.end(start) && b.end > b.start {
			return true
		}
	}
	return false
}

// indent strips at most three leading spaces, and reports whether no more were there: a
// line indented four spaces is code, not a heading or a fence.
func indent(line string) (string, bool) {
	n := len(line) - len(strings.TrimLeft(line, " "))
	if n > 3 {
		return line, false
	}
	return line[n:], true
}

// opensFence returns the fence a line opens (its run of ` or ~), or "".
func opensFence(line string) string {
	s, ok := indent(line)
	if !ok || len(s) < 3 || s[0] != '`' && s[0] != '~' {
		return ""
	}
	n := len(s) - len(strings.TrimLeft(s, s[:1]))
	if n < 3 || s[0] == '`' && strings.Contains(s[n:], "`") {
		return ""
	}
	return s[:n]
}

// closesFence reports whether line closes fence: at least as long a run of its character,
// and nothing else.
func closesFence(line, fence string) bool {
	s, ok := indent(line)
	if !ok {
		return false
	}
	s = strings.TrimRight(s, " \t")
	return len(s) >= len(fence) && strings.Trim(s, fence[:1]) == ""
}

// levelTwo returns the lower-case title of a level-two ATX heading, without a number before
// it ("3. ", "3) ") or emphasis around it.
func levelTwo(line string) (string, bool) {
	s, ok := indent(line)
	if !ok || !strings.HasPrefix(s, "##") || len(s) > 2 && s[2] != ' ' && s[2] != '\t' {
		return "", false
	}
	s = strings.TrimSpace(s[2:])
	if t := strings.TrimRight(s, "#"); t != s && (t == "" || strings.HasSuffix(t, " ")) {
		s = strings.TrimSpace(t)
	}
	if i := strings.IndexAny(s, ".)"); i > 0 && strings.Trim(s[:i], "0123456789") == "" {
		s = strings.TrimSpace(s[i+1:])
	}
	s = strings.Trim(s, "*_ :")
	return strings.ToLower(oneLine(s)), true
}

// splitRow splits a table row into its cells, unescaped and trimmed, with a code span, bold
// or italics around a whole cell removed. A line without an unescaped pipe is no row.
func splitRow(line string) []string {
	var cells []string
	var cell strings.Builder
	pipes := 0
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line):
			cell.WriteByte(line[i])
			cell.WriteByte(line[i+1])
			i++
		case line[i] == '|':
			cells = append(cells, cell.String())
			cell.Reset()
			pipes++
		default:
			cell.WriteByte(line[i])
		}
	}
	if pipes == 0 {
		return nil
	}
	cells = append(cells, cell.String())
	out := cells[:0]
	for _, c := range cells {
		c = strings.TrimSpace(c)
		for _, mark := range []string{"`", "**", "__", "*", "_"} {
			if len(c) > 2*len(mark) && strings.HasPrefix(c, mark) && strings.HasSuffix(c, mark) {
				c = strings.TrimSpace(c[len(mark) : len(c)-len(mark)])
			}
		}
		out = append(out, oneLine(unescape(c)))
	}
	return out
}
