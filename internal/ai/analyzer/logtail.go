package analyzer

import (
	"slices"
	"strings"
)

// Bounds of the log excerpt: only the log's tail is read (a log may hold 32 MiB), and the
// excerpt keeps the lines around errors nearest its end.
const (
	MaxLogBytes        = 64 << 10 // of the log's end read
	MaxLogExcerptBytes = 8 << 10  // of excerpt returned
	maxLogLineBytes    = 1 << 10  // of one line kept
	logContextLines    = 2        // lines kept before and after an error line
	plainTailLines     = 40       // lines kept when no line looks like an error
)

// logKeywords mark the lines of a log worth showing (lower-case).
var logKeywords = []string{
	"error", "exception", "fail", "fatal", "panic", "traceback", "refused", "timeout", "timed out",
	"killed", "out of memory", "assert", "✘", "✗", "not found", "cannot", "unable to",
}

// LogExcerpt returns the lines around errors in the last MaxLogBytes of a log, at most
// MaxLogExcerptBytes, nearest the end first kept; "…" marks lines left out between them.
// Without any error line it returns the log's last lines.
func LogExcerpt(log string) string {
	if len(log) > MaxLogBytes {
		log = log[len(log)-MaxLogBytes:]
		if i := strings.IndexByte(log, '\n'); i >= 0 {
			log = log[i+1:] // a whole first line, not a piece of one
		}
	}
	log = strings.ToValidUTF8(log, "\uFFFD")
	lines := strings.Split(strings.TrimRight(log, "\n"), "\n")
	keep := make([]bool, len(lines))
	found := false
	for i, l := range lines {
		if containsAny(asciiLower(l), logKeywords) {
			found = true
			for j := max(0, i-logContextLines); j <= min(len(lines)-1, i+logContextLines); j++ {
				keep[j] = true
			}
		}
	}
	if !found {
		for j := max(0, len(lines)-plainTailLines); j < len(lines); j++ {
			keep[j] = true
		}
	}
	// Walk back from the end so the lines nearest the end survive the bound.
	var picked []string
	size, gap := 0, false
	for i := len(lines) - 1; i >= 0; i-- {
		if !keep[i] {
			gap = len(picked) > 0
			continue
		}
		l := boundRunes(strings.TrimRight(lines[i], "\r"), maxLogLineBytes)
		if gap {
			l += "\n…"
		}
		if size+len(l)+1 > MaxLogExcerptBytes {
			break
		}
		picked = append(picked, l)
		size += len(l) + 1
		gap = false
	}
	slices.Reverse(picked)
	return strings.Join(picked, "\n")
}
