package analyzer

import (
	"strings"
	"unicode/utf8"
)

// Bounds on the text one failure contributes. Reports can carry megabytes of message; the
// part that identifies a failure is at its start.
const (
	MaxMessageBytes = 8 << 10 // of a failure's message read
	MaxStackBytes   = 8 << 10 // of a failure's stack read

	maxNormalizedBytes = 4 << 10 // of normalised text kept
	maxNormalizedLine  = 512     // of one normalised line kept
	maxFrames          = 10      // stack frames kept: deeper ones are the runner's, not the failure's
	maxQuotedBytes     = 100     // a longer quoted value is page text or a body, not the failure's shape
)

// Normalize turns a failure's message and stack into the text its signature is made of: the
// same failure gives the same text in every run. Numbers, hex ids, UUIDs, addresses, ports,
// line:column positions, timestamps and durations become "#"; temp paths "<tmp>"; home folders
// "~"; e-mail addresses "<email>"; URL queries are dropped and long quoted values become
// "<text>". Exception types, assertion wording, locators and file names are kept. Repeated
// lines (retry logs) are kept once and only the first frames of a stack. The result is at most
// 4 KiB, and Normalize(Normalize(m, s), "") == Normalize(m, s).
func Normalize(message, stack string) string {
	n := normalizer{seen: map[string]bool{}}
	n.add(clip(message, MaxMessageBytes))
	n.add(clip(stack, MaxStackBytes))
	return n.out.String()
}

// normalizer collects normalised lines, each once, within the bounds.
type normalizer struct {
	out    strings.Builder
	line   []byte
	seen   map[string]bool
	frames int
	full   bool
}

func (n *normalizer) add(text string) {
	for text != "" && !n.full {
		var raw string
		raw, text, _ = strings.Cut(text, "\n")
		n.line = normalizeLine(n.line[:0], raw)
		if len(n.line) == 0 || n.seen[string(n.line)] {
			continue
		}
		frame := isFrame(string(n.line))
		if frame && n.frames >= maxFrames {
			continue
		}
		if n.out.Len()+len(n.line)+1 > maxNormalizedBytes {
			n.full = true // stop, not skip: a later shorter line would make the text depend on the cut
			return
		}
		if n.out.Len() > 0 {
			n.out.WriteByte('\n')
		}
		n.out.Write(n.line)
		n.seen[string(n.line)] = true
		if frame {
			n.frames++
		}
	}
}

// isFrame reports whether a normalised line is a stack frame (JavaScript, Java, Python).
func isFrame(line string) bool {
	return strings.HasPrefix(line, "at ") || strings.HasPrefix(line, `File "`)
}

