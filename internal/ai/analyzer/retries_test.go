package analyzer

import (
	"strings"
	"testing"

	"verdict/internal/ai"
	"verdict/internal/domain"
)

// TestRetriesInsideTheRunAreFlaky: a test its runner retried within the run and that then
// passed is flaky, whatever its message says, as each runner reports it: two results of the
// same test, or only the runner's output.
func TestRetriesInsideTheRunAreFlaky(t *testing.T) {
	passed := func(suite, name string) Test {
		return Test{TestResult: domain.TestResult{Suite: suite, Name: name, Status: domain.TestPassed}}
	}
	failed := func(suite, name, msg string) Test {
		return Test{TestResult: domain.TestResult{Suite: suite, Name: name, Status: domain.TestFailed, Error: msg}}
	}
	for _, c := range []struct {
		name  string
		tests []Test
		log   string
	}{
		{"gotestsum reruns: a failed and a passed result", []Test{
			failed("k8s.io/kubernetes/pkg/watch", "TestWatch", "watcher_test.go:204: #1: ResultChan should have been closed"),
			passed("k8s.io/kubernetes/pkg/watch", "TestWatch")}, "=== RERUN  TestWatch\n--- PASS: TestWatch (0.10s)\n"},
		{"pytest-rerunfailures", []Test{passed("tests/test_queue.py", "test_drains")},
			"tests/test_queue.py::test_drains RERUN\ntests/test_queue.py::test_drains PASSED\n===== 12 passed, 1 rerun in 3.1s ====="},
		{"Cypress attempts", []Test{passed("cypress/e2e/cart.cy.js", "cart > adds an item")},
			"  cart\n    (Attempt 1 of 3) adds an item\n    ✓ adds an item (2143ms)\n"},
		{"Surefire flakes", []Test{passed("org.acme.CartTest", "addsItem")},
			"[WARNING] Flakes: \n[WARNING] org.acme.CartTest.addsItem\n[ERROR]   Run 1: CartTest.addsItem:41 expected:<2> but was:<1>\n[INFO]   Run 2: PASS\n"},
		{"Playwright list of flaky tests", []Test{passed("cart.spec.ts", "cart › adds an item")},
			"  1 flaky\n    [chromium] › cart.spec.ts:12:3 › cart › adds an item\n  41 passed (1.1m)\n"},
	} {
		exit := 0
		res := Analyse(Input{TaskID: "run-1", ExitCode: &exit, Tests: c.tests, Log: c.log}, History{}, nil)
		if res.Category != ai.Flaky || len(res.Failures) != 1 || res.Failures[0].Category != ai.Flaky {
			t.Errorf("%s: run %s with failures %+v, want one flaky failure", c.name, res.Category, res.Failures)
			continue
		}
		if d := res.Failures[0].Reason.Detail; !strings.Contains(d, "within the run") {
			t.Errorf("%s: evidence %q does not say the test passed within the run", c.name, d)
		}
	}
}

// TestRetriesThatNeverPassAreNotFlaky: a test retried until the runner gave up failed every
// time; it is judged by its message like any other failure.
func TestRetriesThatNeverPassAreNotFlaky(t *testing.T) {
	exit := 1
	in := Input{TaskID: "run-1", ExitCode: &exit, Log: "tests/test_api.py::test_create RERUN\ntests/test_api.py::test_create RERUN\ntests/test_api.py::test_create FAILED\n",
		Tests: []Test{{TestResult: domain.TestResult{Suite: "tests/test_api.py", Name: "test_create", Status: domain.TestFailed,
			Error: "requests.exceptions.ConnectionError: HTTPConnectionPool(host='api', port=8000): Max retries exceeded (Caused by NewConnectionError('Failed to establish a new connection: [Errno 111] Connection refused'))"}}}}
	res := Analyse(in, History{}, nil)
	if res.Category != ai.Environment || res.Failures[0].Reason.Rule == "passed-on-retry" {
		t.Errorf("a test that failed every attempt is %s (%s)", res.Category, res.Failures[0].Reason.Rule)
	}
	if ks := TestKeys(in); len(ks) != 1 {
		t.Errorf("test keys %v", ks)
	}
}

// TestAPassBeforeAFailureIsNoRetry: a data-driven test's iterations share a name; one that
// passed before another failed is not a rerun of it (a rerun is reported after its attempt).
func TestAPassBeforeAFailureIsNoRetry(t *testing.T) {
	exit := 1
	in := Input{TaskID: "run-1", ExitCode: &exit, Tests: []Test{
		{TestResult: domain.TestResult{Suite: "org.acme.PriceTest", Name: "rounds", Status: domain.TestPassed}},
		{TestResult: domain.TestResult{Suite: "org.acme.PriceTest", Name: "rounds", Status: domain.TestFailed, Error: "java.lang.AssertionError: expected [1.05] but found [1.04]"}},
	}}
	if res := Analyse(in, History{}, nil); res.Category == ai.Flaky || res.Failures[0].Reason.Rule == "passed-on-retry" {
		t.Errorf("run %s, failure %+v", res.Category, res.Failures[0])
	}
}
