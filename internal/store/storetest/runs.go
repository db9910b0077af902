package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"verdict/internal/domain"
	"verdict/internal/store"
)

// RunExecutions runs the contract suite of the execution repositories (projects, executions
// and the run queue, logs); every leaf test opens its own store.
func RunExecutions(t *testing.T, open Opener) {
	t.Run("Projects", func(t *testing.T) { testProjects(t, open) })
	t.Run("Executions", func(t *testing.T) { testExecutions(t, open) })
	t.Run("Claim", func(t *testing.T) { testClaim(t, open) })
	t.Run("Leases", func(t *testing.T) { testLeases(t, open) })
	t.Run("Logs", func(t *testing.T) { testLogs(t, open) })
	t.Run("Outcomes", func(t *testing.T) { testOutcomes(t, open) })
	t.Run("CancelRequested", func(t *testing.T) { testCancelRequested(t, open) })
	t.Run("Retention", func(t *testing.T) { testRetention(t, open) })
}

func execID(e domain.Execution) string  { return e.ID }
func projectID(p domain.Project) string { return p.ID }

// limitsFrom is a limitFor answering from m, and m's free-plan value for other plans.
func limitsFrom(m map[domain.Plan]int) func(domain.Plan) int {
	return func(p domain.Plan) int {
		if n, ok := m[p]; ok {
			return n
		}
		return m[domain.PlanFree]
	}
}

// orgOnPlan creates an organization on plan.
func (f *fixture) orgOnPlan(plan domain.Plan) *domain.Organization {
	f.t.Helper()
	o := f.org()
	must(f.t, f.s.Organizations().UpdatePlan(f.ctx, o.ID, plan, domain.Billing{}))
	o.Plan = plan
	return o
}

// project creates a project with every field set; each later one is created a minute later.
func (f *fixture) project(orgID, name string) *domain.Project {
	f.t.Helper()
	n := f.next()
	at := base.Add(time.Duration(n) * time.Minute)
	p := &domain.Project{
		ID: domain.NewID(), OrganizationID: orgID, Name: name, Image: fmt.Sprintf("registry.example.com/suite:%d", n),
		TargetURLs:    map[string]string{"staging": "https://staging.example.com", "production": "https://example.com"},
		DefaultFolder: "tests/e2e", TimeoutSeconds: 900, ReportFolders: []string{"playwright-report", "junit"},
		EnvVars:   []domain.EnvVar{{Key: "USER", Value: "alice"}, {Key: "TOKEN", Value: "v1:c2VhbGVk", Secret: true}},
		CreatedAt: at, UpdatedAt: at,
	}
	must(f.t, f.s.Projects().Create(f.ctx, p))
	return p
}

// run queues a PENDING execution of orgID at queuedAt.
func (f *fixture) run(orgID string, queuedAt time.Time) *domain.Execution {
	f.t.Helper()
	return f.runWith(orgID, queuedAt, nil)
}

// runWith queues an execution after edit has changed the defaults (status, image, ...).
func (f *fixture) runWith(orgID string, queuedAt time.Time, edit func(e *domain.Execution)) *domain.Execution {
	f.t.Helper()
	n := f.next()
	e := &domain.Execution{
		ID: domain.NewID(), OrganizationID: orgID, TaskID: fmt.Sprintf("task-%d", n), Image: "suite:pass",
		Folder: "all", TimeoutSeconds: 600, Status: domain.ExecPending, QueuedAt: queuedAt,
	}
	if edit != nil {
		edit(e)
	}
	must(f.t, f.s.Executions().Create(f.ctx, e))
	return e
}

func (f *fixture) getRun(orgID, taskID string) *domain.Execution {
	f.t.Helper()
	e, err := f.s.Executions().Get(f.ctx, orgID, taskID)
	must(f.t, err)
	return e
}

// claim claims for runner with a lease of a minute from now.
func (f *fixture) claim(runner string, now time.Time, limitFor func(domain.Plan) int) *domain.Execution {
	f.t.Helper()
	e, err := f.s.Executions().Claim(f.ctx, runner, "", "", now, now.Add(time.Minute), limitFor)
	must(f.t, err)
	return e
}

// claimed is e as Claim returns it.
func claimed(e *domain.Execution, runner string, now time.Time) *domain.Execution {
	c := *e
	c.Status, c.RunnerID, c.QueueReason = domain.ExecRunning, runner, ""
	c.StartedAt, c.LeaseUntil = ptr(now), ptr(now.Add(time.Minute))
	return &c
}

func passed(at time.Time) store.Finish {
	return store.Finish{Status: domain.ExecPassed, ExitCode: ptr(0), FinishedAt: at,
		Summary: domain.Summary{Total: 1, Passed: 1}, Tests: []domain.TestResult{{Name: "t", Status: domain.TestPassed}}}
}

// oneSlot is the plan table's shape with one slot on the free plan.
var oneSlot = limitsFrom(map[domain.Plan]int{domain.PlanFree: 1, domain.PlanTeam: 2, domain.PlanEnterprise: -1})

func testProjects(t *testing.T, open Opener) {
	t.Run("CreateGetListCount", func(t *testing.T) {
		f := setup(t, open)
		o := f.org()
		a, b := f.project(o.ID, "Web"), f.project(o.ID, "API")
		got, err := f.s.Projects().Get(f.ctx, o.ID, a.ID)
		must(t, err)
		equal(t, "Get", got, a)
		minimal := &domain.Project{ID: domain.NewID(), OrganizationID: o.ID, Name: "Bare",
			CreatedAt: base.Add(time.Hour), UpdatedAt: base.Add(time.Hour)}
		must(t, f.s.Projects().Create(f.ctx, minimal))
		got, err = f.s.Projects().Get(f.ctx, o.ID, minimal.ID)
		must(t, err)
		equal(t, "Get without lists or variables", got, minimal)

		all, err := f.s.Projects().List(f.ctx, o.ID)
		must(t, err)
		equal(t, "List oldest first", ids(all, projectID), []string{a.ID, b.ID, minimal.ID})
		n, err := f.s.Projects().Count(f.ctx, o.ID)
		must(t, err)
		equal(t, "Count", n, 3)

		empty := f.org()
		all, err = f.s.Projects().List(f.ctx, empty.ID)
		must(t, err)
		if all == nil || len(all) != 0 {
			t.Errorf("List of an organization without projects = %#v, want empty non-nil", all)
		}
	})

	t.Run("UpdateDelete", func(t *testing.T) {
		f := setup(t, open)
		o := f.org()
		p := f.project(o.ID, "Web")
		up := *p
		up.Name, up.Image, up.DefaultFolder, up.TimeoutSeconds = "Web 2", "suite:2", "smoke", 60
		up.TargetURLs = map[string]string{"development": "http://localhost:3000"}
		up.ReportFolders = []string{}
		up.EnvVars = []domain.EnvVar{{Key: "A", Value: "v1:bmV3", Secret: true}}
		up.UpdatedAt = base.Add(24 * time.Hour)
		up.CreatedAt = base.Add(99 * time.Hour) // ignored: creation time never changes
		must(t, f.s.Projects().Update(f.ctx, &up))
		got, err := f.s.Projects().Get(f.ctx, o.ID, p.ID)
		must(t, err)
		up.CreatedAt = p.CreatedAt
		equal(t, "after Update", got, &up)

		must(t, f.s.Projects().Delete(f.ctx, o.ID, p.ID))
		_, err = f.s.Projects().Get(f.ctx, o.ID, p.ID)
		wantErr(t, "Get deleted", err, store.ErrNotFound)
		wantErr(t, "Delete twice", f.s.Projects().Delete(f.ctx, o.ID, p.ID), store.ErrNotFound)
		wantErr(t, "Update deleted", f.s.Projects().Update(f.ctx, &up), store.ErrNotFound)
	})

	t.Run("NameUniquePerOrganization", func(t *testing.T) {
		f := setup(t, open)
		o, other := f.org(), f.org()
		web := f.project(o.ID, "Web")
		api := f.project(o.ID, "API")
		dup := &domain.Project{ID: domain.NewID(), OrganizationID: o.ID, Name: "Web", CreatedAt: base, UpdatedAt: base}
		wantErr(t, "Create with a taken name", f.s.Projects().Create(f.ctx, dup), store.ErrConflict)
		rename := *api
		rename.Name = "Web"
		wantErr(t, "Update to a taken name", f.s.Projects().Update(f.ctx, &rename), store.ErrConflict)
		f.project(other.ID, "Web") // another organization may use the name
		f.project(o.ID, "web")     // names compare exactly
		got, err := f.s.Projects().Get(f.ctx, o.ID, api.ID)
		must(t, err)
		equal(t, "project refused a taken name", got, api)
		_ = web
	})

	t.Run("TenantIsolation", func(t *testing.T) {
		f := setup(t, open)
		a, b := f.org(), f.org()
		p := f.project(a.ID, "Web")
		f.project(b.ID, "Other")
		_, err := f.s.Projects().Get(f.ctx, b.ID, p.ID)
		wantErr(t, "Get from another organization", err, store.ErrNotFound)
		steal := *p
		steal.OrganizationID, steal.Name, steal.Image = b.ID, "Stolen", "evil:latest"
		wantErr(t, "Update from another organization", f.s.Projects().Update(f.ctx, &steal), store.ErrNotFound)
		wantErr(t, "Delete from another organization", f.s.Projects().Delete(f.ctx, b.ID, p.ID), store.ErrNotFound)
		list, err := f.s.Projects().List(f.ctx, b.ID)
		must(t, err)
		equal(t, "other organization's list", len(list), 1)
		n, err := f.s.Projects().Count(f.ctx, b.ID)
		must(t, err)
		equal(t, "other organization's count", n, 1)
		got, err := f.s.Projects().Get(f.ctx, a.ID, p.ID)
		must(t, err)
		equal(t, "project untouched", got, p)
	})
}