// clip cuts s to at most max bytes on a character boundary and makes it valid UTF-8.
func clip(s string, max int) string {
	if len(s) > max {
		i := max
		for i > 0 && !utf8.RuneStart(s[i]) {
			i--
		}
		s = s[:i]
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// normalizeLine appends the normalised form of one raw line to dst. The passes run in an
// order that makes the result a fixed point: tokens first (which only ever turn digits into
// "#"), then the line cut, then steps that only shrink the line.
func normalizeLine(dst []byte, raw string) []byte {
	dst = normalizeTokens(dst, raw)
	dst = trimSpace(dst)
	if len(dst) > maxNormalizedLine {
		i := maxNormalizedLine
		for i > 0 && !utf8.RuneStart(dst[i]) {
			i--
		}
		dst = trimSpace(dst[:i])
	}
	dst = dropDurationUnits(dst)
	dst = collapseNumbers(dst)
	dst = shortenQuoted(dst)
	return dst
}

// normalizeTokens copies raw to dst with control characters and ANSI colours removed, runs of
// space made one, and URLs, temp paths, home folders, e-mail addresses and words with digits
// replaced.
func normalizeTokens(dst []byte, raw string) []byte {
	for i := 0; i < len(raw); {
		c := raw[i]
		switch {
		case c == 0x1b:
			i = skipEscape(raw, i)
			continue
		case c < 0x20 || c == 0x7f:
			c = ' '
		}
		if c == ' ' {
			if len(dst) > 0 && dst[len(dst)-1] != ' ' {
				dst = append(dst, ' ')
			}
			i++
			continue
		}
		// Boundaries are read from the output, which a second pass sees unchanged.
		if len(dst) == 0 || isBoundary(dst[len(dst)-1]) {
			if out, used := special(dst, raw[i:]); used > 0 {
				dst, i = out, i+used
				continue
			}
		}
		if isWordByte(c) {
			j := i
			for j < len(raw) && isWordByte(raw[j]) {
				j++
			}
			dst = appendWord(dst, raw[i:j])
			i = j
			continue
		}
		dst = append(dst, c)
		i++
	}
	return dst
}

// special replaces a URL, temp path, home folder or e-mail address at the start of s and
// returns how many bytes of s it used (0: none there).
func special(dst []byte, s string) ([]byte, int) {
	if n := urlSchemeLen(s); n > 0 {
		return appendURL(dst, s, n)
	}
	if isTempPath(s) {
		return append(dst, "<tmp>"...), pathEnd(s)
	}
	if n := homePrefixLen(s); n > 0 {
		return append(dst, '~', s[n-1]), n // keep the separator: "~/" or "~\"
	}
	if n := emailLen(s); n > 0 {
		return append(dst, "<email>"...), n
	}
	return dst, 0
}

// skipEscape returns the index after the ANSI escape sequence at raw[i] (ESC [ params final).
func skipEscape(raw string, i int) int {
	i++
	if i < len(raw) && raw[i] == '[' {
		i++
		for i < len(raw) && raw[i] >= 0x20 && raw[i] <= 0x3f {
			i++
		}
		if i < len(raw) && raw[i] >= 0x40 && raw[i] <= 0x7e {
			i++
		}
	}
	return i
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func isHex(c byte) bool { return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// isBoundary reports whether a token may start after c. "#" counts as part of a word because
// digits become "#": a second pass must see the same boundaries as the first.
func isBoundary(c byte) bool {
	if isWordByte(c) || c >= 0x80 {
		return false
	}
	switch c {
	case '#', '.', '-', '/', '\\', '~', '@', '%', '+':
		return false
	}
	return true
}

// appendWord appends a run of letters, digits and underscores with its numbers replaced: each
// underscore-separated part that is an id (hex of 4+ characters with a digit, 0x…, or letters
// and digits interleaved) becomes "#", and in any other part a run of digits becomes "#".
func appendWord(dst []byte, w string) []byte {
	if len(w) > 2 && w[0] == '0' && (w[1] == 'x' || w[1] == 'X') && allHex(w[2:]) {
		return append(dst, '#')
	}
	for p := 0; ; p++ {
		part, rest, more := strings.Cut(w, "_")
		if p > 0 {
			dst = append(dst, '_')
		}
		dst = appendPart(dst, part)
		if !more {
			return dst
		}
		w = rest
	}
}

func appendPart(dst []byte, part string) []byte {
	runs := 0
	for i := 0; i < len(part); i++ {
		if isDigit(part[i]) && (i == 0 || !isDigit(part[i-1])) {
			runs++
		}
	}
	switch {
	case runs == 0:
		return append(dst, part...)
	case runs > 1 || len(part) >= 4 && allHex(part) || isZuluTime(part):
		return append(dst, '#')
	}
	for i := 0; i < len(part); i++ {
		if !isDigit(part[i]) {
			dst = append(dst, part[i])
		} else if i == 0 || !isDigit(part[i-1]) {
			dst = append(dst, '#')
		}
	}
	return dst
}

// isZuluTime reports whether part is the end of an ISO 8601 time in UTC ("56Z", "789Z").
func isZuluTime(part string) bool {
	n := len(part) - 1
	return n > 0 && part[n] == 'Z' && strings.TrimLeft(part[:n], "0123456789") == ""
}

func allHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isHex(s[i]) {
			return false
		}
	}
	return s != ""
}

// asciiLower lower-cases ASCII letters only, so byte offsets stay those of s.
func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if c := b[j]; c >= 'A' && c <= 'Z' {
					b[j] = c + 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}
