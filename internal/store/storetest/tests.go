package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"verdict/internal/domain"
	"verdict/internal/store"
)

// testTests checks TestRepo: a finished run's results recorded once, tests found by identity
// within their scope, aggregates the same whatever order runs are recorded in, the list's
// filters, a test's history, a run's outcomes, quarantine, and never another organization's.
func testTests(t *testing.T, open Opener) {
	f := setup(t, open)
	o, other := f.org(), f.org()
	p := f.project(o.ID, "Web")
	finished := func(orgID, project string, at time.Time, labels map[string]string) *domain.Execution {
		return f.runWith(orgID, at, func(e *domain.Execution) {
			end := at.Add(time.Minute)
			e.Status, e.ProjectID, e.FinishedAt, e.Labels = domain.ExecFailed, project, &end, labels
		})
	}
	outcome := func(suite, name string, s domain.TestStatus) domain.TestOutcome {
		o := domain.TestOutcome{Suite: suite, Name: name, Status: s, DurationMs: 100, Retries: 0}
		if s == domain.TestFailed {
			o.Signature, o.Message = "abcd", "expected 200"
		}
		return o
	}
	repo := f.s.Tests()

	// Unrecorded: finished runs, oldest first; a PENDING run is not one.
	r1 := finished(o.ID, p.ID, base, map[string]string{"branch": "main", "commit": "a1"})
	r2 := finished(o.ID, p.ID, base.Add(time.Hour), map[string]string{"branch": "main", "commit": "a1"})
	r3 := finished(o.ID, p.ID, base.Add(2*time.Hour), map[string]string{"branch": "main", "commit": "a1"})
	f.run(o.ID, base.Add(3*time.Hour))
	otherRun := finished(other.ID, "", base.Add(time.Minute), nil)
	queue, err := repo.Unrecorded(f.ctx, 10)
	must(t, err)
	var ids []string
	for _, e := range queue {
		ids = append(ids, e.ID)
	}
	equal(t, "Unrecorded: finished runs, oldest first", ids, []string{r1.ID, otherRun.ID, r2.ID, r3.ID})

	// Recorded newest first (a backfill beside runs ending now): the same aggregates.
	record := func(run *domain.Execution, outs ...domain.TestOutcome) {
		t.Helper()
		must(t, repo.Record(f.ctx, store.RunResults{Run: run, Outcomes: outs}))
	}
	record(r3, outcome("cart", "pays", domain.TestFailed), outcome("cart", "adds", domain.TestPassed))
	record(r1, outcome("cart", "pays", domain.TestFailed), outcome("cart", "adds", domain.TestPassed))
	record(r2, outcome("cart", "pays", domain.TestPassed), outcome("cart", "adds", domain.TestFlaky),
		outcome("login", "pays", domain.TestSkipped))
	record(r2, outcome("cart", "pays", domain.TestFailed)) // again: nothing changes
	record(otherRun, outcome("cart", "pays", domain.TestFailed))

	queue, err = repo.Unrecorded(f.ctx, 10)
	must(t, err)
	equal(t, "Unrecorded after recording", len(queue), 0)

	page, total, err := repo.List(f.ctx, o.ID, store.TestFilter{ProjectID: p.ID, Limit: 10})
	must(t, err)
	equal(t, "tests of the project", total, 3)
	var pays *domain.TrackedTest
	for i := range page {
		if page[i].Suite == "cart" && page[i].Name == "pays" {
			pays = &page[i]
		}
	}
	if pays == nil {
		t.Fatalf("cart/pays not listed: %+v", page)
	}
	equal(t, "runs", pays.Runs, 3)
	equal(t, "last status", pays.LastStatus(), domain.TestFailed)
	equal(t, "window newest first", []string{pays.Recent[0].TaskID, pays.Recent[1].TaskID, pays.Recent[2].TaskID},
		[]string{r3.TaskID, r2.TaskID, r1.TaskID})
	equal(t, "last failed", pays.LastFailedTaskID, r3.TaskID)
	equal(t, "last passed", pays.LastPassedTaskID, r2.TaskID)
	equal(t, "first seen", pays.FirstSeenAt, r1.FinishedAt.UTC())
	equal(t, "scope", pays.Scope, domain.TestScope(p.ID, ""))
	// fail, pass, fail on one commit: two flips, flaky.
	rates := domain.Rates(pays.Recent)
	equal(t, "flaky", rates.Flaky, true)

	flaky, total, err := repo.List(f.ctx, o.ID, store.TestFilter{ProjectID: p.ID, Flaky: true, Limit: 10})
	must(t, err)
	equal(t, "flaky filter", total, 1)
	equal(t, "flaky filter's test", flaky[0].ID, pays.ID)
	found, total, err := repo.List(f.ctx, o.ID, store.TestFilter{ProjectID: p.ID, Query: "LOG", Limit: 10})
	must(t, err)
	equal(t, "search by suite, any case", total, 1)
	equal(t, "search's test", found[0].Suite, "login")
	_, total, err = repo.List(f.ctx, o.ID, store.TestFilter{ProjectID: p.ID, Query: "%", Limit: 10})
	must(t, err)
	equal(t, "a wildcard is a character", total, 0)
	_, total, err = repo.List(f.ctx, o.ID, store.TestFilter{ProjectID: p.ID, Status: domain.TestPassed, Limit: 10})
	must(t, err)
	equal(t, "by last status", total, 1) // cart/adds passed last (r3)
	paged, total, err := repo.List(f.ctx, o.ID, store.TestFilter{ProjectID: p.ID, Limit: 1, Offset: 1})
	must(t, err)
	equal(t, "a page", [2]int{len(paged), total}, [2]int{1, 3})
	_, total, err = repo.List(f.ctx, o.ID, store.TestFilter{Limit: 10})
	must(t, err)
	equal(t, "the organization's tests", total, 3)

	hist, err := repo.History(f.ctx, o.ID, pays.ID, 2)
	must(t, err)
	equal(t, "history newest first, bounded", len(hist), 2)
	equal(t, "history's newest", [3]string{hist[0].TaskID, string(hist[0].Status), hist[0].Signature},
		[3]string{r3.TaskID, string(domain.TestFailed), "abcd"})
	equal(t, "history's labels", [2]string{hist[0].Branch, hist[0].Commit}, [2]string{"main", "a1"})

	run, err := repo.ForRun(f.ctx, o.ID, r2.ID)
	must(t, err)
	equal(t, "a run's outcomes", len(run), 3)
	for _, oc := range run {
		if oc.Suite == "" || oc.Name == "" || oc.TestID == "" {
			t.Errorf("an outcome without its test: %+v", oc)
		}
	}

	// Tenancy: the other organization's test of the same name is another test.
	if _, err := repo.Get(f.ctx, other.ID, pays.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get of another organization's test: %v", err)
	}
	if h, err := repo.History(f.ctx, other.ID, pays.ID, 10); err != nil || len(h) != 0 {
		t.Errorf("History of another organization's test: %v, %d", err, len(h))
	}
	if r, err := repo.ForRun(f.ctx, other.ID, r2.ID); err != nil || len(r) != 0 {
		t.Errorf("ForRun of another organization's run: %v, %d", err, len(r))
	}
	_, total, err = repo.List(f.ctx, other.ID, store.TestFilter{Limit: 10})
	must(t, err)
	equal(t, "the other organization's tests", total, 1)

	// Quarantine.
	q := &domain.Quarantine{Reason: "timing", Until: base.Add(48 * time.Hour), By: "u1", CreatedAt: base}
	must(t, repo.SetQuarantine(f.ctx, o.ID, pays.ID, q))
	if err := repo.SetQuarantine(f.ctx, other.ID, pays.ID, q); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("quarantining another organization's test: %v", err)
	}
	got, err := repo.Get(f.ctx, o.ID, pays.ID)
	must(t, err)
	equal(t, "quarantine", got.Quarantine, q)
	qs, err := repo.Quarantined(f.ctx, o.ID, domain.TestScope(p.ID, ""), base.Add(time.Hour))
	must(t, err)
	equal(t, "quarantined in force", len(qs), 1)
	qs, err = repo.Quarantined(f.ctx, o.ID, domain.TestScope(p.ID, ""), base.Add(49*time.Hour))
	must(t, err)
	equal(t, "an expired quarantine", len(qs), 0)
	_, total, err = repo.List(f.ctx, o.ID, store.TestFilter{ProjectID: p.ID, Quarantined: true, Now: base, Limit: 10})
	must(t, err)
	equal(t, "quarantined filter", total, 1)
	must(t, repo.SetQuarantine(f.ctx, o.ID, pays.ID, nil))
	got, err = repo.Get(f.ctx, o.ID, pays.ID)
	must(t, err)
	equal(t, "quarantine lifted", got.Quarantine, (*domain.Quarantine)(nil))

	// A deleted run takes its results with it; the test stays.
	must(t, f.s.Executions().Delete(f.ctx, o.ID, r3.TaskID))
	hist, err = repo.History(f.ctx, o.ID, pays.ID, 10)
	must(t, err)
	equal(t, "history after a run's deletion", len(hist), 2)
}

