package analyzer

import (
	"strings"
	"testing"
	"time"

	"verdict/internal/ai"
	"verdict/internal/domain"
)

// failedRun is a run of failed tests, each given as name and error text.
func failedRun(taskID string, tests ...[2]string) Input {
	exit := 1
	in := Input{TaskID: taskID, BaseURL: "http://web:3000", ExitCode: &exit}
	for _, t := range tests {
		in.Tests = append(in.Tests, Test{TestResult: domain.TestResult{Name: t[0], Suite: "suite", Status: domain.TestFailed, Error: t[1]}})
	}
	return in
}

// locatorTimeout reads as a test bug by the rules.
const locatorTimeout = "TimeoutError: locator.click: Timeout 15000ms exceeded.\nCall log:\n  - waiting for getByRole('button', { name: 'Place order' })\n    at /app/tests/checkout.spec.ts:31:5"

func triageOf(message string, c ai.Category, by, task string, at time.Time) Triage {
	n := Normalize(SplitError(message))
	return Triage{Signature: signatureOf(n), Normalized: n, Category: c, By: by, TaskID: task, At: at}
}

var day = time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC)

func TestTriageOfTheSameSignatureDecides(t *testing.T) {
	in := failedRun("run-9", [2]string{"places an order", strings.Replace(locatorTimeout, "15000", "30000", 1)})
	triages := []Triage{triageOf(locatorTimeout, ai.ProductBug, "ada@example.com", "run-3", day)}
	got := Analyse(in, History{}, triages)
	f := got.Failures[0]
	if f.Category != ai.ProductBug || f.Reason.Rule != "triage" || f.Confidence != 0.95 {
		t.Fatalf("failure %+v, want the triaged product bug", f)
	}
	for _, want := range []string{"ada@example.com", "product bug", "run-3", "2025-03-14"} {
		if !strings.Contains(f.Reason.Detail, want) || !strings.Contains(got.Summary+got.RootCause, want) {
			t.Errorf("the triage's %q is not cited: reason %q, summary %q, cause %q", want, f.Reason.Detail, got.Summary, got.RootCause)
		}
	}
	if got.Category != ai.ProductBug {
		t.Errorf("run category %s, want product_bug", got.Category)
	}
}

func TestTriageOfANearFailureDecides(t *testing.T) {
	// The same locator timeout raised from another spec and page object: another signature,
	// most words in common.
	near := "TimeoutError: locator.click: Timeout 15000ms exceeded.\nCall log:\n  - waiting for getByRole('button', { name: 'Place order' })\n    at GuestCheckout.submit (/app/tests/pages/guest.page.ts:12:3)\n    at /app/tests/guest-checkout.spec.ts:40:5"
	in := failedRun("run-9", [2]string{"guest places an order", near})
	tr := triageOf(locatorTimeout, ai.ProductBug, "Grace Hopper", "run-3", day)
	if tr.Signature == Signatures(in)[0] {
		t.Fatal("the test needs two different signatures")
	}
	sim := Similarity(Tokens(tr.Normalized), Tokens(Normalize(SplitError(near))))
	if sim < NearThreshold {
		t.Fatalf("similarity %.2f is under the threshold: the test's failures are not near", sim)
	}
	f := Analyse(in, History{}, []Triage{tr}).Failures[0]
	if f.Category != ai.ProductBug || f.Reason.Rule != "triage-near" || !strings.Contains(f.Reason.Detail, "Grace Hopper") {
		t.Fatalf("failure %+v, want the near triage", f)
	}
	if f.Confidence >= 0.95 || f.Confidence < 0.6 {
		t.Errorf("a near triage's confidence %v should be below an exact one's", f.Confidence)
	}
}

func TestTriageOfAnUnrelatedFailureIsIgnored(t *testing.T) {
	in := failedRun("run-9", [2]string{"places an order", locatorTimeout})
	other := triageOf("AssertionError: assert 500 == 201\n +  where 500 = <Response [500]>.status_code", ai.Environment, "ada", "run-1", day)
	f := Analyse(in, History{}, []Triage{other}).Failures[0]
	if f.Category != ai.TestBug || f.Reason.Rule != "locator-not-found" {
		t.Fatalf("failure %+v, want the rules' test bug", f)
	}
}

