package analyzer

import (
	"fmt"
	"strings"
	"testing"

	"verdict/internal/ai"
	"verdict/internal/domain"
)

func exitCode(n int) *int { return &n }

func TestExitCode137Dominates(t *testing.T) {
	in := failedRun("run-1",
		[2]string{"a", serverError}, [2]string{"b", serverError}, [2]string{"c", serverError},
		[2]string{"d", "Error: page.click: Target page, context or browser has been closed"})
	in.ExitCode = exitCode(137)
	got := Analyse(in, History{}, nil)
	if got.Category != ai.Environment || got.Confidence < 0.85 || got.Reasons[0].Rule != "killed" {
		t.Fatalf("finding %+v, reasons %+v; want environment by the kill", got.Finding, got.Reasons)
	}
	if !strings.Contains(got.Summary, "137") || !strings.Contains(got.Summary, "memory") || !strings.Contains(got.SuggestedFix, "memory") {
		t.Errorf("finding %+v does not explain the kill", got.Finding)
	}
	if !strings.Contains(got.Summary, "3 of 4 failures are server errors") {
		t.Errorf("summary %q does not report the tests' failures too", got.Summary)
	}
	if got.Failures[0].Category != ai.ProductBug {
		t.Errorf("the failures keep their own categories: %+v", got.Failures[0])
	}
}

func TestOutOfMemoryInTheLog(t *testing.T) {
	in := failedRun("run-1", [2]string{"a", "Error: page.goto: Target crashed"})
	in.Log = strings.Repeat("ok line\n", 1000) + "<--- Last few GCs --->\nFATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory\n"
	got := Analyse(in, History{}, nil)
	if got.Category != ai.Environment || got.Reasons[0].Rule != "out-of-memory" || !strings.Contains(got.RootCause, "JavaScript heap out of memory") {
		t.Errorf("finding %+v, reasons %+v", got.Finding, got.Reasons)
	}
}

func TestAPassedRunIsNotAnOutOfMemoryRun(t *testing.T) {
	in := Input{TaskID: "run-1", ExitCode: exitCode(0), Log: "app: cache out of memory, evicting\n",
		Tests: []Test{{TestResult: domain.TestResult{Name: "a", Status: domain.TestPassed}}}}
	if got := Analyse(in, History{}, nil); got.Category != ai.Unknown {
		t.Errorf("finding %+v, want nothing to explain", got.Finding)
	}
}

func TestFailedRunWithoutResults(t *testing.T) {
	in := Input{TaskID: "run-1", ExitCode: exitCode(1), Log: "> playwright test\nlistening for tests\n"}
	got := Analyse(in, History{}, nil)
	if got.Category != ai.Environment || got.Reasons[0].Rule != "missing-results" || !strings.Contains(got.Summary, "no test results") {
		t.Fatalf("finding %+v, reasons %+v", got.Finding, got.Reasons)
	}
	if len(got.Failures) != 0 {
		t.Errorf("failures %+v", got.Failures)
	}
	// The log tells why: the app was down.
	in.Log = "> wait-on http://web:3000 && playwright test\nError: connect ECONNREFUSED 127.0.0.1:3000\n    at TCPConnectWrap.afterConnect [as oncomplete] (node:net:1555:16)\n"
	got = Analyse(in, History{}, nil)
	if got.Category != ai.Environment || !strings.Contains(got.Summary, "ECONNREFUSED") || !strings.Contains(got.RootCause, "refused") {
		t.Errorf("finding %+v", got.Finding)
	}
	// The log tells why: the test code does not compile.
	in.Log = "Error: No tests found\nSyntaxError: /app/tests/a.spec.ts: Unexpected token (3:1)\n"
	if got = Analyse(in, History{}, nil); got.Category != ai.TestBug {
		t.Errorf("finding %+v, want test_bug from the log", got.Finding)
	}
}

func TestNonZeroExitWithoutFailedTests(t *testing.T) {
	in := Input{TaskID: "run-1", ExitCode: exitCode(2), Tests: []Test{{TestResult: domain.TestResult{Name: "a", Status: domain.TestPassed}}}}
	got := Analyse(in, History{}, nil)
	if got.Category != ai.Environment || got.Reasons[0].Rule != "nonzero-exit" || !strings.Contains(got.Summary, "code 2") {
		t.Errorf("finding %+v, reasons %+v", got.Finding, got.Reasons)
	}
}

