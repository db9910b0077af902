package web

import "strings"

// A plan's Markdown (the built-in planner's, or a model's) shown on a page: a minimal reading
// of the block structure (headings, paragraphs, lists, fenced code, tables) and of two inline
// forms (`code`, **bold**) into values the template writes, every character escaped by
// html/template. No HTML of the document reaches the page as HTML, and no link is made:
// anything not understood is shown as the text it is.

type mdBlock struct {
	Kind  string // "h" (Level), "p", "ul", "ol", "code", "table"
	Level int
	Spans []mdSpan   // h, p
	Items [][]mdSpan // ul, ol
	Text  string     // code
	Head  [][]mdSpan // table
	Rows  [][][]mdSpan
}

type mdSpan struct {
	Text       string
	Code, Bold bool
}

// markdownBlocks reads md into blocks.
func markdownBlocks(md string) []mdBlock {
	lines := strings.Split(strings.ReplaceAll(md, "\r\n", "\n"), "\n")
	var out []mdBlock
	var para []string
	flush := func() {
		if len(para) > 0 {
			out = append(out, mdBlock{Kind: "p", Spans: inlineSpans(strings.Join(para, " "))})
			para = nil
		}
	}
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		trim := strings.TrimSpace(line)
		switch {
		case trim == "":
			flush()
		case strings.HasPrefix(trim, "```"):
			flush()
			fence := trim[:len(trim)-len(strings.TrimLeft(trim, "`"))]
			var code []string
			for i++; i < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[i]), fence); i++ {
				code = append(code, lines[i])
			}
			out = append(out, mdBlock{Kind: "code", Text: strings.Join(code, "\n")})
		case strings.HasPrefix(trim, "#"):
			level := len(trim) - len(strings.TrimLeft(trim, "#"))
			if level > 6 || (len(trim) > level && trim[level] != ' ') {
				para = append(para, trim)
				continue
			}
			flush()
			// The page's own h1 is the plan's title: the document's headings start at h2.
			out = append(out, mdBlock{Kind: "h", Level: min(level+1, 6), Spans: inlineSpans(strings.TrimSpace(trim[level:]))})
		case strings.HasPrefix(trim, "|"):
			flush()
			b := mdBlock{Kind: "table"}
			for ; i < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i]), "|"); i++ {
				cells := tableCells(strings.TrimSpace(lines[i]))
				if isDivider(cells) {
					continue
				}
				if b.Head == nil {
					b.Head = cells
				} else {
					b.Rows = append(b.Rows, cells)
				}
			}
			i--
			out = append(out, b)
		case listItem(trim, false) != "" || listItem(trim, true) != "":
			flush()
			ordered := listItem(trim, true) != ""
			b := mdBlock{Kind: "ul"}
			if ordered {
				b.Kind = "ol"
			}
			for ; i < len(lines); i++ {
				t := strings.TrimSpace(lines[i])
				item := listItem(t, ordered)
				if item == "" {
					if t != "" && len(b.Items) > 0 && strings.HasPrefix(lines[i], " ") {
						// A continuation line of the item above.
						last := len(b.Items) - 1
						b.Items[last] = append(b.Items[last], mdSpan{Text: " "})
						b.Items[last] = append(b.Items[last], inlineSpans(t)...)
						continue
					}
					break
				}
				b.Items = append(b.Items, inlineSpans(item))
			}
			i--
			out = append(out, b)
		default:
			para = append(para, trim)
		}
	}
	flush()
	return out
}

// listItem is the text of a list item line ("- x", "* x"; ordered: "1. x"), "" for another line.
func listItem(line string, ordered bool) string {
	if !ordered {
		if strings.HasPrefix(line, "- ") || strings.HasPrefix(line, "* ") {
			return strings.TrimSpace(line[2:])
		}
		return ""
	}
	n := 0
	for n < len(line) && line[n] >= '0' && line[n] <= '9' {
		n++
	}
	if n == 0 || n > 3 || !strings.HasPrefix(line[n:], ". ") {
		return ""
	}
	return strings.TrimSpace(line[n+2:])
}

func tableCells(line string) [][]mdSpan {
	line = strings.TrimSuffix(strings.TrimPrefix(line, "|"), "|")
	var cells [][]mdSpan
	for _, c := range strings.Split(line, "|") {
		cells = append(cells, inlineSpans(strings.TrimSpace(c)))
	}
	return cells
}

func isDivider(cells [][]mdSpan) bool {
	for _, c := range cells {
		for _, s := range c {
			if strings.Trim(s.Text, "-: ") != "" || s.Code || s.Bold {
				return false
			}
		}
	}
	return true
}

// inlineSpans splits text on `code` and **bold**; an unclosed marker is text.
func inlineSpans(text string) []mdSpan {
	var out []mdSpan
	add := func(s mdSpan) {
		if s.Text != "" {
			out = append(out, s)
		}
	}
	for text != "" {
		i := strings.IndexAny(text, "`*")
		if i < 0 {
			add(mdSpan{Text: text})
			break
		}
		if text[i] == '`' {
			ticks := len(text[i:]) - len(strings.TrimLeft(text[i:], "`"))
			fence := text[i : i+ticks]
			if end := strings.Index(text[i+ticks:], fence); end >= 0 {
				add(mdSpan{Text: text[:i]})
				add(mdSpan{Text: strings.TrimSpace(text[i+ticks : i+ticks+end]), Code: true})
				text = text[i+ticks+end+ticks:]
				continue
			}
			add(mdSpan{Text: text[:i+ticks]})
			text = text[i+ticks:]
			continue
		}
		if strings.HasPrefix(text[i:], "**") {
			if end := strings.Index(text[i+2:], "**"); end > 0 {
				add(mdSpan{Text: text[:i]})
				add(mdSpan{Text: text[i+2 : i+2+end], Bold: true})
				text = text[i+2+end+2:]
				continue
			}
		}
		add(mdSpan{Text: text[:i+1]})
		text = text[i+1:]
	}
	return out
}
