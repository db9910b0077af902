package analyzer

import "strings"

// Spans of a line that vary between runs and are replaced whole: URLs (their queries),
// temp paths, home folders and e-mail addresses.

// urlSchemeLen returns the length of "scheme://" at the start of s, or 0.
func urlSchemeLen(s string) int {
	i := 0
	for i < len(s) && i < 12 && (isLetter(s[i]) || i > 0 && (s[i] == '+' || s[i] == '.' || s[i] == '-')) {
		i++
	}
	if i > 0 && strings.HasPrefix(s[i:], "://") {
		return i + 3
	}
	return 0
}

// isURLEnd reports whether c ends a URL in running text.
func isURLEnd(c byte) bool {
	switch c {
	case ' ', '\t', '"', '\'', '`', '<', '>', '(', ')', '[', ']', '{', '}', ',', ';', '|':
		return true
	}
	return c < 0x20 || c == 0x7f
}

// appendURL appends the URL at the start of s (scheme length n) with its query dropped and its
// port and path normalised like any other text; it returns the bytes of s used. A fragment is
// kept: "#" also stands for a number, and a second pass must not drop it.
func appendURL(dst []byte, s string, n int) ([]byte, int) {
	end := n
	for end < len(s) && !isURLEnd(s[end]) {
		end++
	}
	keep := end
	if q := strings.IndexByte(s[n:end], '?'); q >= 0 {
		keep = n + q
	}
	dst = append(dst, s[:n]...)
	for i := n; i < keep; {
		if isWordByte(s[i]) {
			j := i
			for j < keep && isWordByte(s[j]) {
				j++
			}
			dst = appendWord(dst, s[i:j])
			i = j
			continue
		}
		dst = append(dst, s[i])
		i++
	}
	return dst, end
}

// tempPrefixes start the temp folders of Linux and macOS runners.
var tempPrefixes = []string{"/tmp/", "/var/tmp/", "/private/tmp/", "/var/folders/", "/private/var/folders/", "/dev/shm/"}

// isTempPath reports whether s starts with a path inside a temp folder.
func isTempPath(s string) bool {
	for _, p := range tempPrefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	if len(s) < 3 || !isLetter(s[0]) || s[1] != ':' || s[2] != '\\' && s[2] != '/' {
		return false
	}
	p := strings.ReplaceAll(asciiLower(s[:pathEnd(s)]), "/", `\`)
	return strings.Contains(p, `\appdata\local\temp\`) || strings.Contains(p, `\windows\temp\`)
}

// pathEnd returns where the path at the start of s ends in running text: at space, quotes,
// brackets, punctuation, or a colon after the drive (the one before a line number).
func pathEnd(s string) int {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == ':' && i != 1, isURLEnd(c):
			return i
		}
	}
	return len(s)
}

// homePrefixLen returns the length of a home folder prefix ("/home/u/", "/Users/u/",
// "C:\Users\u\") at the start of s, or 0: the user's name differs between machines.
func homePrefixLen(s string) int {
	var rest string
	switch {
	case strings.HasPrefix(s, "/home/"), strings.HasPrefix(s, "/Users/"):
		rest = s[strings.IndexByte(s[1:], '/')+2:]
	case len(s) > 9 && isLetter(s[0]) && s[1] == ':' && (s[2] == '\\' || s[2] == '/') &&
		strings.EqualFold(s[3:8], "users") && (s[8] == '\\' || s[8] == '/'):
		rest = s[9:]
	default:
		return 0
	}
	for i := 0; i < len(rest); i++ {
		switch c := rest[i]; {
		case c == '/' || c == '\\':
			if i == 0 {
				return 0
			}
			return len(s) - len(rest) + i + 1
		case c == ':' || isURLEnd(c):
			return 0
		}
	}
	return 0
}

// emailLen returns the length of the e-mail address at the start of s, or 0.
func emailLen(s string) int {
	at := 0
	for at < len(s) && (isWordByte(s[at]) || strings.IndexByte(".%+-", s[at]) >= 0) {
		at++
	}
	if at == 0 || at >= len(s) || s[at] != '@' {
		return 0
	}
	end := at + 1
	for end < len(s) && (isWordByte(s[end]) || s[end] == '.' || s[end] == '-') {
		end++
	}
	if end < len(s) && s[end] == '#' {
		return 0 // a digit-bearing domain seen a second time: keep both passes alike
	}
	domain := strings.TrimRight(s[at+1:end], ".-")
	dot := strings.LastIndexByte(domain, '.')
	if dot <= 0 {
		return 0
	}
	tld := domain[dot+1:]
	if len(tld) < 2 {
		return 0
	}
	for i := 0; i < len(tld); i++ {
		if !isLetter(tld[i]) {
			return 0
		}
	}
	return at + 1 + len(domain)
}