func testExecutions(t *testing.T, open Opener) {
	t.Run("CreateGet", func(t *testing.T) {
		f := setup(t, open)
		o := f.org()
		full := f.runWith(o.ID, base, func(e *domain.Execution) {
			e.ProjectID, e.Command, e.Environment, e.BaseURL = domain.NewID(), "npx playwright test", "staging",
				"https://staging.example.com"
			e.ReportFolders, e.EnvCipher, e.EnvNames = []string{"playwright-report"}, "v1:c2VhbGVk", []string{"TOKEN", "USER"}
			e.TriggeredBy, e.ViaAPIKey = domain.NewID(), true
			e.Status, e.QueueReason, e.Error, e.ExitCode = domain.ExecFailed, "", "1 test failed", ptr(1)
			e.StartedAt, e.FinishedAt = ptr(base.Add(time.Second)), ptr(base.Add(time.Minute))
			e.RunnerID, e.ContainerID, e.LeaseUntil, e.CancelRequested = "runner-1", "c0ffee", ptr(base.Add(time.Hour)), true
			e.RunnerInstance = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"
			e.Summary = domain.Summary{Total: 3, Passed: 1, Failed: 1, Skipped: 0, Flaky: 1}
			e.Tests = []domain.TestResult{
				{Name: "logs in", Suite: "auth", Status: domain.TestPassed, DurationMs: 1200},
				{Name: "pays", Suite: "billing", Status: domain.TestFailed, DurationMs: 3400, Error: "expected 200\x00 got 500"},
				{Name: "searches", Suite: "search", Status: domain.TestFlaky, DurationMs: 800, Retries: 2},
			}
			e.ReportDirs, e.ReportBytes, e.Notes = []string{"playwright-report"}, 123456789, []string{"reports dropped"}
			e.ReportIndexes = []string{"playwright-report"}
		})
		equal(t, "Get every field", f.getRun(o.ID, full.TaskID), full)
		byID, err := f.s.Executions().GetByID(f.ctx, full.ID)
		must(t, err)
		equal(t, "GetByID", byID, full)

		minimal := f.run(o.ID, base.Add(time.Second))
		equal(t, "Get a fresh PENDING run", f.getRun(o.ID, minimal.TaskID), minimal)

		noID := &domain.Execution{OrganizationID: o.ID, TaskID: "given-task", Image: "x", Status: domain.ExecPending,
			QueuedAt: base}
		must(t, f.s.Executions().Create(f.ctx, noID))
		if !domain.IsObjectID(noID.ID) {
			t.Errorf("Create left ID %q", noID.ID)
		}

		_, err = f.s.Executions().Get(f.ctx, o.ID, "missing")
		wantErr(t, "Get unknown", err, store.ErrNotFound)
		_, err = f.s.Executions().GetByID(f.ctx, domain.NewID())
		wantErr(t, "GetByID unknown", err, store.ErrNotFound)
	})

	t.Run("TaskIDUniquePerOrganization", func(t *testing.T) {
		f := setup(t, open)
		a, b := f.org(), f.org()
		ea := f.runWith(a.ID, base, func(e *domain.Execution) { e.TaskID = "nightly" })
		err := f.s.Executions().Create(f.ctx, &domain.Execution{ID: domain.NewID(), OrganizationID: a.ID,
			TaskID: "nightly", Image: "other", Status: domain.ExecPending, QueuedAt: base})
		wantErr(t, "taskId in use in the organization", err, store.ErrConflict)
		eb := f.runWith(b.ID, base, func(e *domain.Execution) { e.TaskID = "nightly"; e.Image = "b-image" })
		equal(t, "organization A's run", f.getRun(a.ID, "nightly"), ea)
		equal(t, "organization B's run with the same taskId", f.getRun(b.ID, "nightly"), eb)
		err = f.s.Executions().Create(f.ctx, &domain.Execution{ID: ea.ID, OrganizationID: b.ID, TaskID: "fresh",
			Image: "x", Status: domain.ExecPending, QueuedAt: base})
		wantErr(t, "ID in use", err, store.ErrConflict)

		// A conflict inside a transaction leaves it usable: the caller retries with another taskId.
		retried := &domain.Execution{ID: domain.NewID(), OrganizationID: a.ID, TaskID: "nightly-2", Image: "x",
			Status: domain.ExecPending, QueuedAt: base}
		must(t, f.s.InTx(f.ctx, func(tx store.Store) error {
			err := tx.Executions().Create(f.ctx, &domain.Execution{ID: domain.NewID(), OrganizationID: a.ID,
				TaskID: "nightly", Image: "x", Status: domain.ExecPending, QueuedAt: base})
			wantErr(t, "taskId in use, in a transaction", err, store.ErrConflict)
			return tx.Executions().Create(f.ctx, retried)
		}))
		equal(t, "run created after the conflict", f.getRun(a.ID, "nightly-2"), retried)
		n, err := f.s.Executions().CountSince(f.ctx, a.ID, base)
		must(t, err)
		equal(t, "runs counted (a refused one leaves no ledger row)", n, 2)

		// Cancelling or deleting one organization's run leaves the other's.
		now := base.Add(time.Minute)
		cancelled, err := f.s.Executions().RequestCancel(f.ctx, a.ID, "nightly", now)
		must(t, err)
		equal(t, "cancelled at once", cancelled, true)
		equal(t, "B's run after A's cancel", f.getRun(b.ID, "nightly"), eb)
		must(t, f.s.Executions().Delete(f.ctx, a.ID, "nightly"))
		equal(t, "B's run after A's delete", f.getRun(b.ID, "nightly"), eb)
	})

	t.Run("TenantIsolation", func(t *testing.T) {
		f := setup(t, open)
		a, b := f.org(), f.org()
		first := f.run(a.ID, base)
		second := f.run(a.ID, base.Add(time.Second))
		f.run(b.ID, base.Add(time.Hour))
		// A's first run is claimed (A's only slot); its second stays pending.
		got := f.claim("r1", base, oneSlot)
		equal(t, "claimed", got.ID, first.ID)
		running, pending := f.getRun(a.ID, first.TaskID), f.getRun(a.ID, second.TaskID)

		ex := f.s.Executions()
		for _, e := range []*domain.Execution{pending, running} {
			_, err := ex.Get(f.ctx, b.ID, e.TaskID)
			wantErr(t, "Get from another organization", err, store.ErrNotFound)
			_, err = ex.RequestCancel(f.ctx, b.ID, e.TaskID, base)
			wantErr(t, "RequestCancel from another organization", err, store.ErrNotFound)
			wantErr(t, "Delete from another organization", ex.Delete(f.ctx, b.ID, e.TaskID), store.ErrNotFound)
		}
		list, total, err := ex.List(f.ctx, b.ID, store.ExecutionFilter{})
		must(t, err)
		equal(t, "B's list", len(list), 1)
		equal(t, "B's total", total, 1)
		n, err := ex.CountSince(f.ctx, b.ID, base.Add(-time.Hour))
		must(t, err)
		equal(t, "B's CountSince", n, 1)
		n, err = ex.CountActive(f.ctx, b.ID)
		must(t, err)
		equal(t, "B's CountActive", n, 0)
		fin, err := ex.ListFinishedForImage(f.ctx, b.ID, "suite:pass", 0)
		must(t, err)
		equal(t, "B's finished runs", len(fin), 0)

		equal(t, "A's pending run untouched", f.getRun(a.ID, pending.TaskID), pending)
		equal(t, "A's running run untouched", f.getRun(a.ID, running.TaskID), running)
	})

	// Lists always show runs as they are now, however often they are read: a run that
	// finishes, is cancelled or deleted shows so in the next list (stores may keep the rows of
	// finished runs, which never change).
	t.Run("ListShowsEveryChange", func(t *testing.T) {
		f := setup(t, open)
		o := f.orgOnPlan(domain.PlanTeam)
		ex := f.s.Executions()
		var runs []*domain.Execution // oldest first: two finished, then two going
		for i := range 4 {
			runs = append(runs, f.runWith(o.ID, base.Add(time.Duration(i)*time.Minute), func(e *domain.Execution) {
				if i < 2 {
					e.Status, e.FinishedAt, e.ExitCode = domain.ExecPassed, ptr(base.Add(time.Hour)), ptr(0)
				}
			}))
		}
		f.claim("r1", base, oneSlot) // runs[2]
		list := func(what string, want ...*domain.Execution) {
			t.Helper()
			for range 2 { // twice: the second read may come from what the first kept
				got, total, err := ex.List(f.ctx, o.ID, store.ExecutionFilter{Limit: 10})
				must(t, err)
				wantRows := make([]domain.Execution, len(want))
				for i, w := range want {
					wantRows[i] = *f.getRun(o.ID, w.TaskID)
					wantRows[i].Tests, wantRows[i].EnvCipher, wantRows[i].ReportFolders = []domain.TestResult{}, "", []string{}
				}
				equal(t, what, unversioned(got), wantRows)
				equal(t, what+" total", total, len(want))
			}
		}
		list("first", runs[3], runs[2], runs[1], runs[0])
		must(t, ex.Finish(f.ctx, runs[2].ID, "r1", passed(base.Add(2*time.Hour))))
		_, err := ex.RequestCancel(f.ctx, o.ID, runs[3].TaskID, base.Add(2*time.Hour))
		must(t, err)
		list("after a finish and a cancel", runs[3], runs[2], runs[1], runs[0])
		must(t, ex.Delete(f.ctx, o.ID, runs[1].TaskID))
		list("after a delete", runs[3], runs[2], runs[0])
		again := f.runWith(o.ID, base.Add(time.Hour), func(e *domain.Execution) { e.TaskID = runs[1].TaskID })
		list("a new run with a deleted one's taskId", again, runs[3], runs[2], runs[0])
	})

	t.Run("ActiveCounts", func(t *testing.T) {
		f := setup(t, open)
		pending, running, err := f.s.Executions().ActiveCounts(f.ctx)
		must(t, err)
		equal(t, "counts of an empty store", [2]int{pending, running}, [2]int{0, 0})
		o, other := f.org(), f.org()
		for i, st := range []domain.ExecStatus{domain.ExecPending, domain.ExecPending, domain.ExecRunning, domain.ExecAnalyzing,
			domain.ExecPassed, domain.ExecFailed, domain.ExecCancelled, domain.ExecError, domain.ExecUnstable} {
			f.runWith(o.ID, base.Add(time.Duration(i)*time.Minute), func(e *domain.Execution) { e.Status = st })
		}
		f.runWith(other.ID, base, func(e *domain.Execution) { e.Status = domain.ExecRunning })
		pending, running, err = f.s.Executions().ActiveCounts(f.ctx)
		must(t, err)
		equal(t, "pending and running (with analyzing) of every organization", [2]int{pending, running}, [2]int{2, 3})
	})

	t.Run("ActiveByRunner", func(t *testing.T) {
		f := setup(t, open)
		o, other := f.orgOnPlan(domain.PlanEnterprise), f.orgOnPlan(domain.PlanEnterprise)
		got, err := f.s.Executions().ActiveByRunner(f.ctx, o.ID)
		must(t, err)
		equal(t, "an organization with no runs", got, map[string]int{})
		for i, c := range []struct {
			runner string
			status domain.ExecStatus
		}{{"remote:a", domain.ExecRunning}, {"remote:a", domain.ExecAnalyzing}, {"remote:b", domain.ExecRunning},
			{"remote:a", domain.ExecPassed}, {"remote:c", domain.ExecFailed}, {"", domain.ExecPending}} {
			f.runWith(o.ID, base.Add(time.Duration(i)*time.Minute), func(e *domain.Execution) { e.RunnerID, e.Status = c.runner, c.status })
		}
		// Another organization's runs on the same runners count for it alone.
		for range 3 {
			f.runWith(other.ID, base, func(e *domain.Execution) { e.RunnerID, e.Status = "remote:a", domain.ExecRunning })
		}
		got, err = f.s.Executions().ActiveByRunner(f.ctx, o.ID)
		must(t, err)
		equal(t, "the organization's runs going, by runner", got, map[string]int{"remote:a": 2, "remote:b": 1})
		got, err = f.s.Executions().ActiveByRunner(f.ctx, other.ID)
		must(t, err)
		equal(t, "the other organization's", got, map[string]int{"remote:a": 3})
	})

	t.Run("ListFiltersAndPages", func(t *testing.T) {
		f := setup(t, open)
		o, other := f.org(), f.org()
		proj := domain.NewID()
		type spec struct {
			status  domain.ExecStatus
			project string
			image   string
		}
		specs := []spec{
			{domain.ExecPassed, proj, "web"}, {domain.ExecFailed, proj, "web"}, {domain.ExecPending, "", "web"},
			{domain.ExecRunning, proj, "api"}, {domain.ExecPassed, "", "api"}, {domain.ExecCancelled, proj, "web"},
			{domain.ExecError, "", "web"},
		}
		var runs []*domain.Execution // oldest first
		for i, s := range specs {
			runs = append(runs, f.runWith(o.ID, base.Add(time.Duration(i)*time.Minute), func(e *domain.Execution) {
				e.Status, e.ProjectID, e.Image = s.status, s.project, s.image
			}))
		}
		// Two runs queued in the same millisecond are ordered by ID.
		same1 := f.runWith(o.ID, base.Add(time.Hour), func(e *domain.Execution) { e.ID = "b" + domain.NewID()[1:] })
		same2 := f.runWith(o.ID, base.Add(time.Hour), func(e *domain.Execution) { e.ID = "a" + domain.NewID()[1:] })
		f.runWith(other.ID, base.Add(2*time.Hour), func(e *domain.Execution) { e.ProjectID = proj; e.Image = "web" })

		newest := func(idx ...int) []string {
			var out []string
			for i := len(idx) - 1; i >= 0; i-- {
				out = append(out, runs[idx[i]].ID)
			}
			return out
		}
		check := func(what string, fl store.ExecutionFilter, wantIDs []string, wantTotal int) {
			t.Helper()
			got, total, err := f.s.Executions().List(f.ctx, o.ID, fl)
			must(t, err)
			equal(t, what+" IDs", ids(got, execID), wantIDs)
			equal(t, what+" total", total, wantTotal)
		}
		all := append([]string{same1.ID, same2.ID}, newest(0, 1, 2, 3, 4, 5, 6)...)
		check("no filter", store.ExecutionFilter{}, all, 9)
		check("first page", store.ExecutionFilter{Limit: 4}, all[:4], 9)
		check("second page", store.ExecutionFilter{Limit: 4, Offset: 4}, all[4:8], 9)
		check("last page", store.ExecutionFilter{Limit: 4, Offset: 8}, all[8:], 9)
		check("past the end", store.ExecutionFilter{Limit: 4, Offset: 20}, []string{}, 9)
		check("offset without limit", store.ExecutionFilter{Offset: 7}, all[7:], 9)
		check("one status", store.ExecutionFilter{Statuses: []domain.ExecStatus{domain.ExecPassed}}, newest(0, 4), 2)
		check("statuses", store.ExecutionFilter{Statuses: []domain.ExecStatus{domain.ExecPassed, domain.ExecFailed,
			domain.ExecError}}, newest(0, 1, 4, 6), 4)
		check("project", store.ExecutionFilter{ProjectID: proj}, newest(0, 1, 3, 5), 4)
		check("image", store.ExecutionFilter{Image: "api"}, newest(3, 4), 2)
		check("project, image and status, paged", store.ExecutionFilter{ProjectID: proj, Image: "web",
			Statuses: []domain.ExecStatus{domain.ExecPassed, domain.ExecFailed, domain.ExecCancelled}, Limit: 2, Offset: 1},
			newest(0, 1), 3)
		check("nothing matches", store.ExecutionFilter{Image: "nope"}, []string{}, 0)
	})

	// The unfiltered list's total follows runs added and deleted, counts a sharded run once
	// (not its containers), and is the organization's own.
	t.Run("ListTotalFollowsAddsAndDeletes", func(t *testing.T) {
		f := setup(t, open)
		o, other := f.orgOnPlan(domain.PlanEnterprise), f.org()
		total := func(orgID string) int {
			t.Helper()
			_, n, err := f.s.Executions().List(f.ctx, orgID, store.ExecutionFilter{Limit: 2})
			must(t, err)
			return n
		}
		equal(t, "a fresh organization", total(o.ID), 0)
		var runs []*domain.Execution
		for i := range 3 {
			runs = append(runs, f.run(o.ID, base.Add(time.Duration(i)*time.Minute)))
		}
		parent := f.runWith(o.ID, base.Add(time.Hour), func(e *domain.Execution) { e.Shards = 2 })
		for i := 1; i <= 2; i++ {
			f.runWith(o.ID, base.Add(time.Hour), func(e *domain.Execution) {
				e.Shards, e.ParentID, e.ShardIndex, e.TaskID = 2, parent.ID, i, fmt.Sprintf("%s~s%d", parent.TaskID, i)
			})
		}
		f.run(other.ID, base)
		equal(t, "three runs and a sharded one", total(o.ID), 4)
		must(t, f.s.Executions().Delete(f.ctx, o.ID, runs[1].TaskID))
		equal(t, "after a delete", total(o.ID), 3)
		must(t, f.s.Executions().Delete(f.ctx, o.ID, parent.TaskID))
		equal(t, "after the sharded run's delete", total(o.ID), 2)
		equal(t, "the other organization", total(other.ID), 1)
	})

	t.Run("Labels", func(t *testing.T) {
		f := setup(t, open)
		o, other := f.org(), f.org()
		labelled := func(at int, labels map[string]string) *domain.Execution {
			return f.runWith(o.ID, base.Add(time.Duration(at)*time.Minute), func(e *domain.Execution) { e.Labels = labels })
		}
		a := labelled(0, map[string]string{"branch": "main", "env": "staging", "note": "a:b c"})
		b := labelled(1, map[string]string{"branch": "main", "env": "production"})
		c := labelled(2, map[string]string{"branch": "feature/x"})
		labelled(3, nil)
		f.runWith(other.ID, base.Add(4*time.Minute), func(e *domain.Execution) { e.Labels = map[string]string{"branch": "main"} })

		equal(t, "labels read back", f.getRun(o.ID, a.TaskID).Labels, a.Labels)
		equal(t, "no labels", f.getRun(o.ID, c.TaskID).Labels, c.Labels)
		check := func(what string, labels []domain.Label, wantIDs []string) {
			t.Helper()
			for _, limit := range []int{0, 1} { // a whole page, and a page that needs the count
				got, total, err := f.s.Executions().List(f.ctx, o.ID, store.ExecutionFilter{Labels: labels, Limit: limit})
				must(t, err)
				want := wantIDs
				if limit > 0 && len(want) > limit {
					want = want[:limit]
				}
				equal(t, what+" IDs", ids(got, execID), want)
				equal(t, what+" total", total, len(wantIDs))
				if limit == 0 {
					for _, e := range got {
						if e.ID == a.ID {
							equal(t, what+" labels in the list", e.Labels, a.Labels)
						}
					}
				}
			}
		}
		check("one label", []domain.Label{{Key: "branch", Value: "main"}}, []string{b.ID, a.ID})
		check("all must match", []domain.Label{{Key: "branch", Value: "main"}, {Key: "env", Value: "staging"}}, []string{a.ID})
		check("a value with colons and spaces", []domain.Label{{Key: "note", Value: "a:b c"}}, []string{a.ID})
		check("no match", []domain.Label{{Key: "branch", Value: "mai"}}, []string{})
		check("another value", []domain.Label{{Key: "branch", Value: "feature/x"}}, []string{c.ID})
		must(t, f.s.Executions().Delete(f.ctx, o.ID, a.TaskID))
		check("deleted runs' labels go", []domain.Label{{Key: "env", Value: "staging"}}, []string{})
	})

	t.Run("CountSinceAndActive", func(t *testing.T) {
		f := setup(t, open)
		o := f.orgOnPlan(domain.PlanTeam)
		f.run(o.ID, base.Add(-time.Millisecond))
		f.run(o.ID, base)
		f.run(o.ID, base.Add(time.Hour))
		f.runWith(o.ID, base.Add(2*time.Hour), func(e *domain.Execution) { e.Status = domain.ExecPassed })
		n, err := f.s.Executions().CountSince(f.ctx, o.ID, base)
		must(t, err)
		equal(t, "CountSince (inclusive)", n, 3)
		n, err = f.s.Executions().CountSince(f.ctx, o.ID, base.Add(3*time.Hour))
		must(t, err)
		equal(t, "CountSince later", n, 0)

		n, err = f.s.Executions().CountActive(f.ctx, o.ID)
		must(t, err)
		equal(t, "CountActive with none running", n, 0)
		a := f.claim("r1", base, oneSlot)
		f.claim("r1", base, oneSlot)
		n, err = f.s.Executions().CountActive(f.ctx, o.ID)
		must(t, err)
		equal(t, "CountActive with two running", n, 2)
		must(t, f.s.Executions().Finish(f.ctx, a.ID, "r1", store.Finish{Status: domain.ExecAnalyzing, ExitCode: ptr(1)}))
		n, err = f.s.Executions().CountActive(f.ctx, o.ID)
		must(t, err)
		equal(t, "CountActive counts ANALYZING", n, 2)
		must(t, f.s.Executions().Finish(f.ctx, a.ID, "r1", passed(base)))
		n, err = f.s.Executions().CountActive(f.ctx, o.ID)
		must(t, err)
		equal(t, "CountActive after a finish", n, 1)
	})

	t.Run("QueueReasonAndContainer", func(t *testing.T) {
		f := setup(t, open)
		o := f.org()
		a, b := f.run(o.ID, base), f.run(o.ID, base.Add(time.Second))
		must(t, f.s.Executions().SetQueueReason(f.ctx, b.ID, "waiting for a free run slot: 1 of 1 in use"))
		equal(t, "queue reason", f.getRun(o.ID, b.TaskID).QueueReason, "waiting for a free run slot: 1 of 1 in use")
		wantErr(t, "SetQueueReason unknown", f.s.Executions().SetQueueReason(f.ctx, domain.NewID(), "x"), store.ErrNotFound)
		wantErr(t, "SetContainer on a PENDING run", f.s.Executions().SetContainer(f.ctx, a.ID, "c1"), store.ErrNotFound)

		got := f.claim("r1", base, oneSlot)
		equal(t, "claimed", got.ID, a.ID)
		wantErr(t, "SetQueueReason on a RUNNING run", f.s.Executions().SetQueueReason(f.ctx, a.ID, "stale"),
			store.ErrNotFound)
		must(t, f.s.Executions().SetContainer(f.ctx, a.ID, "c0ffee"))
		equal(t, "container", f.getRun(o.ID, a.TaskID).ContainerID, "c0ffee")
		equal(t, "queue reason of the running run", f.getRun(o.ID, a.TaskID).QueueReason, "")

		must(t, f.s.Executions().Finish(f.ctx, a.ID, "r1", passed(base)))
		got = f.claim("r1", base, oneSlot)
		equal(t, "claimed second", got.ID, b.ID)
		equal(t, "claim clears the queue reason", got.QueueReason, "")
		must(t, f.s.Executions().Finish(f.ctx, b.ID, "r1", passed(base)))
		wantErr(t, "SetContainer on a finished run", f.s.Executions().SetContainer(f.ctx, b.ID, "c2"), store.ErrNotFound)
		wantErr(t, "SetContainer unknown", f.s.Executions().SetContainer(f.ctx, domain.NewID(), "c"), store.ErrNotFound)
	})

	t.Run("RequestCancel", func(t *testing.T) {
		f := setup(t, open)
		o := f.orgOnPlan(domain.PlanTeam)
		ex := f.s.Executions()
		running := f.run(o.ID, base)
		analyzing := f.run(o.ID, base.Add(time.Second))
		pending := f.run(o.ID, base.Add(2*time.Second))
		f.claim("r1", base, oneSlot)
		f.claim("r2", base, oneSlot)
		must(t, ex.Finish(f.ctx, analyzing.ID, "r2", store.Finish{Status: domain.ExecAnalyzing}))
		must(t, ex.SetQueueReason(f.ctx, pending.ID, "waiting"))
		now := base.Add(time.Minute)

		got, err := ex.RequestCancel(f.ctx, o.ID, pending.TaskID, now)
		must(t, err)
		equal(t, "PENDING cancelled at once", got, true)
		e := f.getRun(o.ID, pending.TaskID)
		if e.Status != domain.ExecCancelled || e.FinishedAt == nil || !e.FinishedAt.Equal(now) || e.QueueReason != "" {
			t.Errorf("cancelled pending run: status %s, finishedAt %v, queueReason %q", e.Status, e.FinishedAt, e.QueueReason)
		}
		if c := f.claim("r3", now, oneSlot); c != nil {
			t.Errorf("claimed %s after the only pending run was cancelled", c.TaskID)
		}

		for _, r := range []struct {
			e      *domain.Execution
			runner string
			status domain.ExecStatus
		}{{running, "r1", domain.ExecRunning}, {analyzing, "r2", domain.ExecAnalyzing}} {
			cancel, err := ex.Heartbeat(f.ctx, r.e.ID, r.runner, now.Add(time.Minute))
			must(t, err)
			equal(t, "cancel before the request", cancel, false)
			got, err := ex.RequestCancel(f.ctx, o.ID, r.e.TaskID, now)
			must(t, err)
			equal(t, string(r.status)+" run: not cancelled at once", got, false)
			e := f.getRun(o.ID, r.e.TaskID)
			if e.Status != r.status || !e.CancelRequested || e.FinishedAt != nil {
				t.Errorf("%s run after cancel request: status %s, cancelRequested %v, finishedAt %v",
					r.status, e.Status, e.CancelRequested, e.FinishedAt)
			}
			got, err = ex.RequestCancel(f.ctx, o.ID, r.e.TaskID, now)
			must(t, err)
			equal(t, "second request", got, false)
			cancel, err = ex.Heartbeat(f.ctx, r.e.ID, r.runner, now.Add(time.Minute))
			must(t, err)
			equal(t, "heartbeat reports the cancel", cancel, true)
			must(t, ex.Finish(f.ctx, r.e.ID, r.runner, store.Finish{Status: domain.ExecCancelled, FinishedAt: now}))
		}

		for _, e := range []*domain.Execution{pending, running, analyzing} {
			before := f.getRun(o.ID, e.TaskID)
			got, err := ex.RequestCancel(f.ctx, o.ID, e.TaskID, now.Add(time.Hour))
			wantErr(t, "RequestCancel on a final run", err, store.ErrGuard)
			equal(t, "final run not cancelled now", got, false)
			equal(t, "final run untouched", f.getRun(o.ID, e.TaskID), before)
		}
		done := f.runWith(o.ID, base, func(e *domain.Execution) { e.Status = domain.ExecPassed })
		_, err = ex.RequestCancel(f.ctx, o.ID, done.TaskID, now)
		wantErr(t, "RequestCancel on a PASSED run", err, store.ErrGuard)
		_, err = ex.RequestCancel(f.ctx, o.ID, "missing", now)
		wantErr(t, "RequestCancel unknown", err, store.ErrNotFound)
	})

	t.Run("LogEndsWithTheRun", func(t *testing.T) {
		f := setup(t, open)
		f.run(f.org().ID, base)
		got := f.claim("r1", base, oneSlot)
		must(t, f.s.Logs().Append(f.ctx, got.ID, 1, "line 1\n"))
		must(t, f.s.Executions().Finish(f.ctx, got.ID, "r1", store.Finish{Status: domain.ExecPassed, FinishedAt: base.Add(time.Second)}))
		wantErr(t, "Append after the final status", f.s.Logs().Append(f.ctx, got.ID, 2, "late\n"), store.ErrNotFound)
		wantErr(t, "a chunk stored before, sent again", f.s.Logs().Append(f.ctx, got.ID, 1, "line 1\n"), store.ErrNotFound)
		log, err := f.s.Logs().Read(f.ctx, got.ID)
		must(t, err)
		equal(t, "log", log, "line 1\n")
	})

	t.Run("DeleteRemovesLogs", func(t *testing.T) {
		f := setup(t, open)
		o := f.org()
		a, b := f.run(o.ID, base), f.run(o.ID, base.Add(time.Second))
		must(t, f.s.Logs().Append(f.ctx, a.ID, 1, "a line\n"))
		must(t, f.s.Logs().Append(f.ctx, b.ID, 1, "b line\n"))
		must(t, f.s.Executions().Delete(f.ctx, o.ID, a.TaskID))
		_, err := f.s.Executions().Get(f.ctx, o.ID, a.TaskID)
		wantErr(t, "Get deleted", err, store.ErrNotFound)
		log, err := f.s.Logs().Read(f.ctx, a.ID)
		must(t, err)
		equal(t, "deleted run's log", log, "")
		log, err = f.s.Logs().Read(f.ctx, b.ID)
		must(t, err)
		equal(t, "other run's log", log, "b line\n")
		wantErr(t, "Delete twice", f.s.Executions().Delete(f.ctx, o.ID, a.TaskID), store.ErrNotFound)
		wantErr(t, "Append to a deleted run", f.s.Logs().Append(f.ctx, a.ID, 2, "late\n"), store.ErrNotFound)

		// A running run can be deleted; its runner then finds it gone.
		got := f.claim("r1", base, oneSlot)
		must(t, f.s.Executions().Delete(f.ctx, o.ID, got.TaskID))
		_, err = f.s.Executions().Heartbeat(f.ctx, got.ID, "r1", base.Add(time.Hour))
		wantErr(t, "Heartbeat of a deleted run", err, store.ErrNotFound)
		wantErr(t, "Finish of a deleted run", f.s.Executions().Finish(f.ctx, got.ID, "r1", passed(base)), store.ErrNotFound)
	})

	t.Run("ListPendingAndFinishedForImage", func(t *testing.T) {
		f := setup(t, open)
		a, b := f.org(), f.org()
		p3 := f.run(b.ID, base.Add(3*time.Second))
		p1 := f.run(a.ID, base.Add(1*time.Second))
		p2 := f.run(b.ID, base.Add(2*time.Second))
		f.runWith(a.ID, base, func(e *domain.Execution) { e.Status = domain.ExecRunning })
		got, err := f.s.Executions().ListPending(f.ctx, 0)
		must(t, err)
		equal(t, "ListPending of every organization, oldest first", ids(got, execID), []string{p1.ID, p2.ID, p3.ID})
		got, err = f.s.Executions().ListPending(f.ctx, 2)
		must(t, err)
		equal(t, "ListPending limited", ids(got, execID), []string{p1.ID, p2.ID})

		var want []string
		for i, st := range []domain.ExecStatus{domain.ExecPassed, domain.ExecFailed, domain.ExecUnstable,
			domain.ExecError, domain.ExecCancelled, domain.ExecRunning, domain.ExecAnalyzing, domain.ExecPending} {
			e := f.runWith(a.ID, base.Add(time.Duration(i)*time.Minute), func(e *domain.Execution) {
				e.Status, e.Image = st, "suite:metrics"
			})
			if st.Final() {
				want = append([]string{e.ID}, want...)
			}
		}
		f.runWith(a.ID, base.Add(time.Hour), func(e *domain.Execution) { e.Status, e.Image = domain.ExecPassed, "suite:other" })
		f.runWith(b.ID, base.Add(time.Hour), func(e *domain.Execution) { e.Status, e.Image = domain.ExecPassed, "suite:metrics" })
		got, err = f.s.Executions().ListFinishedForImage(f.ctx, a.ID, "suite:metrics", 0)
		must(t, err)
		equal(t, "finished runs of the image, newest first", ids(got, execID), want)
		got, err = f.s.Executions().ListFinishedForImage(f.ctx, a.ID, "suite:metrics", 2)
		must(t, err)
		equal(t, "limited", ids(got, execID), want[:2])
	})
}

