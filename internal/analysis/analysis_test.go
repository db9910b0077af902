package analysis

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"time"

	"verdict/internal/ai"
	"verdict/internal/ai/models"
	"verdict/internal/crypto/secretbox"
	"verdict/internal/domain"
	"verdict/internal/store"
	"verdict/internal/store/sqlstore"
)

// stubModels answers Analyse with finding or err, and accepts one key.
type stubModels struct {
	finding ai.Finding
	err     error
	key     string
	asked   []json.RawMessage
}

func (m *stubModels) Analyse(_ context.Context, _ models.Provider, _, _ string, evidence json.RawMessage) (ai.Finding, error) {
	m.asked = append(m.asked, evidence)
	return m.finding, m.err
}

func (m *stubModels) CheckKey(_ context.Context, _ models.Provider, key string) error {
	if key != m.key {
		return models.ErrKeyRefused
	}
	return nil
}

type fixture struct {
	st  *sqlstore.Store
	s   *Service
	org *domain.Organization
	m   *stubModels
}

func newFixture(tb testing.TB, serverKeys map[models.Provider]string) *fixture {
	tb.Helper()
	ctx := context.Background()
	st, err := sqlstore.Open(ctx, "", tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	if err := st.Migrate(ctx); err != nil {
		tb.Fatal(err)
	}
	org := &domain.Organization{ID: domain.NewID(), Name: "Org", Slug: "org", Plan: domain.PlanEnterprise, AIAnalysisEnabled: true}
	if err := st.Organizations().Create(ctx, org); err != nil {
		tb.Fatal(err)
	}
	box, err := secretbox.New([]byte(strings.Repeat("k", 32)))
	if err != nil {
		tb.Fatal(err)
	}
	m := &stubModels{key: "sk-good"}
	s := New(Deps{Store: st, Box: box, Models: m, ServerKeys: serverKeys, Log: slog.New(slog.DiscardHandler)})
	return &fixture{st: st, s: s, org: org, m: m}
}

// failedRun stores a FAILED run of n failed tests with a log of logBytes, and returns it.
func (f *fixture) failedRun(tb testing.TB, task string, n, logBytes int) *domain.Execution {
	tb.Helper()
	ctx := context.Background()
	exit := 1
	tests := make([]domain.TestResult, n)
	for i := range tests {
		tests[i] = domain.TestResult{Name: fmt.Sprintf("checkout step %d", i), Suite: "shop", Status: domain.TestFailed,
			Error: fmt.Sprintf("AssertionError: expected status 200 but got 500 for order %d\n    at Context.<anonymous> (tests/checkout.spec.ts:%d:17)\n    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)", 1000+i, 40+i%9)}
	}
	// The run prints its log while it runs, then fails: a finished run's log takes no more lines.
	e := &domain.Execution{ID: domain.NewID(), OrganizationID: f.org.ID, TaskID: task, Image: "shop-tests:1",
		Folder: "all", TimeoutSeconds: 600, Status: domain.ExecRunning, RunnerID: "fixture",
		QueuedAt: time.Now().Add(-time.Minute)}
	if err := f.st.Executions().Create(ctx, e); err != nil {
		tb.Fatal(err)
	}
	line := strings.Repeat("x", 1000) + "\n"
	chunk := strings.Repeat(line, 256) // 256 KiB
	for seq, written := 0, 0; written < logBytes; seq++ {
		if err := f.st.Logs().Append(ctx, e.ID, seq, chunk); err != nil {
			tb.Fatal(err)
		}
		written += len(chunk)
	}
	if err := f.st.Executions().Finish(ctx, e.ID, "fixture", store.Finish{Status: domain.ExecFailed, ExitCode: &exit,
		Tests: tests, Summary: domain.Summarize(tests), FinishedAt: time.Now()}); err != nil {
		tb.Fatal(err)
	}
	got, err := f.st.Executions().GetByID(ctx, e.ID)
	if err != nil {
		tb.Fatal(err)
	}
	return got
}

func TestAnalyseUsesHistoryAndTheModel(t *testing.T) {
	f := newFixture(t, map[models.Provider]string{models.OpenAI: "sk-server"})
	ctx := context.Background()
	first := f.failedRun(t, "first", 3, 1<<20)
	f.m.err = &models.Error{Provider: models.OpenAI, Kind: models.ErrRateLimited}
	a := f.s.Analyse(ctx, first)
	if a.Status != domain.AnalysisCompleted || a.Provider != "builtin" || a.Error == nil ||
		!strings.Contains(*a.Error, "openai:"+models.DefaultModels[models.OpenAI]) || len(f.m.asked) != 1 {
		t.Fatalf("with a failing model: %+v (error %v)", a, a.Error)
	}
	if len(a.Failures) != 3 || a.Failures[0].FirstSeenTaskID != "first" || a.Failures[0].Occurrences != 3 {
		t.Fatalf("failures of the first run: %+v", a.Failures)
	}
	// The evidence the model got is the built-in findings with the failing tests.
	var ev map[string]any
	if err := json.Unmarshal(f.m.asked[0], &ev); err != nil || !strings.Contains(string(f.m.asked[0]), "expected status 200 but got 500") {
		t.Fatalf("evidence: %v %s", err, f.m.asked[0])
	}

	f.m.err = nil
	f.m.finding = ai.Finding{Category: ai.ProductBug, Summary: "s", RootCause: "r", SuggestedFix: "f", Confidence: 0.7}
	second := f.failedRun(t, "second", 3, 4096)
	a = f.s.Analyse(ctx, second)
	if a.Provider != "openai" || a.Category != "product_bug" || a.Summary != "s" || a.Error != nil {
		t.Fatalf("with the model: %+v", a)
	}
	if a.Failures[0].FirstSeenTaskID != "first" || a.Failures[0].Occurrences != 6 {
		t.Fatalf("the same failure again: %+v", a.Failures[0])
	}
	// Analysed again, a run does not count itself twice.
	a = f.s.Analyse(ctx, second)
	if a.Failures[0].Occurrences != 6 {
		t.Fatalf("analysed again: %+v", a.Failures[0])
	}
}

// BenchmarkAnalyseLargeRun: the built-in analysis of a run with 200 failed tests and a
// 32 MiB log, as the run plane makes it (store reads included): time and memory per analysis.
func BenchmarkAnalyseLargeRun(b *testing.B) {
	f := newFixture(b, nil)
	run := f.failedRun(b, "large", 200, 32<<20)
	ctx := context.Background()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	b.ReportAllocs()
	for b.Loop() {
		if a := f.s.Analyse(ctx, run); a.Status != domain.AnalysisCompleted || len(a.Failures) != 200 {
			b.Fatalf("analysis: %+v", a)
		}
	}
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N)/(1<<20), "MB-allocated/op")
}
