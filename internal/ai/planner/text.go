package planner

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// oneLine makes user text fit for one line: valid UTF-8, every run of spaces and control
// characters (line breaks included) one space, trimmed.
func oneLine(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			space = b.Len() > 0
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

// key is how names are compared: one line, lower case.
func key(s string) string { return strings.ToLower(oneLine(s)) }

// clip cuts s to at most n runes, marking the cut with an ellipsis.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimSpace(string(r[:n-1])) + "…"
}

// mdSpecial are the characters escaped in user text written into Markdown: those that start
// emphasis, code, links, HTML, strikethrough and entities, the escape itself and the table
// cell separator.
const mdSpecial = "\\`*_[]<>|~&"

// inline writes user text into Markdown as inert text on one line: line breaks become
// spaces, so it can never start a heading, a list or a fence, and every character with a
// meaning inline is backslash-escaped, so a pipe cannot split a table cell. n bounds it in
// runes (0: no bound).
func inline(s string, n int) string {
	s = oneLine(s)
	if n > 0 {
		s = clip(s, n)
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for _, r := range s {
		if strings.ContainsRune(mdSpecial, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// asciiPunct are the characters Markdown lets a backslash escape.
const asciiPunct = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"

// unescape undoes Markdown's backslash escapes.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && strings.IndexByte(asciiPunct, s[i+1]) >= 0 {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// words splits text into lower-case words of letters and digits.
func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

// asciiWords are the words of s made of ASCII letters and digits only, for names in code.
func asciiWords(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !(r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r)))
	})
}

func capitalize(w string) string {
	if w == "" {
		return w
	}
	return strings.ToUpper(w[:1]) + w[1:]
}

// plural is n and the noun, in the singular for one.
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// andList joins items as prose: "a", "a and b", "a, b and c".
func andList(items []string) string {
	switch len(items) {
	case 0:
		return ""
	case 1:
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}