func testClaim(t *testing.T, open Opener) {
	t.Run("NothingClaimable", func(t *testing.T) {
		f := setup(t, open)
		o := f.org()
		if got := f.claim("r1", base, oneSlot); got != nil {
			t.Errorf("claimed %+v from an empty queue", got)
		}
		f.runWith(o.ID, base, func(e *domain.Execution) { e.Status = domain.ExecPassed })
		if got := f.claim("r1", base, oneSlot); got != nil {
			t.Errorf("claimed a finished run %s", got.TaskID)
		}
	})

	t.Run("RecordsTheInstance", func(t *testing.T) {
		f := setup(t, open)
		o := f.orgOnPlan(domain.PlanTeam)
		a, b := f.run(o.ID, base), f.run(o.ID, base.Add(time.Second))
		got, err := f.s.Executions().Claim(f.ctx, "remote:box", "9c0ffee1", "", base, base.Add(time.Minute), oneSlot)
		must(t, err)
		want := claimed(a, "remote:box", base)
		want.RunnerInstance = "9c0ffee1"
		equal(t, "claimed by a process", got, want)
		equal(t, "as stored", f.getRun(o.ID, a.TaskID), want)
		// The embedded runner has no instance.
		got = f.claim("embedded:host", base, oneSlot)
		equal(t, "claimed by the embedded runner", got, claimed(b, "embedded:host", base))
	})

	// A remote runner whose answer was lost asks again with the same claim key, on whichever
	// replica: it gets the run that ask claimed while its process holds it, and only then.
	t.Run("RepeatedAskFindsItsRun", func(t *testing.T) {
		f := setup(t, open)
		o := f.orgOnPlan(domain.PlanTeam)
		f.run(o.ID, base)
		got, err := f.s.Executions().Claim(f.ctx, "remote:box", "9c0ffee1", "5eed", base, base.Add(time.Minute), oneSlot)
		must(t, err)
		again, err := f.s.Executions().Claimed(f.ctx, "remote:box", "9c0ffee1", "5eed")
		must(t, err)
		equal(t, "the run the ask claimed", again, got)
		for _, c := range [][3]string{
			{"remote:box", "9c0ffee1", "beef"}, {"remote:box", "0ddba11", "5eed"},
			{"remote:other", "9c0ffee1", "5eed"}, {"remote:box", "9c0ffee1", ""},
		} {
			if e, err := f.s.Executions().Claimed(f.ctx, c[0], c[1], c[2]); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("Claimed(%q) = %v, %v; want ErrNotFound", c, e, err)
			}
		}
		must(t, f.s.Executions().Finish(f.ctx, got.ID, "remote:box", store.Finish{Status: domain.ExecPassed, FinishedAt: base.Add(time.Second)}))
		if e, err := f.s.Executions().Claimed(f.ctx, "remote:box", "9c0ffee1", "5eed"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Claimed after the run ended = %v, %v; want ErrNotFound", e, err)
		}
	})

	t.Run("FIFOWithinOrganization", func(t *testing.T) {
		f := setup(t, open)
		o := f.orgOnPlan(domain.PlanEnterprise)
		third := f.run(o.ID, base.Add(2*time.Second))
		first := f.run(o.ID, base)
		// Same millisecond: the smaller ID goes first.
		secondB := f.runWith(o.ID, base.Add(time.Second), func(e *domain.Execution) { e.ID = "b" + domain.NewID()[1:] })
		secondA := f.runWith(o.ID, base.Add(time.Second), func(e *domain.Execution) { e.ID = "a" + domain.NewID()[1:] })
		must(t, f.s.Executions().SetQueueReason(f.ctx, first.ID, "waiting for a free run slot"))
		first.QueueReason = "waiting for a free run slot"

		now := base.Add(time.Hour)
		got := f.claim("runner-1", now, oneSlot)
		equal(t, "claimed run as returned", got, claimed(first, "runner-1", now))
		equal(t, "claimed run as stored", f.getRun(o.ID, first.TaskID), got)
		var order []string
		for range 3 {
			order = append(order, f.claim("runner-1", now, oneSlot).ID)
		}
		equal(t, "claim order", order, []string{secondA.ID, secondB.ID, third.ID})
		if got := f.claim("runner-1", now, oneSlot); got != nil {
			t.Errorf("claimed %s from an empty queue", got.TaskID)
		}
	})

	// A sharded run's own record is never claimed, however early it was queued: its shards are
	// what runners run (and what hold slots).
	t.Run("NeverTheShardedRunItself", func(t *testing.T) {
		f := setup(t, open)
		o := f.orgOnPlan(domain.PlanEnterprise)
		parent := f.runWith(o.ID, base, func(e *domain.Execution) { e.Shards = 2 })
		var shards []string
		for i := 1; i <= 2; i++ {
			s := f.runWith(o.ID, base.Add(time.Duration(i)*time.Second), func(e *domain.Execution) {
				e.Shards, e.ParentID, e.ShardIndex, e.TaskID = 2, parent.ID, i, fmt.Sprintf("%s~s%d", parent.TaskID, i)
			})
			shards = append(shards, s.ID)
		}
		now := base.Add(time.Hour)
		var order []string
		for range 2 {
			got := f.claim("runner-1", now, func(domain.Plan) int { return 10 })
			if got == nil {
				t.Fatal("nothing claimed")
			}
			order = append(order, got.ID)
		}
		equal(t, "claimed, the shards only", order, shards)
		if got := f.claim("runner-1", now, func(domain.Plan) int { return 10 }); got != nil {
			t.Errorf("claimed %s (shards %d, parent %q): the sharded run's own record", got.TaskID, got.Shards, got.ParentID)
		}
	})

	t.Run("OrganizationAtItsLimitDoesNotBlockOthers", func(t *testing.T) {
		f := setup(t, open)
		a, b := f.org(), f.org() // free plan: one slot each
		var backlog []*domain.Execution
		for i := range 5 {
			backlog = append(backlog, f.run(a.ID, base.Add(time.Duration(i)*time.Second)))
		}
		bRun := f.run(b.ID, base.Add(time.Minute))
		now := base.Add(time.Hour)
		equal(t, "first claim: A's oldest", f.claim("r1", now, oneSlot).ID, backlog[0].ID)
		equal(t, "second claim: B's run, A being at its limit", f.claim("r2", now, oneSlot).ID, bRun.ID)
		if got := f.claim("r3", now, oneSlot); got != nil {
			t.Errorf("claimed %s with every organization at its limit", got.TaskID)
		}
		must(t, f.s.Executions().Finish(f.ctx, backlog[0].ID, "r1", passed(now)))
		equal(t, "after A's run finished: A's next", f.claim("r1", now, oneSlot).ID, backlog[1].ID)
		if got := f.claim("r3", now, oneSlot); got != nil {
			t.Errorf("claimed %s with every organization at its limit", got.TaskID)
		}
	})

	t.Run("FairShareAcrossOrganizations", func(t *testing.T) {
		f := setup(t, open)
		a, b, c := f.orgOnPlan(domain.PlanEnterprise), f.orgOnPlan(domain.PlanEnterprise), f.orgOnPlan(domain.PlanEnterprise)
		var aRuns []*domain.Execution
		for i := range 3 {
			aRuns = append(aRuns, f.run(a.ID, base.Add(time.Duration(i)*time.Second)))
		}
		bRun := f.run(b.ID, base.Add(time.Minute))
		cRun := f.run(c.ID, base.Add(2*time.Minute))
		now := base.Add(time.Hour)
		var order []string
		for range 5 {
			order = append(order, f.claim("r1", now, limitsFrom(map[domain.Plan]int{domain.PlanEnterprise: 20})).ID)
		}
		// A's second run waits behind B's and C's first although it was queued before them:
		// the organization with the fewest runs going gets the slot.
		equal(t, "claim order", order, []string{aRuns[0].ID, bRun.ID, cRun.ID, aRuns[1].ID, aRuns[2].ID})

		// A slot that frees goes to the organization with fewer runs going, not to the oldest run.
		g := setup(t, open)
		x, y := g.orgOnPlan(domain.PlanEnterprise), g.orgOnPlan(domain.PlanEnterprise)
		x1, x2, x3 := g.run(x.ID, base), g.run(x.ID, base.Add(time.Second)), g.run(x.ID, base.Add(2*time.Second))
		limits := limitsFrom(map[domain.Plan]int{domain.PlanEnterprise: 20})
		equal(t, "x1", g.claim("r1", now, limits).ID, x1.ID)
		equal(t, "x2", g.claim("r1", now, limits).ID, x2.ID)
		y1 := g.run(y.ID, base.Add(time.Hour))
		equal(t, "y1 before x3", g.claim("r1", now, limits).ID, y1.ID)
		equal(t, "then x3", g.claim("r1", now, limits).ID, x3.ID)
	})

	t.Run("LimitsComeFromLimitFor", func(t *testing.T) {
		f := setup(t, open)
		free, team, ent := f.orgOnPlan(domain.PlanFree), f.orgOnPlan(domain.PlanTeam), f.orgOnPlan(domain.PlanEnterprise)
		for i := range 6 {
			for _, o := range []*domain.Organization{free, team, ent} {
				f.run(o.ID, base.Add(time.Duration(i)*time.Second))
			}
		}
		// Limits unlike the plan table's, to show they are not built into the store.
		limits := limitsFrom(map[domain.Plan]int{domain.PlanFree: 0, domain.PlanTeam: 3, domain.PlanEnterprise: -1})
		count := map[string]int{}
		for {
			e := f.claim("r1", base, limits)
			if e == nil {
				break
			}
			count[e.OrganizationID]++
		}
		equal(t, "claims per organization", count, map[string]int{team.ID: 3, ent.ID: 6})
	})

	t.Run("ConcurrentClaimersNeverExceedLimits", func(t *testing.T) {
		// Every claimer starts at once and nobody finishes: exactly the slots get filled.
		f := setup(t, open)
		orgs := []*domain.Organization{f.orgOnPlan(domain.PlanFree), f.orgOnPlan(domain.PlanTeam),
			f.orgOnPlan(domain.PlanFree), f.orgOnPlan(domain.PlanTeam)}
		limit := map[string]int{}
		for _, o := range orgs {
			limit[o.ID] = oneSlot(o.Plan)
		}
		for i := range 20 {
			f.run(orgs[i%4].ID, base.Add(time.Duration(i)*time.Millisecond))
		}
		var mu sync.Mutex
		seen := map[string]int{}
		perOrg := map[string]int{}
		var wg sync.WaitGroup
		start := make(chan struct{})
		for g := range 8 {
			wg.Go(func() {
				<-start
				for range 5 {
					e, err := f.s.Executions().Claim(f.ctx, fmt.Sprintf("runner-%d", g), "", "", base, base.Add(time.Hour), oneSlot)
					if err != nil {
						t.Errorf("Claim: %v", err)
						return
					}
					if e == nil {
						continue
					}
					mu.Lock()
					seen[e.ID]++
					perOrg[e.OrganizationID]++
					mu.Unlock()
				}
			})
		}
		close(start)
		wg.Wait()
		for id, n := range seen {
			if n != 1 {
				t.Errorf("run %s claimed %d times", id, n)
			}
		}
		equal(t, "runs claimed per organization", perOrg, limit)
		for _, o := range orgs {
			n, err := f.s.Executions().CountActive(f.ctx, o.ID)
			must(t, err)
			equal(t, "active runs of "+string(o.Plan)+" organization", n, limit[o.ID])
		}
	})

	t.Run("ConcurrentClaimAndFinish", func(t *testing.T) {
		// 8 runners claim, hold a moment and finish 20 runs of 4 organizations with one or two
		// slots: each run is claimed once, and no organization ever has more active runs than
		// its limit, counted both by the test and in the database after each claim.
		f := setup(t, open)
		orgs := []*domain.Organization{f.orgOnPlan(domain.PlanFree), f.orgOnPlan(domain.PlanTeam),
			f.orgOnPlan(domain.PlanFree), f.orgOnPlan(domain.PlanTeam)}
		const runs = 20
		for i := range runs {
			f.run(orgs[i%4].ID, base.Add(time.Duration(i)*time.Millisecond))
		}
		ctx, cancel := context.WithTimeout(f.ctx, 2*time.Minute)
		defer cancel()
		var mu sync.Mutex
		seen := map[string]int{}
		active := map[string]int{}
		peak := map[string]int{}
		var finished atomic.Int32
		var wg sync.WaitGroup
		start := make(chan struct{})
		for g := range 8 {
			runner := fmt.Sprintf("runner-%d", g)
			wg.Go(func() {
				<-start
				for finished.Load() < runs {
					if ctx.Err() != nil {
						t.Errorf("runs not all finished in time: %d of %d", finished.Load(), runs)
						return
					}
					e, err := f.s.Executions().Claim(ctx, runner, "", "", base, base.Add(time.Hour), oneSlot)
					if err != nil {
						t.Errorf("Claim: %v", err)
						return
					}
					if e == nil {
						time.Sleep(time.Millisecond)
						continue
					}
					limit := oneSlot(domain.PlanFree)
					for _, o := range orgs {
						if o.ID == e.OrganizationID {
							limit = oneSlot(o.Plan)
						}
					}
					mu.Lock()
					seen[e.ID]++
					active[e.OrganizationID]++
					peak[e.OrganizationID] = max(peak[e.OrganizationID], active[e.OrganizationID])
					if active[e.OrganizationID] > limit {
						t.Errorf("organization %s has %d active runs, limit %d", e.OrganizationID, active[e.OrganizationID], limit)
					}
					mu.Unlock()
					n, err := f.s.Executions().CountActive(ctx, e.OrganizationID)
					if err != nil {
						t.Errorf("CountActive: %v", err)
						return
					}
					if n > limit {
						t.Errorf("database shows %d active runs for organization %s, limit %d", n, e.OrganizationID, limit)
					}
					time.Sleep(20 * time.Millisecond)
					mu.Lock()
					active[e.OrganizationID]-- // before Finish: the test never counts fewer than the database
					mu.Unlock()
					if err := f.s.Executions().Finish(ctx, e.ID, runner, passed(base)); err != nil {
						t.Errorf("Finish: %v", err)
						return
					}
					finished.Add(1)
				}
			})
		}
		close(start)
		wg.Wait()
		equal(t, "runs claimed", len(seen), runs)
		for id, n := range seen {
			if n != 1 {
				t.Errorf("run %s claimed %d times", id, n)
			}
		}
		t.Logf("peak active runs per organization: %v", peak)
	})

	t.Run("ConcurrentClaimsWithLateOlderRuns", func(t *testing.T) {
		// Runs keep arriving with ever older queue times (replicas' clocks differ) while
		// runners claim and finish: a claimer that reads the queue after such a run committed
		// picks a different run than one that read it before, so the two meet in no row, and
		// only counting the slots in use under mutual exclusion keeps the organization at its
		// one slot.
		f := setup(t, open)
		o := f.org() // one slot
		const total = 150
		ctx, cancel := context.WithTimeout(f.ctx, 2*time.Minute)
		defer cancel()
		var active, claimedRuns atomic.Int32
		var wg sync.WaitGroup
		wg.Go(func() {
			for i := range total {
				if ctx.Err() != nil {
					return
				}
				e := &domain.Execution{ID: domain.NewID(), OrganizationID: o.ID, TaskID: fmt.Sprintf("late-%d", i),
					Image: "suite:pass", Status: domain.ExecPending, QueuedAt: base.Add(-time.Duration(i) * time.Second)}
				if err := f.s.Executions().Create(ctx, e); err != nil {
					t.Errorf("Create: %v", err)
					return
				}
			}
		})
		for g := range 6 {
			runner := fmt.Sprintf("runner-%d", g)
			wg.Go(func() {
				for claimedRuns.Load() < total && ctx.Err() == nil {
					e, err := f.s.Executions().Claim(ctx, runner, "", "", base, base.Add(time.Hour), oneSlot)
					if err != nil {
						t.Errorf("Claim: %v", err)
						return
					}
					if e == nil {
						time.Sleep(200 * time.Microsecond)
						continue
					}
					claimedRuns.Add(1)
					if n := active.Add(1); n > 1 {
						t.Errorf("%d runs active for an organization with one slot", n)
					}
					if n, err := f.s.Executions().CountActive(ctx, o.ID); err != nil || n > 1 {
						t.Errorf("database shows %d active runs for an organization with one slot (%v)", n, err)
					}
					time.Sleep(time.Millisecond)
					active.Add(-1)
					if err := f.s.Executions().Finish(ctx, e.ID, runner, passed(base)); err != nil {
						t.Errorf("Finish: %v", err)
						return
					}
				}
			})
		}
		wg.Wait()
		equal(t, "runs claimed", int(claimedRuns.Load()), total)
	})
}

