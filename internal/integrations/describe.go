package integrations

import (
	"fmt"
	"html"
	"strings"
	"time"
	"unicode/utf8"

	"verdict/internal/domain"
)

// A ticket's description tells the run's story: its status and counts, its failing tests with
// their messages, its failure analysis when there is one, and the link to its report. Test
// names and messages come from the code under test, and analysis texts from a model: they are
// escaped (Markdown for Linear, HTML for Monday.com's updates), messages sit in code blocks, and
// everything is bounded so a run with thousands of failures still makes a readable ticket.

// Bounds of a description.
const (
	maxFailingTests   = 20
	maxMessageBytes   = 1500
	maxMessageLines   = 20
	maxNameBytes      = 300
	maxAnalysisBytes  = 2000
	maxErrorTextBytes = 500
)

// story is what a ticket says about a run.
type story struct {
	taskID, status, image string
	errText               string
	exitCode              *int
	finishedAt            *time.Time
	duration              time.Duration
	summary               domain.Summary
	failing               []failingTest
	moreFailing           int // failing tests left out
	analysis              *domain.Analysis
	reportURL             string
}

type failingTest struct {
	name     string
	message  string
	duration time.Duration
}

func describe(e *domain.Execution, reportURL string) story {
	s := story{taskID: e.TaskID, status: string(e.Status), image: e.Image, errText: clip(e.Error, maxErrorTextBytes),
		exitCode: e.ExitCode, finishedAt: e.FinishedAt, summary: e.Summary, analysis: e.Analysis, reportURL: reportURL}
	if e.StartedAt != nil && e.FinishedAt != nil {
		s.duration = e.FinishedAt.Sub(*e.StartedAt)
	}
	for _, t := range e.Tests {
		if t.Status != domain.TestFailed {
			continue
		}
		if len(s.failing) == maxFailingTests {
			s.moreFailing++
			continue
		}
		name := t.Name
		if t.Suite != "" {
			name = t.Suite + " › " + t.Name
		}
		s.failing = append(s.failing, failingTest{name: clip(name, maxNameBytes), message: clipLines(t.Error),
			duration: time.Duration(t.DurationMs) * time.Millisecond})
	}
	return s
}

// defaultTitle names a ticket after its run: "Verdict: nightly-42 FAILED on app-tests:1.4 (2 of 9
// tests failed)".
func defaultTitle(e *domain.Execution) string {
	t := "Verdict: " + e.TaskID + " " + string(e.Status)
	if e.Image != "" {
		t += " on " + e.Image
	}
	if e.Summary.Failed > 0 {
		t += fmt.Sprintf(" (%d of %d tests failed)", e.Summary.Failed, e.Summary.Total)
	}
	return clipRunes(t, maxTitleRunes)
}

// facts are the run's key facts as label and plain text, in order.
func (s story) facts() [][2]string {
	f := [][2]string{{"Status", s.status}, {"Image", s.image}}
	sum := s.summary
	f = append(f, [2]string{"Tests", fmt.Sprintf("%d total: %d passed, %d failed, %d skipped, %d flaky",
		sum.Total, sum.Passed, sum.Failed, sum.Skipped, sum.Flaky)})
	if s.exitCode != nil {
		f = append(f, [2]string{"Exit code", fmt.Sprint(*s.exitCode)})
	}
	if s.errText != "" {
		f = append(f, [2]string{"Error", s.errText})
	}
	if s.finishedAt != nil {
		at := s.finishedAt.UTC().Format(time.RFC3339)
		if s.duration > 0 {
			at += " (ran " + s.duration.Round(100*time.Millisecond).String() + ")"
		}
		f = append(f, [2]string{"Finished", at})
	}
	return f
}

// analysisFacts are the analysis's fields as label and plain text; nil without an analysis.
func (s story) analysisFacts() [][2]string {
	a := s.analysis
	if a == nil {
		return nil
	}
	category := a.Category
	if a.Triage != nil && a.Triage.Category != "" {
		category = a.Triage.Category + " (triaged by " + a.Triage.By + "; analysed as " + a.Category + ")"
	}
	src := a.Provider
	if a.Model != "" && a.Model != a.Provider {
		src += " " + a.Model
	}
	f := [][2]string{{"Category", fmt.Sprintf("%s (confidence %.0f%%, %s)", category, a.Confidence*100, src)}}
	for _, kv := range [][2]string{{"Summary", a.Summary}, {"Root cause", a.RootCause}, {"Suggested fix", a.SuggestedFix}} {
		if v := strings.TrimSpace(kv[1]); v != "" {
			f = append(f, [2]string{kv[0], clip(v, maxAnalysisBytes)})
		}
	}
	return f
}

func (s story) noFailuresNote() string {
	if s.status == string(domain.ExecFailed) && s.summary.Failed == 0 {
		if s.exitCode != nil {
			return fmt.Sprintf("No failing test was reported: the suite exited with code %d.", *s.exitCode)
		}
		return "No failing test was reported."
	}
	return ""
}

