package control

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"verdict/internal/domain"
	"verdict/internal/store"
	"verdict/internal/store/sqlstore"
)

// stubAnalyst answers with a fixed analysis, holding the runs named in hold until released.
type stubAnalyst struct {
	mu      sync.Mutex
	seen    map[string]domain.Execution // by taskId: the run as the analyst got it
	hold    map[string]chan struct{}
	started chan string
}

func newStubAnalyst(hold ...string) *stubAnalyst {
	a := &stubAnalyst{seen: map[string]domain.Execution{}, hold: map[string]chan struct{}{}, started: make(chan string, 10)}
	for _, task := range hold {
		a.hold[task] = make(chan struct{})
	}
	return a
}

func (a *stubAnalyst) Analyse(ctx context.Context, run *domain.Execution) *domain.Analysis {
	a.mu.Lock()
	a.seen[run.TaskID] = *run
	gate := a.hold[run.TaskID]
	a.mu.Unlock()
	a.started <- run.TaskID
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
		}
	}
	return &domain.Analysis{Status: domain.AnalysisCompleted, Provider: "builtin", Model: "builtin",
		Category: "product_bug", Summary: "explained " + run.TaskID, Failures: []domain.FailureRef{}, Evidence: []string{}}
}

func (a *stubAnalyst) got(task string) (domain.Execution, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	e, ok := a.seen[task]
	return e, ok
}

func setAnalysis(t *testing.T, f *runnerFixture, on bool) {
	t.Helper()
	if err := f.st.Organizations().UpdateSettings(f.ctx, f.org.ID, f.org.Name, on, domain.Features{}); err != nil {
		t.Fatal(err)
	}
}

// A failed run of an organization with analysis on goes RUNNING → ANALYZING (its outcome
// recorded, not yet finished) → FAILED with the analysis. While it is analysed it keeps its
// runner slot: with one slot, the next run waits PENDING until the first is settled. With
// analysis off, or a passed run, there is no analysis step.
func TestPostRunChainAnalysesFailedRuns(t *testing.T) {
	b := newFakeBackend(reportFiles)
	b.autoExit, b.exitCode = true, 1
	f := newRunnerFixture(t, b, domain.PlanEnterprise, 1)
	analyst := newStubAnalyst("a")
	f.plane.Analyst = analyst
	setAnalysis(t, f, true)

	f.queue("a")
	f.eventually("run a to be ANALYZING", func() bool { return f.get("a").Status == domain.ExecAnalyzing })
	if e := f.get("a"); e.ExitCode == nil || *e.ExitCode != 1 || e.Summary.Total != 1 || e.FinishedAt != nil || e.Analysis != nil {
		t.Fatalf("ANALYZING run a: exit %v, summary %+v, finished %v, analysis %v", e.ExitCode, e.Summary, e.FinishedAt, e.Analysis)
	}
	f.queue("b")
	f.never("run b started while run a, analysed, held the only slot", f.started(2))
	if e := f.get("b"); e.Status != domain.ExecPending {
		t.Fatalf("run b is %s while run a is analysed", e.Status)
	}
	got, _ := analyst.got("a")
	if got.Status != domain.ExecFailed || got.ExitCode == nil || *got.ExitCode != 1 || len(got.Tests) != 1 || got.FinishedAt == nil {
		t.Fatalf("the analyst got run a as %+v", got)
	}
	close(analyst.hold["a"])
	f.eventually("run a to be FAILED", func() bool { return f.get("a").Status.Final() })
	if e := f.get("a"); e.Status != domain.ExecFailed || e.Analysis == nil || e.Analysis.Summary != "explained a" || e.FinishedAt == nil {
		t.Fatalf("run a: %s, analysis %+v", e.Status, e.Analysis)
	}
	f.eventually("run b to be settled once run a is", func() bool { return f.get("b").Status.Final() })
	if e := f.get("b"); e.Status != domain.ExecFailed || e.Analysis == nil || e.Analysis.Summary != "explained b" {
		t.Fatalf("run b: %s, analysis %+v", e.Status, e.Analysis)
	}

	setAnalysis(t, f, false)
	f.queue("c")
	f.eventually("run c to finish", func() bool { return f.get("c").Status.Final() })
	if e := f.get("c"); e.Status != domain.ExecFailed || e.Analysis != nil {
		t.Fatalf("run c with analysis off: %s, analysis %+v", e.Status, e.Analysis)
	}
	setAnalysis(t, f, true)
	b.mu.Lock()
	b.exitCode = 0
	b.mu.Unlock()
	f.queue("d")
	f.eventually("run d to finish", func() bool { return f.get("d").Status.Final() })
	if e := f.get("d"); e.Status != domain.ExecPassed || e.Analysis != nil {
		t.Fatalf("passed run d: %s, analysis %+v", e.Status, e.Analysis)
	}
	for _, task := range []string{"c", "d"} {
		if _, ok := analyst.got(task); ok {
			t.Fatalf("run %s was analysed", task)
		}
	}
}