func TestNothingFailed(t *testing.T) {
	in := Input{TaskID: "run-1", ExitCode: exitCode(0), Tests: []Test{{TestResult: domain.TestResult{Name: "a", Status: domain.TestPassed}}}}
	got := Analyse(in, History{}, nil)
	if got.Category != ai.Unknown || got.Confidence != 0 || len(got.Failures) != 0 || got.Summary == "" {
		t.Errorf("finding %+v", got.Finding)
	}
}

func TestRunTimeout(t *testing.T) {
	in := failedRun("run-1", [2]string{"a", locatorTimeout})
	in.ExitCode, in.RunError = nil, "timeout after 1800 s"
	got := Analyse(in, History{}, nil)
	if got.Category != ai.Environment || got.Reasons[0].Rule != "run-error" || !strings.Contains(got.Summary, "time limit") {
		t.Errorf("finding %+v, reasons %+v", got.Finding, got.Reasons)
	}
}

func TestDominantCategoryAndSummary(t *testing.T) {
	refused := "Error: page.goto: net::ERR_CONNECTION_REFUSED at http://web:3000/login"
	in := failedRun("run-1",
		[2]string{"a", refused}, [2]string{"b", refused}, [2]string{"c", refused},
		[2]string{"d", locatorTimeout}, [2]string{"e", "weird thing happened"})
	in.Tests = append(in.Tests, Test{TestResult: domain.TestResult{Name: "f", Status: domain.TestFlaky, Retries: 1, Error: locatorTimeout}})
	got := Analyse(in, History{}, nil)
	if got.Category != ai.Environment {
		t.Fatalf("category %s", got.Category)
	}
	for _, want := range []string{
		"3 of 5 failures are connection refusals at http://web:3000 (the run's BASE_URL): the application under test was not reachable.",
		"1 is a locator that found no element (test bug)", "1 is an unrecognised failure (unknown)",
		"1 more test passed only on retry (flaky)",
	} {
		if !strings.Contains(got.Summary, want) {
			t.Errorf("summary %q lacks %q", got.Summary, want)
		}
	}
	if !strings.Contains(got.SuggestedFix, "BASE_URL") || !strings.Contains(got.RootCause, "http://web:3000") {
		t.Errorf("finding %+v", got.Finding)
	}
	if got.Confidence <= 0.5 || got.Confidence >= 0.95 {
		t.Errorf("confidence %v: three strong of five should be fairly, not fully, sure", got.Confidence)
	}
	// All agreeing is surer than a split.
	all := Analyse(failedRun("run-2", [2]string{"a", refused}, [2]string{"b", refused}), History{}, nil)
	if all.Confidence <= got.Confidence {
		t.Errorf("agreeing failures: confidence %v, not above the split run's %v", all.Confidence, got.Confidence)
	}
}

// TestUnrecognisedFailuresDoNotOutvoteRecognisedOnes: two unknowns and one server error is a
// product bug.
func TestUnrecognisedFailuresDoNotOutvoteRecognisedOnes(t *testing.T) {
	got := Analyse(failedRun("run-1", [2]string{"a", "odd"}, [2]string{"b", "odder"}, [2]string{"c", serverError}), History{}, nil)
	if got.Category != ai.ProductBug {
		t.Errorf("category %s, want product_bug", got.Category)
	}
}

func TestManyFailuresAreBounded(t *testing.T) {
	var tests [][2]string
	for i := range MaxFailures + 25 {
		tests = append(tests, [2]string{fmt.Sprintf("t%d", i), serverError})
	}
	in := failedRun("run-1", tests...)
	got := Analyse(in, History{}, nil)
	if len(got.Failures) != MaxFailures || got.OmittedFailures != 25 {
		t.Errorf("%d failures and %d omitted", len(got.Failures), got.OmittedFailures)
	}
	if got.Failures[0].Occurrences != MaxFailures {
		t.Errorf("occurrences %d", got.Failures[0].Occurrences)
	}
}

func TestFromExecution(t *testing.T) {
	e := &domain.Execution{TaskID: "nightly-7", BaseURL: "http://web:3000", ExitCode: exitCode(1), Error: "",
		Tests: []domain.TestResult{{Name: "a", Status: domain.TestFailed, Error: "TypeError: x is not a function\n    at /app/tests/a.spec.ts:1:2"}}}
	in := FromExecution(e, "log")
	if in.TaskID != "nightly-7" || in.BaseURL != e.BaseURL || *in.ExitCode != 1 || len(in.Tests) != 1 || in.Log != "log" {
		t.Fatalf("input %+v", in)
	}
	if f := Analyse(in, History{}, nil).Failures[0]; f.Category != ai.TestBug || f.Reason.Rule != "runtime-error" {
		t.Errorf("the error text split into message and stack should find the test frame: %+v", f)
	}
}
