package analysis

import (
	"context"
	"strings"
	"testing"
	"time"

	"verdict/internal/domain"
	"verdict/internal/store"
)

// TestStoredAnalysisKeepsEachTestsCategory: the analysis a run keeps has each failed test's own
// category, confidence and evidence, and the run's other categories, most severe first.
func TestStoredAnalysisKeepsEachTestsCategory(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	exit := 1
	tests := []domain.TestResult{
		{Suite: "cart.spec.ts", Name: "shows the total", Status: domain.TestFailed,
			Error: "Error: expect(locator).toHaveText(expected)\n\nLocator: getByTestId('total')\nExpected string: \"$42.00\"\nReceived string: \"$0.00\""},
		{Suite: "cart.spec.ts", Name: "opens the cart", Status: domain.TestFailed,
			Error: "TimeoutError: locator.click: Timeout 15000ms exceeded.\nCall log:\n  - waiting for getByRole('button', { name: 'Cart' })"},
	}
	e := &domain.Execution{ID: domain.NewID(), OrganizationID: f.org.ID, TaskID: "mixed", Image: "shop-tests:1",
		Folder: "all", TimeoutSeconds: 600, Status: domain.ExecRunning, RunnerID: "fixture", QueuedAt: time.Now().Add(-time.Minute)}
	if err := f.st.Executions().Create(ctx, e); err != nil {
		t.Fatal(err)
	}
	if err := f.st.Executions().Finish(ctx, e.ID, "fixture", store.Finish{Status: domain.ExecFailed, ExitCode: &exit,
		Tests: tests, Summary: domain.Summarize(tests), FinishedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	run, err := f.st.Executions().GetByID(ctx, e.ID)
	if err != nil {
		t.Fatal(err)
	}
	a := f.s.Analyse(ctx, run)
	if a.Category != "product_bug" || len(a.Failures) != 2 {
		t.Fatalf("analysis %+v", a)
	}
	byTest := map[string]domain.FailureRef{}
	for _, fr := range a.Failures {
		byTest[fr.Test] = fr
	}
	if c := byTest["shows the total"]; c.Category != "product_bug" || c.Confidence <= 0 || c.Evidence == "" {
		t.Errorf("the content mismatch: %+v", c)
	}
	if c := byTest["opens the cart"]; c.Category != "test_bug" || !strings.Contains(c.Evidence, "locator") {
		t.Errorf("the locator failure: %+v", c)
	}
	if len(a.OtherCategories) != 1 || a.OtherCategories[0] != (domain.CategoryCount{Category: "test_bug", Failures: 1}) {
		t.Errorf("other categories %+v", a.OtherCategories)
	}
}
