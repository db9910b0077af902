package integrations

import (
	"time"

	"verdict/internal/domain"
)

// Summary is a run's story as a ticket's description tells it (describe), for the other
// messages that tell it: a chat message, a webhook event. The texts are plain (not escaped) and
// bounded as a ticket's are; each message escapes them for its own format.
type Summary struct {
	Title       string      // "Verdict: nightly-42 FAILED on app-tests:1.4 (2 of 9 tests failed)"
	Facts       [][2]string // the key facts, label and text, in order: status, image, tests, …
	Analysis    [][2]string // the failure analysis's fields; nil without one
	Failing     []FailingTest
	MoreFailing int    // failing tests left out of Failing
	Note        string // why a failed run lists no failing test; "" otherwise
	ReportURL   string
}

// FailingTest is a failing test of a Summary.
type FailingTest struct {
	Name     string // "suite › name"
	Message  string // clipped to a few lines
	Duration time.Duration
}

// Summarize is run's Summary, linking reportURL ("": no report).
func Summarize(run *domain.Execution, reportURL string) Summary {
	s := describe(run, reportURL)
	out := Summary{Title: defaultTitle(run), Facts: s.facts(), Analysis: s.analysisFacts(), MoreFailing: s.moreFailing,
		Note: s.noFailuresNote(), ReportURL: reportURL}
	for _, t := range s.failing {
		out.Failing = append(out.Failing, FailingTest{Name: t.name, Message: t.message, Duration: t.duration})
	}
	return out
}
