package analyzer

import "strings"

// Steps run on a normalised line after it is cut: each only shrinks it, so normalising
// again changes nothing.

func trimSpace(b []byte) []byte {
	for len(b) > 0 && b[0] == ' ' {
		b = b[1:]
	}
	for len(b) > 0 && b[len(b)-1] == ' ' {
		b = b[:len(b)-1]
	}
	return b
}

// durationUnits follow a number in a duration, longest first.
var durationUnits = []string{
	"milliseconds", "millisecond(s)", "millisecond", "seconds", "second(s)", "second",
	"minutes", "minute(s)", "minute", "msec", "secs", "sec", "mins", "min", "ms", "s", "m", "h",
}

// dropDurationUnits removes the unit after a "#" ("#ms", "# seconds"): "5000ms" and "30s" are
// the same timeout set differently.
func dropDurationUnits(b []byte) []byte {
	out := b[:0] // writes never pass the read position
	for i := 0; i < len(b); i++ {
		c := b[i]
		for c == '#' { // again, for "#s s"
			j := i + 1
			if j < len(b) && b[j] == ' ' {
				j++
			}
			n := unitLen(b[j:])
			if n == 0 {
				break
			}
			i = j + n - 1
		}
		out = append(out, c)
	}
	return out
}

// unitLen returns the length of the duration unit at the start of b that ends a word, or 0.
func unitLen(b []byte) int {
	for _, u := range durationUnits {
		if len(b) >= len(u) && string(b[:len(u)]) == u && (len(b) == len(u) || !isWordByte(b[len(u)]) && b[len(u)] != '#') {
			return len(u)
		}
	}
	return 0
}

// collapseNumbers makes a run of numbers joined by separators ("#.#", "#:#:#", "#-#-#") one
// "#": dates, versions, IPs, UUIDs and line:column all read as one number.
func collapseNumbers(b []byte) []byte {
	out := b[:0]
	for i := 0; i < len(b); {
		if b[i] != '#' {
			out = append(out, b[i])
			i++
			continue
		}
		j := i + 1
		for {
			k := j
			for k < len(b) && strings.IndexByte("-:./+", b[k]) >= 0 {
				k++
			}
			if k < len(b) && b[k] == '#' {
				j = k + 1
				continue
			}
			break
		}
		out = append(out, '#')
		i = j
	}
	return out
}

// shortenQuoted replaces a quoted value longer than maxQuotedBytes by "<text>".
func shortenQuoted(b []byte) []byte {
	out := b[:0]
	for i := 0; i < len(b); {
		q := b[i]
		if q == '"' || q == '`' {
			if j := indexByteFrom(b, q, i+1); j > 0 && j-i-1 > maxQuotedBytes {
				out = append(out, q)
				out = append(out, "<text>"...)
				out = append(out, q)
				i = j + 1
				continue
			}
		}
		out = append(out, q)
		i++
	}
	return out
}

func indexByteFrom(b []byte, c byte, from int) int {
	for i := from; i < len(b); i++ {
		if b[i] == c {
			return i
		}
	}
	return -1
}
