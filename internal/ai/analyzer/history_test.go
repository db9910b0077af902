package analyzer

import (
	"slices"
	"strings"
	"testing"

	"verdict/internal/ai"
	"verdict/internal/domain"
)

const serverError = "1 expectation failed.\nExpected status code <200> but was <500>."

// TestTwoStepHistoryLookup follows the caller: signatures and test keys first, the history
// looked up for them, then the analysis with occurrences counted across runs.
func TestTwoStepHistoryLookup(t *testing.T) {
	in := failedRun("run-77",
		[2]string{"createsOrder", serverError},
		[2]string{"createsOrderWithCoupon", strings.Replace(serverError, "<200>", "<201>", 1)},
		[2]string{"places an order", locatorTimeout},
	)
	sigs := Signatures(in)
	if len(sigs) != 2 {
		t.Fatalf("%d distinct signatures, want 2 (both server errors are one failure): %v", len(sigs), sigs)
	}
	if keys := TestKeys(in); !slices.Equal(keys, []string{"suite › createsOrder", "suite › createsOrderWithCoupon", "suite › places an order"}) {
		t.Errorf("test keys %v", keys)
	}
	db := map[string]SignatureHistory{sigs[0]: {Occurrences: 12, FirstSeenTaskID: "run-40"}}
	history := History{Signatures: map[string]SignatureHistory{}}
	for _, s := range sigs {
		if h, ok := db[s]; ok {
			history.Signatures[s] = h
		}
	}
	got := Analyse(in, history, nil)
	want := []struct {
		occurrences int
		first       string
	}{{14, "run-40"}, {14, "run-40"}, {1, "run-77"}}
	for i, w := range want {
		f := got.Failures[i]
		if f.Signature != sigs[min(i/2, 1)] || f.Occurrences != w.occurrences || f.FirstSeenTaskID != w.first {
			t.Errorf("failure %d: %s, %d occurrences, first in %s; want %d, %s", i, f.Signature, f.Occurrences, f.FirstSeenTaskID, w.occurrences, w.first)
		}
	}
	if !strings.Contains(got.RootCause, "14 times") || !strings.Contains(got.RootCause, "run-40") {
		t.Errorf("the root cause does not tell the history: %q", got.RootCause)
	}
}

func TestFlakyByRetry(t *testing.T) {
	for _, tr := range []domain.TestResult{
		{Name: "a", Status: domain.TestFlaky, Retries: 1, Error: locatorTimeout},
		{Name: "b", Status: domain.TestPassed, Retries: 2},
	} {
		exit := 0
		got := Analyse(Input{TaskID: "run-1", ExitCode: &exit, Tests: []Test{{TestResult: tr}}}, History{}, nil)
		if got.Category != ai.Flaky || len(got.Failures) != 1 || got.Failures[0].Reason.Rule != "passed-on-retry" {
			t.Errorf("%+v: run %s, failures %+v; want flaky", tr, got.Category, got.Failures)
		}
		if !strings.Contains(got.Summary, "passed on retry") {
			t.Errorf("summary %q", got.Summary)
		}
	}
	// A test that failed on every retry is not flaky.
	in := failedRun("run-2", [2]string{"places an order", locatorTimeout})
	in.Tests[0].Retries = 2
	if got := Analyse(in, History{}, nil); got.Category != ai.TestBug {
		t.Errorf("a test failing all its retries: %s, want test_bug", got.Category)
	}
}

func TestFlakyByAlternatingHistory(t *testing.T) {
	in := failedRun("run-9", [2]string{"totals", "Error: expect(received).toBe(expected)\n\nExpected: 42\nReceived: 41"})
	key := TestKey("suite", "totals")
	for _, c := range []struct {
		past  []domain.TestStatus
		flaky bool
	}{
		{[]domain.TestStatus{"passed", "failed", "passed"}, true},                       // P F P, then F: 3 changes
		{[]domain.TestStatus{"passed", "skipped", "failed", "skipped", "passed"}, true}, // skipped runs are left out
		{[]domain.TestStatus{"flaky", "passed", "flaky", "passed"}, true},               // passed on retry twice
		{[]domain.TestStatus{"passed", "passed", "passed", "passed"}, false},            // it broke now
		{[]domain.TestStatus{"failed", "failed", "failed"}, false},                      // it stays broken
		{[]domain.TestStatus{"passed", "failed", "failed", "failed"}, false},            // it broke and stays broken
		{nil, false},
	} {
		got := Analyse(in, History{Tests: map[string][]domain.TestStatus{key: c.past}}, nil)
		isFlaky := got.Failures[0].Category == ai.Flaky
		if isFlaky != c.flaky {
			t.Errorf("past %v: failure %+v, flaky %v want %v", c.past, got.Failures[0], isFlaky, c.flaky)
		}
		if c.flaky && !strings.Contains(got.Failures[0].Reason.Detail, "changes between pass and fail") {
			t.Errorf("past %v: the reason does not show the history: %q", c.past, got.Failures[0].Reason.Detail)
		}
	}
	// Only the last outcomes count: alternation long ago is not flakiness now.
	old := []domain.TestStatus{"passed", "failed", "passed", "failed", "passed", "passed", "passed", "passed", "passed", "passed", "passed", "passed"}
	if got := Analyse(in, History{Tests: map[string][]domain.TestStatus{key: old}}, nil); got.Failures[0].Category == ai.Flaky {
		t.Errorf("alternation older than the last %d outcomes made the test flaky", recentOutcomes)
	}
}

// TestBrokenEnvironmentBeatsAFlakyPast: a refused connection explains this failure whatever
// the test did before.
func TestBrokenEnvironmentBeatsAFlakyPast(t *testing.T) {
	in := failedRun("run-9", [2]string{"logs in", "Error: page.goto: net::ERR_CONNECTION_REFUSED at http://web:3000/login"})
	h := History{Tests: map[string][]domain.TestStatus{TestKey("suite", "logs in"): {"passed", "failed", "passed", "failed"}}}
	if f := Analyse(in, h, nil).Failures[0]; f.Category != ai.Environment {
		t.Errorf("failure %+v, want environment", f)
	}
}

// TestRetryPassesDoNotLeadTheSummary: with one test failing for good, tests passed on retry
// are mentioned after it, however many.
func TestRetryPassesDoNotLeadTheSummary(t *testing.T) {
	in := failedRun("run-9", [2]string{"totals", "Error: expect(received).toBe(expected)\n\nExpected: 42\nReceived: 41"})
	for _, name := range []string{"x", "y", "z"} {
		in.Tests = append(in.Tests, Test{TestResult: domain.TestResult{Name: name, Status: domain.TestFlaky, Retries: 1, Error: locatorTimeout}})
	}
	h := History{Tests: map[string][]domain.TestStatus{TestKey("suite", "totals"): {"passed", "failed", "passed"}}}
	got := Analyse(in, h, nil)
	if got.Category != ai.Flaky || !strings.HasPrefix(got.Summary, "The failure is a test whose recent runs alternate") || !strings.Contains(got.Summary, "3 more tests passed only on retry") {
		t.Errorf("finding %+v", got.Finding)
	}
}