func TestExactTriageBeatsANearerRecentOne(t *testing.T) {
	in := failedRun("run-9", [2]string{"places an order", locatorTimeout})
	exact := triageOf(locatorTimeout, ai.TestBug, "ada", "run-1", day)
	near := triageOf(strings.Replace(locatorTimeout, "checkout.spec.ts", "checkout2.spec.ts", 1), ai.ProductBug, "bob", "run-5", day.AddDate(0, 1, 0))
	f := Analyse(in, History{}, []Triage{near, exact}).Failures[0]
	if f.Category != ai.TestBug || f.Reason.Rule != "triage" || !strings.Contains(f.Reason.Detail, "ada") {
		t.Fatalf("failure %+v, want ada's exact triage", f)
	}
}

func TestMostRecentTriageWins(t *testing.T) {
	in := failedRun("run-9", [2]string{"places an order", locatorTimeout})
	older := triageOf(locatorTimeout, ai.Environment, "ada", "run-1", day)
	newer := triageOf(locatorTimeout, ai.TestBug, "bob", "run-5", day.Add(time.Hour))
	for _, order := range [][]Triage{{older, newer}, {newer, older}} {
		if f := Analyse(in, History{}, order).Failures[0]; f.Category != ai.TestBug || !strings.Contains(f.Reason.Detail, "bob") {
			t.Errorf("failure %+v, want bob's later triage", f)
		}
	}
	// Same time: the later record wins.
	again := triageOf(locatorTimeout, ai.Flaky, "carol", "run-6", day.Add(time.Hour))
	if f := Analyse(in, History{}, []Triage{older, newer, again}).Failures[0]; f.Category != ai.Flaky || !strings.Contains(f.Reason.Detail, "carol") {
		t.Errorf("failure %+v, want carol's, recorded last", f)
	}
	// Among near triages the nearest wins, then the most recent.
	nearA := triageOf(strings.Replace(locatorTimeout, "checkout.spec.ts", "cart.spec.ts", 1), ai.ProductBug, "dan", "run-2", day)
	nearB := triageOf(strings.Replace(locatorTimeout, "checkout.spec.ts", "cart.spec.ts", 1)+"\nextra words here", ai.Environment, "eve", "run-7", day.AddDate(0, 0, 1))
	nearC := triageOf(strings.Replace(locatorTimeout, "checkout.spec.ts", "wish.spec.ts", 1), ai.Flaky, "fay", "run-8", day.AddDate(0, 0, 2))
	f := Analyse(in, History{}, []Triage{nearA, nearB, nearC}).Failures[0]
	if f.Reason.Rule != "triage-near" || !strings.Contains(f.Reason.Detail, "fay") {
		t.Errorf("failure %+v, want fay's: as near as dan's and more recent, nearer than eve's", f)
	}
}

func TestTriagesWithoutAUsableCategoryAreIgnored(t *testing.T) {
	in := failedRun("run-9", [2]string{"places an order", locatorTimeout})
	for _, c := range []ai.Category{ai.Unknown, "not_a_category", ""} {
		f := Analyse(in, History{}, []Triage{triageOf(locatorTimeout, c, "ada", "run-1", day)}).Failures[0]
		if f.Reason.Rule != "locator-not-found" {
			t.Errorf("a triage as %q decided: %+v", c, f)
		}
	}
}

func TestTriageOverridesTheRulesButNotARetryPass(t *testing.T) {
	refused := "Error: page.goto: net::ERR_CONNECTION_REFUSED at http://web:3000/login"
	in := failedRun("run-9", [2]string{"logs in", refused})
	in.Tests = append(in.Tests, Test{TestResult: domain.TestResult{Name: "retried", Suite: "suite", Status: domain.TestFlaky, Retries: 1, Error: refused}})
	got := Analyse(in, History{}, []Triage{triageOf(refused, ai.ProductBug, "ada", "run-1", day)})
	if got.Failures[0].Category != ai.ProductBug {
		t.Errorf("failed test: %+v, want the triage's product bug", got.Failures[0])
	}
	if got.Failures[1].Category != ai.Flaky || got.Failures[1].Reason.Rule != "passed-on-retry" {
		t.Errorf("retried test: %+v, want flaky", got.Failures[1])
	}
}