// testTestsAtScale records a run of many tests (more than a statement's chunk), twice, and
// a run of an image without a project.
func testTestsAtScale(t *testing.T, open Opener) {
	f := setup(t, open)
	o := f.org()
	end := base.Add(time.Minute)
	run := f.runWith(o.ID, base, func(e *domain.Execution) { e.Status, e.FinishedAt = domain.ExecPassed, &end })
	outs := make([]domain.TestOutcome, 1200)
	for i := range outs {
		outs[i] = domain.TestOutcome{Suite: fmt.Sprintf("suite%d", i%7), Name: fmt.Sprintf("test %d", i), Status: domain.TestPassed}
	}
	must(t, f.s.Tests().Record(f.ctx, store.RunResults{Run: run, Outcomes: outs}))
	_, total, err := f.s.Tests().List(f.ctx, o.ID, store.TestFilter{Scope: domain.TestScope("", "suite:pass"), Limit: 5})
	must(t, err)
	equal(t, "tests of an image's runs", total, 1200)
	got, err := f.s.Tests().ForRun(f.ctx, o.ID, run.ID)
	must(t, err)
	equal(t, "outcomes", len(got), 1200)

	end2 := base.Add(2 * time.Minute)
	run2 := f.runWith(o.ID, base.Add(time.Minute), func(e *domain.Execution) { e.Status, e.FinishedAt = domain.ExecPassed, &end2 })
	must(t, f.s.Tests().Record(f.ctx, store.RunResults{Run: run2, Outcomes: outs}))
	page, _, err := f.s.Tests().List(f.ctx, o.ID, store.TestFilter{Limit: 1})
	must(t, err)
	equal(t, "runs after two", page[0].Runs, 2)
}