func testLeases(t *testing.T, open Opener) {
	t.Run("HeartbeatOnlyByHolder", func(t *testing.T) {
		f := setup(t, open)
		o := f.org()
		e := f.run(o.ID, base)
		ex := f.s.Executions()
		_, err := ex.Heartbeat(f.ctx, e.ID, "r1", base.Add(time.Hour))
		wantErr(t, "Heartbeat of a PENDING run", err, store.ErrNotFound)
		f.claim("r1", base, oneSlot)
		_, err = ex.Heartbeat(f.ctx, e.ID, "r2", base.Add(time.Hour))
		wantErr(t, "Heartbeat by another runner", err, store.ErrNotFound)
		_, err = ex.Heartbeat(f.ctx, domain.NewID(), "r1", base.Add(time.Hour))
		wantErr(t, "Heartbeat of an unknown run", err, store.ErrNotFound)
		cancel, err := ex.Heartbeat(f.ctx, e.ID, "r1", base.Add(time.Hour))
		must(t, err)
		equal(t, "cancel", cancel, false)
		equal(t, "lease", f.getRun(o.ID, e.TaskID).LeaseUntil, ptr(base.Add(time.Hour)))
	})

	t.Run("FinishOnlyByHolderAndOnce", func(t *testing.T) {
		f := setup(t, open)
		o := f.org()
		e := f.run(o.ID, base)
		ex := f.s.Executions()
		wantErr(t, "Finish of a PENDING run", ex.Finish(f.ctx, e.ID, "r1", passed(base)), store.ErrNotFound)
		running := f.claim("r1", base, oneSlot)
		wantErr(t, "Finish by another runner", ex.Finish(f.ctx, e.ID, "r2", passed(base)), store.ErrNotFound)
		equal(t, "run after the wrong runner's Finish", f.getRun(o.ID, e.TaskID), running)
		if err := ex.Finish(f.ctx, e.ID, "r1", store.Finish{Status: domain.ExecRunning}); err == nil {
			t.Error("Finish with status RUNNING succeeded")
		}

		// The container ended: results are in, the analysis runs, the slot stays taken.
		at := base.Add(time.Minute)
		analysis := store.Finish{Status: domain.ExecAnalyzing, Error: "", ExitCode: ptr(1), FinishedAt: at,
			Summary: domain.Summary{Total: 2, Passed: 1, Failed: 1},
			Tests: []domain.TestResult{{Name: "a", Status: domain.TestPassed}, {Name: "b", Status: domain.TestFailed,
				Error: "boom"}},
			ReportDirs: []string{"junit"}, ReportIndexes: []string{}, ReportBytes: 2048, Notes: []string{"n1"}}
		must(t, ex.Finish(f.ctx, e.ID, "r1", analysis))
		got := f.getRun(o.ID, e.TaskID)
		want := *running
		want.Status, want.ExitCode, want.Summary, want.Tests = domain.ExecAnalyzing, ptr(1), analysis.Summary, analysis.Tests
		want.ReportDirs, want.ReportBytes, want.Notes = analysis.ReportDirs, analysis.ReportBytes, analysis.Notes
		want.ReportIndexes = []string{} // recorded, and none: told apart from nil, not recorded
		equal(t, "ANALYZING run", got, &want)
		_, err := ex.Heartbeat(f.ctx, e.ID, "r1", base.Add(time.Hour))
		must(t, err)
		want.LeaseUntil = ptr(base.Add(time.Hour))

		end := base.Add(2 * time.Minute)
		final := store.Finish{Status: domain.ExecFailed, Error: "1 test failed", ExitCode: ptr(1), FinishedAt: end,
			Summary: analysis.Summary, Tests: analysis.Tests, ReportDirs: analysis.ReportDirs, ReportIndexes: []string{"junit"},
			ReportBytes: 2048, Notes: []string{"n1", "analysis: flaky selector"}}
		wantErr(t, "final Finish by another runner", ex.Finish(f.ctx, e.ID, "r2", final), store.ErrNotFound)
		must(t, ex.Finish(f.ctx, e.ID, "r1", final))
		want.Status, want.Error, want.FinishedAt, want.LeaseUntil, want.Notes = domain.ExecFailed, "1 test failed",
			ptr(end), nil, final.Notes
		want.ReportIndexes = final.ReportIndexes
		equal(t, "finished run", f.getRun(o.ID, e.TaskID), &want)
		// Lists leave out the tests and what only the run plane reads; everything else is as Get
		// shows it.
		listed, _, err := ex.List(f.ctx, o.ID, store.ExecutionFilter{})
		must(t, err)
		withoutTests := want
		withoutTests.Tests, withoutTests.EnvCipher, withoutTests.ReportFolders = []domain.TestResult{}, "", []string{}
		equal(t, "listed run", unversioned(listed), []domain.Execution{withoutTests})
		if listed[0].Version < 3 { // queued, claimed, finished: each a write of the run
			t.Errorf("the listed run's version is %d after 3 writes", listed[0].Version)
		}
		wantErr(t, "Finish twice", ex.Finish(f.ctx, e.ID, "r1", passed(end)), store.ErrNotFound)
		_, err = ex.Heartbeat(f.ctx, e.ID, "r1", base.Add(time.Hour))
		wantErr(t, "Heartbeat after Finish", err, store.ErrNotFound)
		equal(t, "finished run unchanged", f.getRun(o.ID, e.TaskID), &want)
	})

	t.Run("ExpiryAndRenewal", func(t *testing.T) {
		f := setup(t, open)
		o := f.orgOnPlan(domain.PlanTeam)
		ex := f.s.Executions()
		a := f.run(o.ID, base)
		b := f.run(o.ID, base.Add(time.Second))
		f.claim("r1", base, oneSlot)                  // lease until base+1m
		f.claim("r2", base.Add(time.Second), oneSlot) // lease until base+1m1s
		must(t, ex.Finish(f.ctx, b.ID, "r2", store.Finish{Status: domain.ExecAnalyzing}))
		lease := base.Add(time.Minute)

		exp, err := ex.Expired(f.ctx, lease)
		must(t, err)
		equal(t, "Expired at the lease's end", len(exp), 0)
		exp, err = ex.Expired(f.ctx, lease.Add(time.Hour))
		must(t, err)
		equal(t, "Expired after both leases, longest expired first", ids(exp, execID), []string{a.ID, b.ID})

		// a's runner renews in time; the reaper, working from its earlier list, must lose.
		_, err = ex.Heartbeat(f.ctx, a.ID, "r1", lease.Add(time.Hour))
		must(t, err)
		ended, err := ex.EndExpired(f.ctx, a.ID, lease.Add(time.Millisecond), "runner lost")
		must(t, err)
		equal(t, "EndExpired of a renewed lease", ended, false)
		equal(t, "renewed run's status", f.getRun(o.ID, a.TaskID).Status, domain.ExecRunning)

		// b's analyser died: its lease runs out, the run ends ERROR and frees its slot.
		now := lease.Add(2 * time.Second)
		ended, err = ex.EndExpired(f.ctx, b.ID, now, "runner lost: no heartbeat")
		must(t, err)
		equal(t, "EndExpired", ended, true)
		got := f.getRun(o.ID, b.TaskID)
		if got.Status != domain.ExecError || got.Error != "runner lost: no heartbeat" || got.FinishedAt == nil ||
			!got.FinishedAt.Equal(now) || got.LeaseUntil != nil {
			t.Errorf("expired run: status %s, error %q, finishedAt %v, lease %v", got.Status, got.Error, got.FinishedAt,
				got.LeaseUntil)
		}
		n, err := ex.CountActive(f.ctx, o.ID)
		must(t, err)
		equal(t, "active after expiry", n, 1)
		ended, err = ex.EndExpired(f.ctx, b.ID, now.Add(time.Hour), "again")
		must(t, err)
		equal(t, "EndExpired twice", ended, false)
		equal(t, "error kept", f.getRun(o.ID, b.TaskID).Error, "runner lost: no heartbeat")
		ended, err = ex.EndExpired(f.ctx, domain.NewID(), now, "x")
		must(t, err)
		equal(t, "EndExpired unknown", ended, false)

		// The late runner cannot resurrect or overwrite the run.
		_, err = ex.Heartbeat(f.ctx, b.ID, "r2", now.Add(time.Hour))
		wantErr(t, "Heartbeat after expiry", err, store.ErrNotFound)
		wantErr(t, "Finish after expiry", ex.Finish(f.ctx, b.ID, "r2", passed(now)), store.ErrNotFound)
		equal(t, "status after the late runner", f.getRun(o.ID, b.TaskID).Status, domain.ExecError)
		exp, err = ex.Expired(f.ctx, now.Add(24*time.Hour))
		must(t, err)
		equal(t, "Expired later", ids(exp, execID), []string{a.ID})
	})

	t.Run("ExtendLeasesAfterAnOutage", func(t *testing.T) {
		// After an outage the reaper moves every active lease that ends sooner to now+grace:
		// RUNNING and ANALYZING runs, expired or not; a longer lease, a PENDING run and an
		// ended one are left alone.
		f := setup(t, open)
		o := f.orgOnPlan(domain.PlanEnterprise)
		ex := f.s.Executions()
		var runs []*domain.Execution
		for i := range 5 {
			f.run(o.ID, base.Add(time.Duration(i)*time.Second))
			runs = append(runs, f.claim("r1", base, oneSlot)) // lease until base+1m
		}
		expired, soon, long, analyzing, ended := runs[0], runs[1], runs[2], runs[3], runs[4]
		pending := f.run(o.ID, base.Add(time.Hour))
		now := base.Add(2 * time.Minute) // expired's lease ran out during the outage
		until := now.Add(30 * time.Second)
		_, err := ex.Heartbeat(f.ctx, soon.ID, "r1", now.Add(time.Second))
		must(t, err)
		_, err = ex.Heartbeat(f.ctx, long.ID, "r1", now.Add(time.Hour))
		must(t, err)
		must(t, ex.Finish(f.ctx, analyzing.ID, "r1", store.Finish{Status: domain.ExecAnalyzing, ExitCode: ptr(1)}))
		must(t, ex.Finish(f.ctx, ended.ID, "r1", passed(base.Add(time.Minute))))

		n, err := ex.ExtendLeases(f.ctx, until)
		must(t, err)
		equal(t, "leases extended", n, 3)
		for _, c := range []struct {
			e    *domain.Execution
			want *time.Time
		}{{expired, ptr(until)}, {soon, ptr(until)}, {analyzing, ptr(until)}, {long, ptr(now.Add(time.Hour))},
			{ended, nil}, {pending, nil}} {
			got := f.getRun(o.ID, c.e.TaskID)
			equal(t, "lease of "+c.e.TaskID+" ("+string(got.Status)+")", got.LeaseUntil, c.want)
		}
		exp, err := ex.Expired(f.ctx, until)
		must(t, err)
		equal(t, "expired at the new lease's end", len(exp), 0)
		ended2, err := ex.EndExpired(f.ctx, expired.ID, now.Add(time.Second), "runner lost")
		must(t, err)
		equal(t, "EndExpired within the grace", ended2, false)
		n, err = ex.ExtendLeases(f.ctx, until)
		must(t, err)
		equal(t, "leases extended twice", n, 0)
		// The runner renews as before; past the grace without renewing, its run expires.
		_, err = ex.Heartbeat(f.ctx, expired.ID, "r1", until.Add(time.Minute))
		must(t, err)
		exp, err = ex.Expired(f.ctx, until.Add(time.Millisecond))
		must(t, err)
		equal(t, "expired after the grace", slices.Sorted(slices.Values(ids(exp, execID))),
			slices.Sorted(slices.Values([]string{soon.ID, analyzing.ID})))
	})

	t.Run("EndExpiredRacesHeartbeat", func(t *testing.T) {
		// For each run, a heartbeat and the reaper race: exactly one wins, and the stored run
		// agrees with the winner.
		f := setup(t, open)
		o := f.orgOnPlan(domain.PlanEnterprise)
		ex := f.s.Executions()
		const n = 20
		var runs []*domain.Execution
		for i := range n {
			f.run(o.ID, base.Add(time.Duration(i)*time.Millisecond))
			runs = append(runs, f.claim("r1", base, oneSlot)) // lease until base+1m
		}
		reapAt := base.Add(2 * time.Minute)
		renewTo := base.Add(time.Hour)
		hbErr := make([]error, n)
		ended := make([]bool, n)
		endErr := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i, e := range runs {
			wg.Go(func() {
				<-start
				_, hbErr[i] = ex.Heartbeat(f.ctx, e.ID, "r1", renewTo)
			})
			wg.Go(func() {
				<-start
				ended[i], endErr[i] = ex.EndExpired(f.ctx, e.ID, reapAt, "runner lost")
			})
		}
		close(start)
		wg.Wait()
		wins := 0
		for i, e := range runs {
			must(t, endErr[i])
			got := f.getRun(o.ID, e.TaskID)
			switch {
			case ended[i] && errors.Is(hbErr[i], store.ErrNotFound):
				wins++
				if got.Status != domain.ExecError {
					t.Errorf("run %d: reaper won but status is %s", i, got.Status)
				}
			case !ended[i] && hbErr[i] == nil:
				if got.Status != domain.ExecRunning || got.LeaseUntil == nil || !got.LeaseUntil.Equal(renewTo) {
					t.Errorf("run %d: heartbeat won but status %s, lease %v", i, got.Status, got.LeaseUntil)
				}
			default:
				t.Errorf("run %d: ended %v and heartbeat error %v", i, ended[i], hbErr[i])
			}
		}
		t.Logf("reaper won %d of %d races", wins, n)
	})
}