// markdown is the description of a Linear issue: the caller's text (Markdown, as given), then the
// run's details.
func (s story) markdown(intro string) string {
	var b strings.Builder
	if intro != "" {
		b.WriteString(intro + "\n\n---\n\n")
	}
	fmt.Fprintf(&b, "## Verdict run `%s`\n\n", s.taskID)
	for _, f := range s.facts() {
		v := mdText(f[1])
		if f[0] == "Image" {
			v = mdCode(f[1])
		}
		fmt.Fprintf(&b, "- **%s:** %s\n", f[0], v)
	}
	if s.reportURL != "" {
		fmt.Fprintf(&b, "- **Report:** [%s](%s)\n", mdText(s.reportURL), mdURL(s.reportURL))
	}
	if len(s.failing) > 0 {
		fmt.Fprintf(&b, "\n### Failing tests (%d)\n", len(s.failing)+s.moreFailing)
		for _, t := range s.failing {
			fmt.Fprintf(&b, "\n- **%s**", mdText(t.name))
			if t.duration > 0 {
				fmt.Fprintf(&b, " (%s)", t.duration.Round(time.Millisecond))
			}
			b.WriteString("\n")
			if t.message != "" {
				fence := mdFence(t.message)
				fmt.Fprintf(&b, "\n  %s\n  %s\n  %s\n", fence, strings.ReplaceAll(t.message, "\n", "\n  "), fence)
			}
		}
		if s.moreFailing > 0 {
			fmt.Fprintf(&b, "\n…and %d more failing tests: see the report.\n", s.moreFailing)
		}
	} else if note := s.noFailuresNote(); note != "" {
		b.WriteString("\n" + note + "\n")
	}
	if af := s.analysisFacts(); af != nil {
		b.WriteString("\n### Failure analysis\n\n")
		for _, f := range af {
			fmt.Fprintf(&b, "- **%s:** %s\n", f[0], mdText(f[1]))
		}
	}
	return b.String()
}

// html is the body of a Monday.com item's update: the caller's text, then the run's details.
func (s story) html(intro string) string {
	var b strings.Builder
	if intro != "" {
		b.WriteString("<p>" + htmlLines(intro) + "</p><hr>")
	}
	fmt.Fprintf(&b, "<h3>Verdict run %s</h3><ul>", html.EscapeString(s.taskID))
	for _, f := range s.facts() {
		fmt.Fprintf(&b, "<li><b>%s:</b> %s</li>", f[0], html.EscapeString(f[1]))
	}
	if s.reportURL != "" {
		u := html.EscapeString(s.reportURL)
		fmt.Fprintf(&b, `<li><b>Report:</b> <a href="%s">%s</a></li>`, u, u)
	}
	b.WriteString("</ul>")
	if len(s.failing) > 0 {
		fmt.Fprintf(&b, "<h4>Failing tests (%d)</h4><ul>", len(s.failing)+s.moreFailing)
		for _, t := range s.failing {
			b.WriteString("<li><b>" + html.EscapeString(t.name) + "</b>")
			if t.duration > 0 {
				fmt.Fprintf(&b, " (%s)", t.duration.Round(time.Millisecond))
			}
			if t.message != "" {
				b.WriteString("<pre>" + html.EscapeString(t.message) + "</pre>")
			}
			b.WriteString("</li>")
		}
		b.WriteString("</ul>")
		if s.moreFailing > 0 {
			fmt.Fprintf(&b, "<p>…and %d more failing tests: see the report.</p>", s.moreFailing)
		}
	} else if note := s.noFailuresNote(); note != "" {
		b.WriteString("<p>" + html.EscapeString(note) + "</p>")
	}
	if af := s.analysisFacts(); af != nil {
		b.WriteString("<h4>Failure analysis</h4><ul>")
		for _, f := range af {
			fmt.Fprintf(&b, "<li><b>%s:</b> %s</li>", f[0], htmlLines(f[1]))
		}
		b.WriteString("</ul>")
	}
	return b.String()
}

// mdText is text that Markdown shows as it is, on one line: the characters that start markup
// (emphasis, links, images, code, HTML, tables, headings) are escaped.
func mdText(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune("\\`*_[]<>|~#!", r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// mdCode is s as a code span.
func mdCode(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	fence := strings.Repeat("`", longestRun(s, '`')+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		return fence + " " + s + " " + fence
	}
	return fence + s + fence
}

// mdFence is a code fence longer than any run of backticks in s.
func mdFence(s string) string { return strings.Repeat("`", max(3, longestRun(s, '`')+1)) }

// mdURL is a link destination: the characters that would end it are escaped.
func mdURL(u string) string {
	return strings.NewReplacer(" ", "%20", "(", "%28", ")", "%29", "<", "%3C", ">", "%3E").Replace(u)
}

func longestRun(s string, c byte) int {
	best, n := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			n++
			best = max(best, n)
		} else {
			n = 0
		}
	}
	return best
}

// htmlLines is text as HTML, its line breaks kept.
func htmlLines(s string) string {
	return strings.ReplaceAll(html.EscapeString(strings.ReplaceAll(s, "\r\n", "\n")), "\n", "<br>")
}

// clip cuts s to at most n bytes on a rune boundary, marking the cut.
func clip(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// clipLines bounds a test's message to maxMessageLines lines and maxMessageBytes bytes.
func clipLines(s string) string {
	s = strings.TrimSpace(strings.ReplaceAll(s, "\r\n", "\n"))
	if lines := strings.Split(s, "\n"); len(lines) > maxMessageLines {
		s = strings.Join(lines[:maxMessageLines], "\n") + "\n…"
	}
	return clip(s, maxMessageBytes)
}

func clipRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
