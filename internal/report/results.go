// Package report holds what Verdict does with the folders a run leaves behind: the result
// parsers (JUnit XML, Allure 2 results, Playwright JSON, Visual Studio TRX) that feed the verdict, the report store
// that keeps and serves the folders, and the signed links that open them.
//
// Everything here reads files a tenant's container wrote, so every input is hostile: sizes,
// counts and string lengths are bounded, and a parser never panics on any input (fuzzed).
package report

import (
	"encoding/xml"
	"errors"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"verdict/internal/domain"
)

// Bounds on what the parsers read. A run's reports are already capped in bytes by the store;
// these keep one parse cheap in memory and time whatever the container wrote.
const (
	maxFileBytes  = 64 << 20  // one result file (a large Playwright JSON report with logs)
	maxTotalBytes = 256 << 20 // all candidate files of one ParseDir together
	maxEntries    = 200_000   // files and folders ParseDir walks
	maxDepth      = 32        // folder depth ParseDir descends
	maxTests      = 100_000   // tests one parse returns
	maxTextBytes  = 512       // a test's name or suite
	maxErrorBytes = 4096      // a test's error message
	maxDurationMs = 24 * 60 * 60 * 1000
)

var (
	// ErrUnrecognized: the input is not a result file of the format asked for.
	ErrUnrecognized = errors.New("report: not a recognised result file")
	// ErrLimit: the input passed one of the parser's bounds; the results returned with it are
	// the ones read before the bound.
	ErrLimit = errors.New("report: input exceeds the parser's limits")
)

// attempt is one execution of a test; status is passed, failed or skipped. attachments are the
// files it names (paths as its result file writes them, until ParseDir resolves them).
type attempt struct {
	status      domain.TestStatus
	durationMs  int64
	err         string
	attachments []domain.Attachment
}

// settle turns a test's attempts, oldest first, into its result: the last attempt decides,
// a pass after a failed attempt is flaky, and every attempt after the first is a retry. The
// duration is the last attempt's. The error is the deciding failure's, or for a flaky test
// the last failed attempt's, which is what a reader of a flaky test wants to see. The
// attachments are every attempt's, oldest first, each with its attempt (Retry), at most
// maxAttachments.
func settle(name, suite string, attempts []attempt) domain.TestResult {
	r := domain.TestResult{Name: boundText(name, maxTextBytes), Suite: boundText(suite, maxTextBytes), Status: domain.TestSkipped}
	if len(attempts) == 0 {
		return r
	}
	last := attempts[len(attempts)-1]
	r.Status, r.DurationMs, r.Retries = last.status, last.durationMs, len(attempts)-1
	for i, a := range attempts {
		for _, f := range a.attachments {
			if len(r.Attachments) == maxAttachments {
				break
			}
			f.Retry = i
			r.Attachments = append(r.Attachments, f)
		}
	}
	switch last.status {
	case domain.TestFailed, domain.TestSkipped: // a skipped test's reason
		r.Error = last.err
	case domain.TestPassed:
		for i := len(attempts) - 2; i >= 0; i-- {
			if attempts[i].status == domain.TestFailed {
				r.Status, r.Error = domain.TestFlaky, attempts[i].err
				break
			}
		}
	}
	return r
}

// errorText cleans a failure message for storage: colour codes and surrounding space go, and
// the length is bounded on a character boundary.
func errorText(s string) string { return boundText(stripANSI(s), maxErrorBytes) }

// boundText trims s, replaces invalid UTF-8, drops NUL (which PostgreSQL text refuses), and cuts
// it to at most max bytes plus an ellipsis.
func boundText(s string, max int) string {
	s = strings.TrimSpace(s)
	if len(s) > 4*max {
		s = s[:4*max] // ToValidUTF8 below copies; never copy more than can be kept
	}
	s = strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "")
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strings.TrimSpace(s[:cut]) + "…"
}

// stripANSI removes terminal escape sequences, which Playwright and most runners put in their
// failure messages: CSI ("ESC [ params final"), OSC ("ESC ] text BEL", e.g. hyperlinks) and the
// short "ESC intermediates final" forms.
func stripANSI(s string) string {
	if strings.IndexByte(s, 0x1b) < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != 0x1b {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch {
		case i >= len(s):
		case s[i] == '[':
			for i++; i < len(s) && (s[i] < 0x40 || s[i] > 0x7e); i++ {
			}
		case s[i] == ']':
			for i++; i < len(s) && s[i] != 0x07 && s[i] != 0x1b; i++ {
			}
			if i+1 < len(s) && s[i] == 0x1b && s[i+1] == '\\' {
				i++
			}
		default:
			for i < len(s) && s[i] >= 0x20 && s[i] <= 0x2f {
				i++
			}
		}
	}
	return b.String()
}

// millis converts a duration in ms to the bounded integer we store; NaN, infinities and
// negative values are 0, and nothing runs longer than a day.
func millis(ms float64) int64 {
	switch {
	case math.IsNaN(ms) || math.IsInf(ms, 0) || ms <= 0:
		return 0
	case ms >= maxDurationMs:
		return maxDurationMs
	}
	return int64(math.Round(ms))
}

// secondsToMillis parses a JUnit time attribute: seconds as a float, where old Maven Surefire
// versions wrote thousands separators ("1,234.5").
func secondsToMillis(s string) int64 {
	f, err := strconv.ParseFloat(strings.ReplaceAll(strings.TrimSpace(s), ",", ""), 64)
	if err != nil {
		return 0
	}
	return millis(f * 1000)
}

// eachElement reads an XML results file whose root element is root (else ErrUnrecognized) and
// calls visit with every element that starts inside it, in document order; visit may consume
// the element (decodeElement, Skip) or leave its children to the walk.
func eachElement(dec *xmlDecoder, root string, visit func(start xml.StartElement) error) error {
	rooted := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			if !rooted {
				return ErrUnrecognized
			}
			return err
		}
		start, ok := tok.(xml.StartElement)
		switch {
		case !ok:
		case !rooted && start.Name.Local != root:
			return ErrUnrecognized
		case !rooted:
			rooted = true
		default:
			if err := visit(start); err != nil {
				return err
			}
		}
	}
	if !rooted {
		return ErrUnrecognized
	}
	return nil
}

// byTest gathers a results file's attempts by test (suite and name), in the order of each
// test's first attempt: a file that lists a test again lists another attempt of it. Past limit
// tests, new ones are left out.
type byTest struct {
	limit   int
	order   [][2]string
	runs    map[[2]string][]attempt
	limited bool
}

func newByTest(limit int) *byTest { return &byTest{limit: limit, runs: map[[2]string][]attempt{}} }

func (b *byTest) add(suite, name string, a attempt) {
	key := [2]string{suite, name}
	if _, ok := b.runs[key]; !ok {
		if len(b.order) == b.limit {
			b.limited = true
			return
		}
		b.order = append(b.order, key)
	}
	b.runs[key] = append(b.runs[key], a)
}

// results settles each test's attempts; ErrLimit with them when tests were left out.
func (b *byTest) results() ([]domain.TestResult, error) {
	tests := make([]domain.TestResult, 0, len(b.order))
	for _, k := range b.order {
		tests = append(tests, settle(k[1], k[0], b.runs[k]))
	}
	if b.limited {
		return tests, ErrLimit
	}
	return tests, nil
}
