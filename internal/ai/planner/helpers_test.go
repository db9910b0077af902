package planner

import (
	"encoding/json"
	"strings"
	"testing"
)

// The helpers below read a plan back the way a reader (or a Markdown renderer) would, with
// code of their own rather than the package's, so the tests check the package against an
// independent reading.

// mdLines are the lines of md, each marked whether it is inside a fenced block (fence lines
// included).
type mdLine struct {
	text    string
	inFence bool
}

func readLines(md string) []mdLine {
	var out []mdLine
	fence := 0
	for _, l := range strings.Split(md, "\n") {
		run := len(l) - len(strings.TrimLeft(l, "`"))
		switch {
		case fence == 0 && run >= 3:
			fence = run
			out = append(out, mdLine{l, true})
		case fence > 0:
			if run >= fence && strings.TrimRight(l, "` ") == "" {
				fence = 0
			}
			out = append(out, mdLine{l, true})
		default:
			out = append(out, mdLine{l, false})
		}
	}
	return out
}

// headings are the titles of the level-two headings outside fences.
func headings(md string) []string {
	var out []string
	for _, l := range readLines(md) {
		if !l.inFence && strings.HasPrefix(l.text, "## ") {
			out = append(out, strings.TrimPrefix(l.text, "## "))
		}
	}
	return out
}

// sectionOf is the text of the section titled title, without its heading.
func sectionOf(t testing.TB, md, title string) string {
	t.Helper()
	var b strings.Builder
	in := false
	for _, l := range readLines(md) {
		if !l.inFence && strings.HasPrefix(l.text, "## ") {
			if in {
				break
			}
			in = l.text == "## "+title
			continue
		}
		if in {
			b.WriteString(l.text + "\n")
		}
	}
	if !in {
		t.Fatalf("no section %q", title)
	}
	return b.String()
}

// fenced are the contents of the fenced blocks of text.
func fenced(text string) []string {
	var out []string
	var cur *strings.Builder
	fence := ""
	for _, l := range strings.Split(text, "\n") {
		switch {
		case fence == "" && strings.HasPrefix(l, "```"):
			fence = l[:len(l)-len(strings.TrimLeft(l, "`"))]
			cur = &strings.Builder{}
		case fence != "" && strings.TrimRight(l, " ") == fence:
			out = append(out, cur.String())
			fence = ""
		case fence != "":
			cur.WriteString(l + "\n")
		}
	}
	return out
}

// treePaths reads the folder tree of the structure section back into file paths.
func treePaths(t testing.TB, md string) []string {
	t.Helper()
	blocks := fenced(sectionOf(t, md, SectionStructure))
	if len(blocks) != 1 {
		t.Fatalf("the structure section has %d fenced blocks, want 1", len(blocks))
	}
	lines := strings.Split(strings.TrimSuffix(blocks[0], "\n"), "\n")
	if lines[0] != "." {
		t.Fatalf("the tree starts with %q", lines[0])
	}
	var dirs, paths []string
	for _, l := range lines[1:] {
		r := []rune(l)
		depth := 0
		for len(r) >= 4 && (string(r[:4]) == "│   " || string(r[:4]) == "    ") {
			r, depth = r[4:], depth+1
		}
		if len(r) < 5 || string(r[:4]) != "├── " && string(r[:4]) != "└── " {
			t.Fatalf("tree line %q", l)
		}
		name := string(r[4:])
		dirs = dirs[:depth]
		if dir, ok := strings.CutSuffix(name, "/"); ok {
			dirs = append(dirs, dir)
		} else {
			paths = append(paths, strings.Join(append(append([]string{}, dirs...), name), "/"))
		}
	}
	return paths
}

// tableRows are the rows of the coverage map's table, header and delimiter left out, each
// split at unescaped pipes (the outer ones dropped).
func tableRows(t testing.TB, md string) (header []string, rows [][]string) {
	t.Helper()
	var table []string
	for _, l := range strings.Split(sectionOf(t, md, SectionCoverage), "\n") {
		if strings.HasPrefix(l, "|") {
			table = append(table, l)
		}
	}
	if len(table) < 2 {
		t.Fatalf("the coverage map has no table")
	}
	split := func(l string) []string {
		var cells []string
		start := 0
		for i := 0; i < len(l); i++ {
			if l[i] == '\\' {
				i++
			} else if l[i] == '|' {
				cells = append(cells, strings.TrimSpace(l[start:i]))
				start = i + 1
			}
		}
		if strings.TrimSpace(l[start:]) != "" {
			t.Errorf("row %q does not end with a pipe", l)
		}
		return cells[1:]
	}
	header = split(table[0])
	for _, l := range table[2:] {
		rows = append(rows, split(l))
	}
	return header, rows
}

// promptTests reads the JSON the master coding prompt carries.
func promptTests(t testing.TB, md string) promptDocument {
	t.Helper()
	blocks := fenced(sectionOf(t, md, SectionPrompt))
	if len(blocks) != 1 {
		t.Fatalf("the prompt section has %d fenced blocks, want 1", len(blocks))
	}
	_, js, ok := strings.Cut(blocks[0], "\nTest cases (JSON):\n")
	if !ok {
		t.Fatalf("the prompt has no JSON")
	}
	var doc promptDocument
	dec := json.NewDecoder(strings.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("the prompt's JSON does not parse: %v\n%s", err, js)
	}
	return doc
}

// jsonRound is what a value looks like after a trip through JSON (invalid UTF-8 replaced).
func jsonRound[T any](t testing.TB, v T) T {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out T
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