// A run left ANALYZING by a runner that died keeps its verdict: the reaper settles it FAILED
// once its lease lapses, and a restart of its runner settles it at once; both say why it has
// no explanation.
func TestStuckAnalysisKeepsItsVerdict(t *testing.T) {
	ctx := context.Background()
	st, err := sqlstore.Open(ctx, "", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	org := &domain.Organization{ID: domain.NewID(), Name: "Org", Slug: "org", Plan: domain.PlanEnterprise}
	if err := st.Organizations().Create(ctx, org); err != nil {
		t.Fatal(err)
	}
	ex := st.Executions()
	tests := []domain.TestResult{{Name: "login", Status: domain.TestFailed, Error: "expected 200, got 500"}}
	now := time.Now()
	analysing := func(task, runner string, lease time.Duration) {
		t.Helper()
		e := &domain.Execution{ID: domain.NewID(), OrganizationID: org.ID, TaskID: task, Image: "suite:pass",
			Folder: "all", TimeoutSeconds: 60, Status: domain.ExecPending, QueuedAt: now.Add(-time.Hour)}
		if err := ex.Create(ctx, e); err != nil {
			t.Fatal(err)
		}
		claimed, err := ex.Claim(ctx, runner, "", "", now, now.Add(lease), func(domain.Plan) int { return 10 })
		if err != nil || claimed == nil || claimed.ID != e.ID {
			t.Fatalf("claim for %s: %+v, %v", runner, claimed, err)
		}
		exit := 1
		if err := ex.Finish(ctx, e.ID, runner, store.Finish{Status: domain.ExecAnalyzing, ExitCode: &exit, Tests: tests,
			Summary: domain.Summarize(tests)}); err != nil {
			t.Fatal(err)
		}
	}
	check := func(task, reason string) {
		t.Helper()
		e, err := ex.Get(ctx, org.ID, task)
		if err != nil {
			t.Fatal(err)
		}
		if e.Status != domain.ExecFailed || len(e.Tests) != 1 || e.Analysis == nil || e.Analysis.Status != domain.AnalysisFailed ||
			e.Analysis.Error == nil || !strings.Contains(*e.Analysis.Error, reason) {
			t.Fatalf("run %s: %s, tests %d, analysis %+v", task, e.Status, len(e.Tests), e.Analysis)
		}
	}
	log := slog.New(slog.DiscardHandler)

	analysing("lost", "ghost", time.Minute)
	at := now
	reaper := &Reaper{Store: st, Clock: func() time.Time { return at }, Log: log}
	reaper.Sweep(ctx) // a reaper's first sweep gives every lease the grace first (the server may have been down)
	at = now.Add(2 * time.Minute)
	reaper.Sweep(ctx)
	check("lost", "runner lost")

	analysing("restarted", "earlier-life", time.Hour)
	if err := Reconcile(ctx, st, newFakeBackend(nil), "earlier-life", domain.SystemClock, nil, log); err != nil {
		t.Fatal(err)
	}
	check("restarted", "server restarted")
}
