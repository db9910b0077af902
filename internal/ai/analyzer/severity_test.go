package analyzer

import (
	"strings"
	"testing"

	"verdict/internal/ai"
	"verdict/internal/domain"
)

// TestMixedRunIsItsMostSevereCategoryWithTheOthersListed: a run with a product bug, a locator
// failure and a flaky test keeps each failure's own category, is labelled by the most severe
// (the product bug, though the locator failures are more), and lists the others.
func TestMixedRunIsItsMostSevereCategoryWithTheOthersListed(t *testing.T) {
	in := failedRun("run-1",
		[2]string{"shows the total", "Error: expect(locator).toHaveText(expected)\n\nLocator: getByTestId('total')\nExpected string: \"$42.00\"\nReceived string: \"$0.00\""},
		[2]string{"opens the cart", locatorTimeout}, [2]string{"opens the menu", locatorTimeout})
	in.Tests = append(in.Tests, Test{TestResult: domain.TestResult{Suite: "suite", Name: "pays", Status: domain.TestFlaky, Retries: 1, Error: locatorTimeout}})
	got := Analyse(in, History{}, nil)
	if got.Category != ai.ProductBug {
		t.Fatalf("run category %s, want the most severe: product_bug (%s)", got.Category, got.Summary)
	}
	want := map[string]ai.Category{"shows the total": ai.ProductBug, "opens the cart": ai.TestBug, "opens the menu": ai.TestBug, "pays": ai.Flaky}
	for _, f := range got.Failures {
		if f.Category != want[f.Test] {
			t.Errorf("failure %q is %s, want %s", f.Test, f.Category, want[f.Test])
		}
	}
	others := []CategoryCount{{ai.TestBug, 2}, {ai.Flaky, 1}}
	if len(got.OtherCategories) != len(others) {
		t.Fatalf("other categories %+v, want %+v", got.OtherCategories, others)
	}
	for i, o := range others {
		if got.OtherCategories[i] != o {
			t.Errorf("other categories %+v, want %+v", got.OtherCategories, others)
		}
	}
	if !strings.Contains(got.Summary, "Also: 2 are locators that found no element (test bug)") {
		t.Errorf("summary %q does not list the other failures", got.Summary)
	}
}

// TestABrokenEnvironmentExplainsTheRestOfTheRun: when most failures show the environment broken,
// the product-bug-looking failure after them is not the run's label.
func TestABrokenEnvironmentExplainsTheRestOfTheRun(t *testing.T) {
	refused := "Error: page.goto: net::ERR_CONNECTION_REFUSED at http://web:3000/login"
	got := Analyse(failedRun("run-1", [2]string{"a", refused}, [2]string{"b", refused}, [2]string{"c", serverError}), History{}, nil)
	if got.Category != ai.Environment || len(got.OtherCategories) != 1 || got.OtherCategories[0].Category != ai.ProductBug {
		t.Errorf("run %s, others %+v", got.Category, got.OtherCategories)
	}
}

// withCalibration runs f with a rule's calibration record replaced.
func withCalibration(t *testing.T, rule string, c ruleCalibration, f func()) {
	t.Helper()
	old, had := calibrated[rule]
	calibrated[rule] = c
	defer func() {
		if had {
			calibrated[rule] = old
		} else {
			delete(calibrated, rule)
		}
	}()
	f()
}

// TestUntrustedRuleGivesUnknownWithEvidence: a rule wrong too often on the corpus's training
// part does not decide; the failure is unknown and its evidence says what matched and why it
// was not trusted.
func TestUntrustedRuleGivesUnknownWithEvidence(t *testing.T) {
	in := failedRun("run-1")
	in.Tests = []Test{{TestResult: domain.TestResult{Suite: "org.acme.cart.CartTest", Name: "totals", Status: domain.TestFailed, Error: "java.lang.NullPointerException"},
		Stack: "java.lang.NullPointerException\n\tat org.acme.cart.CartTest.totals(CartTest.java:41)\n\tat java.base/jdk.internal.reflect.DirectMethodHandleAccessor.invoke(DirectMethodHandleAccessor.java:103)"}}
	withCalibration(t, "jvm-exception-in-test", ruleCalibration{TrainRight: 1, Train: 7}, func() {
		got := Analyse(in, History{}, nil)
		f := got.Failures[0]
		if got.Category != ai.Unknown || f.Category != ai.Unknown || f.Reason.Rule != "jvm-exception-in-test" ||
			!strings.Contains(f.Reason.Detail, "not trusted: it was right on 1 of 7") || !strings.Contains(got.RootCause, "wrong too often") {
			t.Errorf("run %s (%s), failure %+v", got.Category, got.RootCause, f)
		}
	})
	// Trusted, the same rule decides.
	withCalibration(t, "jvm-exception-in-test", ruleCalibration{TrainRight: 6, Train: 7, HeldOutRight: 3, HeldOut: 4}, func() {
		if f := Analyse(in, History{}, nil).Failures[0]; f.Category != ai.TestBug || f.Confidence != 0.75 {
			t.Errorf("trusted rule: failure %+v", f)
		}
	})
}

// TestConfidenceIsTheRulesMeasuredPrecision: a decided failure's confidence is its rule's
// held-out precision from the calibration table, not the rule's written strength; a rule with
// too few held-out failures keeps its strength.
func TestConfidenceIsTheRulesMeasuredPrecision(t *testing.T) {
	refused := failedRun("run-1", [2]string{"a", "Error: connect ECONNREFUSED 10.0.0.9:5432"})
	withCalibration(t, "connection-refused", ruleCalibration{TrainRight: 9, Train: 10, HeldOutRight: 7, HeldOut: 8}, func() {
		if c := Analyse(refused, History{}, nil).Failures[0].Confidence; c != 0.88 {
			t.Errorf("confidence %v, want the held-out precision 0.88", c)
		}
	})
	withCalibration(t, "connection-refused", ruleCalibration{TrainRight: 9, Train: 10, HeldOutRight: 1, HeldOut: 2}, func() {
		if c := Analyse(refused, History{}, nil).Failures[0].Confidence; c != 0.85 {
			t.Errorf("confidence %v, want the rule's strength 0.85 with 2 held-out failures", c)
		}
	})
}
