package web

import (
	"html/template"
	"strconv"
	"strings"
)

// renderLog renders a run's log for its page: each line a <span class="ln"> (ending with its
// newline, so the search box can hide whole lines), ANSI SGR colour codes as spans with CSS
// classes (ansi-31, ansi-bold, …; see verdict.css), every character of the log escaped. Other
// escape sequences (cursor moves, 256-colour and true-colour codes, which need inline styles)
// are dropped. static/live.js renders live chunks the same way.
func renderLog(log string) template.HTML {
	var b strings.Builder
	b.Grow(len(log) + len(log)/8)
	var st sgr
	lineOpen, spanOpen := false, false
	text := func(s string) {
		if s == "" {
			return
		}
		if !lineOpen {
			b.WriteString(`<span class="ln">`)
			lineOpen = true
		}
		if !spanOpen && st.classes() != "" {
			b.WriteString(`<span class="` + st.classes() + `">`)
			spanOpen = true
		}
		b.WriteString(template.HTMLEscapeString(s))
	}
	closeSpan := func() {
		if spanOpen {
			b.WriteString(`</span>`)
			spanOpen = false
		}
	}
	for len(log) > 0 {
		i := strings.IndexAny(log, "\x1b\n")
		if i < 0 {
			text(log)
			break
		}
		text(log[:i])
		if log[i] == '\n' {
			if !lineOpen {
				b.WriteString(`<span class="ln">`)
			}
			closeSpan()
			b.WriteString("\n</span>")
			lineOpen = false
			log = log[i+1:]
			continue
		}
		// An escape sequence: CSI (ESC [ parameters final) or a lone ESC, dropped.
		rest := log[i+1:]
		if !strings.HasPrefix(rest, "[") {
			log = rest
			continue
		}
		j := 1
		for j < len(rest) && (rest[j] >= '0' && rest[j] <= '9' || rest[j] == ';') {
			j++
		}
		if j == len(rest) {
			log = ""
			break
		}
		if rest[j] == 'm' {
			closeSpan()
			st.apply(rest[1:j])
		}
		if rest[j] >= 0x40 && rest[j] <= 0x7e {
			j++
		}
		log = rest[j:]
	}
	closeSpan()
	if lineOpen {
		b.WriteString("</span>")
	}
	return template.HTML(b.String())
}

// sgr is the display state set by SGR codes.
type sgr struct {
	fg, bg                       int // 30–37, 90–97; 40–47, 100–107; 0 for default
	bold, dim, italic, underline bool
}

func (s *sgr) apply(params string) {
	codes := strings.Split(params, ";")
	for i := 0; i < len(codes); i++ {
		n, err := strconv.Atoi(codes[i])
		if codes[i] == "" {
			n, err = 0, nil
		}
		if err != nil {
			continue
		}
		switch {
		case n == 0:
			*s = sgr{}
		case n == 1:
			s.bold = true
		case n == 2:
			s.dim = true
		case n == 3:
			s.italic = true
		case n == 4:
			s.underline = true
		case n == 22:
			s.bold, s.dim = false, false
		case n == 23:
			s.italic = false
		case n == 24:
			s.underline = false
		case n >= 30 && n <= 37, n >= 90 && n <= 97:
			s.fg = n
		case n == 39:
			s.fg = 0
		case n >= 40 && n <= 47, n >= 100 && n <= 107:
			s.bg = n
		case n == 49:
			s.bg = 0
		case n == 38, n == 48: // 38;5;n or 38;2;r;g;b: skipped
			if i+1 < len(codes) && codes[i+1] == "5" {
				i += 2
			} else if i+1 < len(codes) && codes[i+1] == "2" {
				i += 4
			}
		}
	}
}

func (s *sgr) classes() string {
	var c []string
	if s.fg != 0 {
		c = append(c, "ansi-"+strconv.Itoa(s.fg))
	}
	if s.bg != 0 {
		c = append(c, "ansi-"+strconv.Itoa(s.bg))
	}
	for _, f := range []struct {
		on   bool
		name string
	}{{s.bold, "ansi-bold"}, {s.dim, "ansi-dim"}, {s.italic, "ansi-italic"}, {s.underline, "ansi-underline"}} {
		if f.on {
			c = append(c, f.name)
		}
	}
	return strings.Join(c, " ")
}
