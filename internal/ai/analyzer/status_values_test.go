package analyzer

import (
	"testing"

	"verdict/internal/ai"
)

// TestCountsAreNotHTTPStatuses keeps assertion values that are counts from being read as the
// statuses an application answered: JUnit's "expected: <119> but was: <120>" compares numbers,
// and a run that counted wrong is not "an unexpected HTTP status".
func TestCountsAreNotHTTPStatuses(t *testing.T) {
	for text, want := range map[string]int{
		"org.opentest4j.AssertionFailedError: expected: <119> but was: <120>": 0,
		"junit.framework.AssertionFailedError: expected:<250> but was:<251>":  0,
		"status: 256":                         0,
		"expected: <200> but was: <502>":      502,
		"Status expected:<201> but was:<400>": 400,
	} {
		if got, _ := newFailureText(text, "").httpStatus(); got != want {
			t.Errorf("%q: status %d, want %d", text, got, want)
		}
	}
	m := applyRules(newFailureText("org.opentest4j.AssertionFailedError: expected: <119> but was: <120>", ""), newRunContext(""))
	if m.rule.id == "status-mismatch" || m.rule.category != ai.ProductBug {
		t.Errorf("a count mismatch is read by rule %s (%s), want an assertion mismatch", m.rule.id, m.rule.category)
	}
}
