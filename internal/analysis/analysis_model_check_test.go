package analysis

import (
	"context"
	"strings"
	"testing"

	"verdict/internal/ai"
	"verdict/internal/ai/models"
)

// TestModelAnswerIsCheckedAgainstTheEvidence: a model's category that no failed test shows,
// against a built-in category its rules are sure of, is refused and the built-in analysis
// stands, saying why; a category the evidence supports is taken.
func TestModelAnswerIsCheckedAgainstTheEvidence(t *testing.T) {
	f := newFixture(t, map[models.Provider]string{models.OpenAI: "sk-server"})
	ctx := context.Background()
	run := f.failedRun(t, "checked", 2, 4096) // HTTP 500 answers: product bugs, surely
	f.m.finding = ai.Finding{Category: ai.Flaky, Summary: "s", RootCause: "r", SuggestedFix: "x", Confidence: 0.9}
	a := f.s.Analyse(ctx, run)
	if a.Provider != "builtin" || a.Category != string(ai.ProductBug) || a.Error == nil || !strings.Contains(*a.Error, "answered flaky, which no failed test's evidence shows") {
		t.Fatalf("a contradicting model: %+v (error %v)", a, a.Error)
	}
	f.m.finding.Category = ai.ProductBug
	if a = f.s.Analyse(ctx, run); a.Provider != "openai" || a.Summary != "s" || a.Error != nil {
		t.Fatalf("an agreeing model: %+v (error %v)", a, a.Error)
	}
}
