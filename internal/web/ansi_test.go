package web

import (
	"html"
	"regexp"
	"strings"
	"testing"
)

func TestRenderLog(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"plain\n", "<span class=\"ln\">plain\n</span>"},
		{"a\nb", "<span class=\"ln\">a\n</span><span class=\"ln\">b</span>"},
		{"\n", "<span class=\"ln\">\n</span>"},
		{"<script>x</script>&\"'", `<span class="ln">&lt;script&gt;x&lt;/script&gt;&amp;&#34;&#39;</span>`},
		{"\x1b[31mred\x1b[0m ok", `<span class="ln"><span class="ansi-31">red</span> ok</span>`},
		{"\x1b[1;32mpass\nnext\x1b[m", "<span class=\"ln\"><span class=\"ansi-32 ansi-bold\">pass</span>\n</span><span class=\"ln\"><span class=\"ansi-32 ansi-bold\">next</span></span>"},
		{"\x1b[38;5;196mx\x1b[2K\x1b[1A", `<span class="ln">x</span>`},
		{"\x1b[31m<b>\x1b[39m", `<span class="ln"><span class="ansi-31">&lt;b&gt;</span></span>`},
		{"cut \x1b[3", `<span class="ln">cut </span>`},
	} {
		if got := string(renderLog(c.in)); got != c.want {
			t.Errorf("renderLog(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

var ourTags = regexp.MustCompile(`<span class="(ln|ansi-[a-z0-9]+( ansi-[a-z0-9]+)*)">|</span>`)

// Whatever the log holds, the page gets only the renderer's own tags, and the text is the
// log's (escape sequences aside).
func FuzzRenderLog(f *testing.F) {
	for _, s := range []string{"", "a\nb", "\x1b[31m<img src=x onerror=alert(1)>\x1b[0m", "</span><script>", "\x1b[", "\x1b[1;38;2;1;2;3mx", "&amp;\r\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out := string(renderLog(in))
		rest := ourTags.ReplaceAllString(out, "")
		if strings.ContainsAny(rest, "<>\"'") {
			t.Fatalf("renderLog(%q) = %q: unescaped markup", in, out)
		}
		if !strings.Contains(in, "\x1b") && html.UnescapeString(rest) != strings.ReplaceAll(in, "\x00", "\uFFFD") { // NUL is escaped as U+FFFD
			t.Fatalf("renderLog(%q) lost text: %q", in, rest)
		}
		if strings.Count(out, "<span") != strings.Count(out, "</span>") {
			t.Fatalf("renderLog(%q) = %q: unbalanced", in, out)
		}
	})
}
