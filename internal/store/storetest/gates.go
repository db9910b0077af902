package storetest

import (
	"errors"
	"testing"
	"time"

	"verdict/internal/domain"
	"verdict/internal/store"
)

// testGates checks the release gates' parts of the store: a project's gate rules (never
// another organization's), a run's baseline (the newest run of the project finished before it,
// in one of the statuses, carrying every label; ties on the finish time broken by ID; never
// another organization's, another project's, or a run without a project but of another image),
// and that a finished run's list row shows the gate set after it ended once its tests are
// recorded (the list's caches keep only such rows).
func testGates(t *testing.T, open Opener) {
	t.Run("Rules", func(t *testing.T) {
		f := setup(t, open)
		o, other := f.org(), f.org()
		p := f.project(o.ID, "Web")
		repo := f.s.Projects()
		got, err := repo.GateRules(f.ctx, o.ID, p.ID)
		must(t, err)
		if got != nil {
			t.Fatalf("a new project's rules: %+v, want none", got)
		}
		rules := &domain.GateRules{MinTests: ptr(40), MaxFailed: ptr(0), MinPassRate: ptr(0.95), NoNewFailures: ptr(true),
			NoNewFlaky: ptr(false), MaxDurationSeconds: ptr(900), BaselineLabels: map[string]string{"branch": "main"}}
		must(t, repo.SetGateRules(f.ctx, o.ID, p.ID, rules))
		got, err = repo.GateRules(f.ctx, o.ID, p.ID)
		must(t, err)
		equal(t, "rules read back", got, rules)
		// The project itself is unchanged, and updating it keeps its rules.
		proj, err := repo.Get(f.ctx, o.ID, p.ID)
		must(t, err)
		equal(t, "project", proj, p)
		proj.Name = "Web 2"
		must(t, repo.Update(f.ctx, proj))
		got, err = repo.GateRules(f.ctx, o.ID, p.ID)
		must(t, err)
		equal(t, "rules after the project's update", got, rules)

		if _, err := repo.GateRules(f.ctx, other.ID, p.ID); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("another organization's project's rules: %v, want ErrNotFound", err)
		}
		if err := repo.SetGateRules(f.ctx, other.ID, p.ID, nil); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("setting another organization's project's rules: %v, want ErrNotFound", err)
		}
		must(t, repo.SetGateRules(f.ctx, o.ID, p.ID, nil))
		got, err = repo.GateRules(f.ctx, o.ID, p.ID)
		must(t, err)
		if got != nil {
			t.Fatalf("cleared rules: %+v, want none", got)
		}
	})

	t.Run("Baseline", func(t *testing.T) {
		f := setup(t, open)
		o, other := f.org(), f.org()
		p, q := f.project(o.ID, "Web"), f.project(o.ID, "API")
		finished := func(orgID, project, image string, status domain.ExecStatus, end time.Time, labels map[string]string) *domain.Execution {
			return f.runWith(orgID, end.Add(-time.Minute), func(e *domain.Execution) {
				e.ProjectID, e.Status, e.FinishedAt, e.Labels = project, status, ptr(end), labels
				if image != "" {
					e.Image = image
				}
			})
		}
		main := map[string]string{"branch": "main"}
		old := finished(o.ID, p.ID, "", domain.ExecPassed, base, main)
		failed := finished(o.ID, p.ID, "", domain.ExecFailed, base.Add(time.Hour), map[string]string{"branch": "main", "env": "ci"})
		finished(o.ID, p.ID, "", domain.ExecError, base.Add(2*time.Hour), main)     // not a baseline status
		finished(o.ID, p.ID, "", domain.ExecCancelled, base.Add(3*time.Hour), main) // nor this
		feature := finished(o.ID, p.ID, "", domain.ExecUnstable, base.Add(4*time.Hour), map[string]string{"branch": "feature"})
		finished(o.ID, q.ID, "", domain.ExecPassed, base.Add(5*time.Hour), main)                                  // another project
		finished(other.ID, p.ID, "", domain.ExecPassed, base.Add(5*time.Hour), main)                              // another organization
		f.runWith(o.ID, base.Add(5*time.Hour), func(e *domain.Execution) { e.ProjectID = p.ID; e.Labels = main }) // still PENDING
		run := finished(o.ID, p.ID, "", domain.ExecFailed, base.Add(6*time.Hour), map[string]string{"branch": "feature"})
		later := finished(o.ID, p.ID, "", domain.ExecPassed, base.Add(7*time.Hour), main) // finished after the run

		statuses := []domain.ExecStatus{domain.ExecPassed, domain.ExecFailed, domain.ExecUnstable}
		baseline := func(labels []domain.Label, of *domain.Execution) string {
			t.Helper()
			b, err := f.s.Executions().Baseline(f.ctx, of.OrganizationID, store.BaselineQuery{ProjectID: of.ProjectID,
				Image: of.Image, Labels: labels, Statuses: statuses, Before: *of.FinishedAt, BeforeID: of.ID})
			must(t, err)
			if b == nil {
				return ""
			}
			if b.OrganizationID != of.OrganizationID {
				t.Fatalf("baseline %+v: another organization's", b)
			}
			return b.TaskID
		}
		equal(t, "no labels: the newest finished before", baseline(nil, run), feature.TaskID)
		equal(t, "branch:main", baseline([]domain.Label{{Key: "branch", Value: "main"}}, run), failed.TaskID)
		equal(t, "every label", baseline([]domain.Label{{Key: "branch", Value: "main"}, {Key: "env", Value: "ci"}}, run), failed.TaskID)
		equal(t, "a label no run has", baseline([]domain.Label{{Key: "branch", Value: "release"}}, run), "")
		equal(t, "the first run has none", baseline(nil, old), "")
		equal(t, "a later run's", baseline([]domain.Label{{Key: "branch", Value: "main"}}, later), failed.TaskID)

		// Two runs finished at the same instant: the one with the smaller ID counts as before.
		tieA := finished(o.ID, q.ID, "", domain.ExecPassed, base.Add(9*time.Hour), nil)
		tieB := finished(o.ID, q.ID, "", domain.ExecPassed, base.Add(9*time.Hour), nil)
		first, second := tieA, tieB
		if second.ID < first.ID {
			first, second = second, first
		}
		equal(t, "a tie: the smaller ID before", baseline(nil, second), first.TaskID)
		if got := baseline(nil, first); got == second.TaskID {
			t.Fatal("a tie: each run is the other's baseline")
		}

		// Runs without a project: by image.
		imgOld := finished(o.ID, "", "img:a", domain.ExecPassed, base, nil)
		finished(o.ID, "", "img:b", domain.ExecPassed, base.Add(time.Hour), nil)
		finished(o.ID, p.ID, "img:a", domain.ExecPassed, base.Add(time.Hour), nil) // of a project
		imgRun := finished(o.ID, "", "img:a", domain.ExecFailed, base.Add(2*time.Hour), nil)
		equal(t, "without a project: the same image's", baseline(nil, imgRun), imgOld.TaskID)

		// No status asked: none.
		b, err := f.s.Executions().Baseline(f.ctx, o.ID, store.BaselineQuery{ProjectID: p.ID, Before: *run.FinishedAt, BeforeID: run.ID})
		must(t, err)
		if b != nil {
			t.Fatalf("no statuses: %s", b.TaskID)
		}
	})

	t.Run("TestIDs", func(t *testing.T) {
		f := setup(t, open)
		o, other := f.org(), f.org()
		p := f.project(o.ID, "Web")
		run := f.runWith(o.ID, base, func(e *domain.Execution) {
			e.ProjectID, e.Status, e.FinishedAt = p.ID, domain.ExecPassed, ptr(base.Add(time.Minute))
		})
		outs := []domain.TestOutcome{{Suite: "a", Name: "x", Status: domain.TestPassed}, {Suite: "b", Name: "x", Status: domain.TestPassed},
			{Suite: "a", Name: "y", Status: domain.TestFailed}}
		must(t, f.s.Tests().Record(f.ctx, store.RunResults{Run: run, Outcomes: outs}))
		scope := domain.TestScope(p.ID, "")
		tests, _, err := f.s.Tests().List(f.ctx, o.ID, store.TestFilter{ProjectID: p.ID, Limit: 10})
		must(t, err)
		want := map[store.TestName]string{}
		for _, x := range tests {
			if x.Suite == "a" {
				want[store.TestName{Suite: x.Suite, Name: x.Name}] = x.ID
			}
		}
		// a/x and a/y, not b/x (the same name in another suite), nothing for an unknown test.
		got, err := f.s.Tests().IDs(f.ctx, o.ID, scope, []store.TestName{{Suite: "a", Name: "x"}, {Suite: "a", Name: "y"}, {Suite: "a", Name: "z"}})
		must(t, err)
		if len(want) != 2 {
			t.Fatalf("recorded tests: %+v", tests)
		}
		equal(t, "IDs", got, want)
		got, err = f.s.Tests().IDs(f.ctx, other.ID, scope, []store.TestName{{Suite: "a", Name: "x"}})
		must(t, err)
		equal(t, "another organization's IDs", got, map[store.TestName]string{})
	})

	t.Run("GateShownOnceRecorded", func(t *testing.T) {
		f := setup(t, open)
		o := f.org()
		p := f.project(o.ID, "Web")
		run := f.runWith(o.ID, base, func(e *domain.Execution) {
			e.ProjectID, e.Status, e.FinishedAt = p.ID, domain.ExecFailed, ptr(base.Add(time.Minute))
		})
		list := func() *domain.Execution {
			t.Helper()
			page, _, err := f.s.Executions().List(f.ctx, o.ID, store.ExecutionFilter{ProjectID: p.ID, Limit: 10})
			must(t, err)
			if len(page) != 1 {
				t.Fatalf("list: %d runs", len(page))
			}
			return &page[0]
		}
		if e := list(); e.Gate != nil || e.TestsRecorded {
			t.Fatalf("a run just ended: gate %+v, recorded %v", e.Gate, e.TestsRecorded)
		}
		// The gate is judged in the transaction that records the run's tests.
		gate := &domain.Gate{Status: domain.GateFailed, Rules: []domain.GateRule{{Rule: domain.RuleMaxFailed, Actual: 2,
			Message: "2 failed tests, at most 0 allowed"}}, BaselineTaskID: "task-0", EvaluatedAt: base.Add(2 * time.Minute)}
		must(t, f.s.InTx(f.ctx, func(tx store.Store) error {
			if err := tx.Tests().Record(f.ctx, store.RunResults{Run: run}); err != nil {
				return err
			}
			return tx.Executions().SetGate(f.ctx, o.ID, run.ID, gate)
		}))
		for i := range 2 { // read, then served by the list's caches
			e := list()
			equal(t, "the listed run's gate", e.Gate, gate)
			if !e.TestsRecorded {
				t.Fatalf("read %d: the run is not marked recorded", i)
			}
		}
		equal(t, "the run's gate", f.getRun(o.ID, run.TaskID).Gate, gate)
		if err := f.s.Executions().SetGate(f.ctx, domain.NewID(), run.ID, nil); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("another organization's run's gate: %v", err)
		}
	})
}