func testLogs(t *testing.T, open Opener) {
	t.Run("AppendReadInSeqOrder", func(t *testing.T) {
		f := setup(t, open)
		o := f.org()
		a, b := f.run(o.ID, base), f.run(o.ID, base)
		lg := f.s.Logs()
		log, err := lg.Read(f.ctx, a.ID)
		must(t, err)
		equal(t, "log before any chunk", log, "")
		must(t, lg.Append(f.ctx, a.ID, 1, "first\n"))
		must(t, lg.Append(f.ctx, a.ID, 2, "second\n"))
		must(t, lg.Append(f.ctx, b.ID, 1, "other run\n"))
		odd := "nul \x00 byte, bad utf-8 \xff\xfe, ünïcødé ✓, \x1b[31mcolour\x1b[0m\n"
		must(t, lg.Append(f.ctx, a.ID, 3, odd))
		must(t, lg.Append(f.ctx, a.ID, 10, "tenth\n")) // numeric order, not text order
		log, err = lg.Read(f.ctx, a.ID)
		must(t, err)
		equal(t, "log", log, "first\nsecond\n"+odd+"tenth\n")

		// Offsets are given in order: a seq at or below the last one (a retry, or a late
		// chunk) is refused rather than slipped in before bytes already counted.
		wantErr(t, "Append with a used seq", lg.Append(f.ctx, a.ID, 2, "again\n"), store.ErrConflict)
		wantErr(t, "Append with the last seq", lg.Append(f.ctx, a.ID, 10, "again\n"), store.ErrConflict)
		wantErr(t, "Append below the last seq", lg.Append(f.ctx, a.ID, 4, "late\n"), store.ErrConflict)
		wantErr(t, "Append to an unknown run", lg.Append(f.ctx, domain.NewID(), 1, "x\n"), store.ErrNotFound)
		log, err = lg.Read(f.ctx, a.ID)
		must(t, err)
		equal(t, "log after refused appends", log, "first\nsecond\n"+odd+"tenth\n")

		must(t, lg.DeleteAll(f.ctx, a.ID))
		log, err = lg.Read(f.ctx, a.ID)
		must(t, err)
		equal(t, "log after DeleteAll", log, "")
		must(t, lg.DeleteAll(f.ctx, a.ID))
		log, err = lg.Read(f.ctx, b.ID)
		must(t, err)
		equal(t, "other run's log", log, "other run\n")
		must(t, lg.Append(f.ctx, a.ID, 1, "fresh\n"))
	})

	t.Run("ReadFromOffsets", func(t *testing.T) {
		f := setup(t, open)
		o := f.org()
		e, other := f.run(o.ID, base), f.run(o.ID, base)
		lg := f.s.Logs()
		// readFrom collects what ReadFrom passes, checking that it counts it right.
		readFrom := func(id string, from, limit int64) string {
			t.Helper()
			var b strings.Builder
			n, err := lg.ReadFrom(f.ctx, id, from, limit, func(p []byte) error {
				if len(p) == 0 {
					t.Errorf("ReadFrom(%d, %d) passed an empty slice", from, limit)
				}
				b.Write(p)
				return nil
			})
			must(t, err)
			if n != int64(b.Len()) {
				t.Errorf("ReadFrom(%d, %d) returned %d, passed %d bytes", from, limit, n, b.Len())
			}
			return b.String()
		}
		equal(t, "empty log", readFrom(e.ID, 0, -1), "")
		equal(t, "empty log from 5", readFrom(e.ID, 5, 10), "")

		// Chunks of bytes, not characters: "é" and "✓" are 2 and 3 bytes, \xff one.
		chunks := []string{"héllo\n", "wörld ✓\n", "\xff\x00raw\n", "", "x", "last line\n"}
		var whole string
		for i, c := range chunks {
			must(t, lg.Append(f.ctx, e.ID, i+1, c))
			whole += c
		}
		must(t, lg.Append(f.ctx, other.ID, 1, "another run's line\n"))
		equal(t, "whole log", readFrom(e.ID, 0, -1), whole)
		n := int64(len(whole))
		for from := int64(0); from <= n+2; from++ {
			want := ""
			if from < n {
				want = whole[from:]
			}
			if got := readFrom(e.ID, from, -1); got != want {
				t.Fatalf("from %d: %q, want %q", from, got, want)
			}
			for _, limit := range []int64{0, 1, 3, 7, 100} {
				w := want[:min(int64(len(want)), limit)]
				if got := readFrom(e.ID, from, limit); got != w {
					t.Fatalf("from %d, limit %d: %q, want %q", from, limit, got, w)
				}
			}
		}
		// Paging by the bytes read gives the log back whole, whatever the page size.
		for _, page := range []int64{1, 2, 5, 64} {
			var b strings.Builder
			for from := int64(0); ; {
				got := readFrom(e.ID, from, page)
				if got == "" {
					break
				}
				b.WriteString(got)
				from += int64(len(got))
			}
			equal(t, fmt.Sprintf("paged by %d", page), b.String(), whole)
		}
		// Appends after a read continue at the end.
		must(t, lg.Append(f.ctx, e.ID, 7, "more\n"))
		equal(t, "read past the old end", readFrom(e.ID, n, -1), "more\n")

		// fn's error stops the read and is returned.
		stop := errors.New("stop")
		calls := 0
		got, err := lg.ReadFrom(f.ctx, e.ID, 0, -1, func([]byte) error { calls++; return stop })
		if !errors.Is(err, stop) || calls != 1 || got != 0 {
			t.Errorf("ReadFrom with a failing fn: %d, %v after %d calls", got, err, calls)
		}
		equal(t, "unknown run", readFrom(domain.NewID(), 0, -1), "")
		must(t, lg.DeleteAll(f.ctx, e.ID))
		equal(t, "after DeleteAll", readFrom(e.ID, 0, -1), "")
	})

	t.Run("LargeLog", func(t *testing.T) {
		f := setup(t, open)
		e := f.run(f.org().ID, base)
		var want strings.Builder
		chunk := strings.Repeat("0123456789abcdef", 256) // 4 KiB
		for i := range 300 {
			c := fmt.Sprintf("%04d %s\n", i, chunk)
			want.WriteString(c)
			must(t, f.s.Logs().Append(f.ctx, e.ID, i, c))
		}
		log, err := f.s.Logs().Read(f.ctx, e.ID)
		must(t, err)
		if log != want.String() {
			t.Errorf("log of %d bytes differs from the %d bytes appended", len(log), want.Len())
		}
		size, err := f.s.Logs().Size(f.ctx, e.ID)
		must(t, err)
		equal(t, "Size", size, int64(want.Len()))
		size, err = f.s.Logs().Size(f.ctx, domain.NewID())
		must(t, err)
		equal(t, "Size of no log", size, int64(0))
		// A read from the middle of a large log starts at its byte, and a bounded one stops.
		var b strings.Builder
		from := int64(want.Len()/2 + 17)
		n, err := f.s.Logs().ReadFrom(f.ctx, e.ID, from, 100_000, func(p []byte) error { b.Write(p); return nil })
		must(t, err)
		if n != 100_000 || b.String() != want.String()[from:from+100_000] {
			t.Errorf("ReadFrom(%d, 100000): %d bytes, equal %v", from, n, b.String() == want.String()[from:from+100_000])
		}
	})
}

// unversioned are runs of a list without their versions (which count the writes to each run,
// the store's own bookkeeping), to compare with runs read one at a time.
func unversioned(runs []domain.Execution) []domain.Execution {
	out := slices.Clone(runs)
	for i := range out {
		out[i].Version = 0
	}
	return out
}
