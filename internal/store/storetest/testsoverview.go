package storetest

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"verdict/internal/domain"
	"verdict/internal/store"
)

// testTestsOverview checks the reads of tests' histories that the run-health overview and an
// image's insights make: Flaking (the tests seen since a time with a flake event in their
// window), ResultsFrom (a test's results from a time on), FirstFailed (a run's first failed
// test by suite and name, bytewise) and FlakyInRuns (the tests of runs flaky by their window or
// FLAKY in one of them); each bounded to the organization, and the lists longer than one
// statement's chunk read whole.
func testTestsOverview(t *testing.T, open Opener) {
	f := setup(t, open)
	o, other := f.org(), f.org()
	p := f.project(o.ID, "Web")
	repo := f.s.Tests()
	n := 0
	// record finishes a run of orgID's project (or of image "suite:pass" without one) at `at`
	// and records its outcomes: "suite name status [retries]".
	record := func(orgID, project string, at time.Time, results ...string) *domain.Execution {
		t.Helper()
		n++
		run := f.runWith(orgID, at.Add(-time.Minute), func(e *domain.Execution) {
			e.Status, e.ProjectID, e.FinishedAt = domain.ExecFailed, project, &at
		})
		var outs []domain.TestOutcome
		for _, r := range results {
			w := strings.Fields(r) // suite, name, status, and the retries if any
			out := domain.TestOutcome{Suite: w[0], Name: w[1], Status: domain.TestStatus(w[2]), DurationMs: 10}
			if len(w) > 3 {
				out.Retries, _ = strconv.Atoi(w[3])
			}
			if out.Status == domain.TestFailed {
				out.Message = "failed in run " + run.TaskID
			}
			outs = append(outs, out)
		}
		must(t, repo.Record(f.ctx, store.RunResults{Run: run, Outcomes: outs}))
		return run
	}
	since := base
	// Before the window: old flips only there (seen last before since).
	record(o.ID, p.ID, since.Add(-3*time.Hour), "old flips passed", "cart pays passed")
	record(o.ID, p.ID, since.Add(-2*time.Hour), "old flips failed", "cart pays passed")
	// In it: pays flips (passed, failed, passed: two flake events, flaky), adds passes on a
	// retry once (and is seen last in r2), sums always passes, breaks always fails (after
	// retries).
	r1 := record(o.ID, p.ID, since.Add(time.Hour), "cart pays failed 1", "cart adds passed", "cart sums passed", "Zeta breaks failed 2")
	r2 := record(o.ID, p.ID, since.Add(2*time.Hour), "cart pays passed", "cart adds flaky 1", "cart sums passed", "Zeta breaks failed 2",
		"alpha breaks failed", "Zeta alone failed")
	r3 := record(o.ID, p.ID, since.Add(3*time.Hour), "cart pays passed", "cart sums passed")
	// Another organization's flipping test, seen last.
	o1 := record(other.ID, "", since.Add(4*time.Hour), "cart pays failed")
	o2 := record(other.ID, "", since.Add(5*time.Hour), "cart pays passed")

	names := func(tests []domain.TrackedTest) []string {
		var out []string
		for _, x := range tests {
			out = append(out, x.Suite+"/"+x.Name)
		}
		return out
	}
	flaking, err := repo.Flaking(f.ctx, o.ID, since, 10)
	must(t, err)
	equal(t, "Flaking: tests with a flake event seen since, newest seen first", names(flaking), []string{"cart/pays", "cart/adds"})
	flaking, err = repo.Flaking(f.ctx, o.ID, since.Add(-3*time.Hour), 10)
	must(t, err)
	equal(t, "Flaking from earlier", names(flaking), []string{"cart/pays", "cart/adds", "old/flips"})
	flaking, err = repo.Flaking(f.ctx, o.ID, since, 1)
	must(t, err)
	equal(t, "Flaking bounded", names(flaking), []string{"cart/pays"})
	if len(flaking) == 1 {
		equal(t, "with its window", len(flaking[0].Recent), 5)
	}
	flaking, err = repo.Flaking(f.ctx, o.ID, since, 0)
	must(t, err)
	equal(t, "Flaking with no room", len(flaking), 0)
	flaking, err = repo.Flaking(f.ctx, other.ID, since, 10)
	must(t, err)
	equal(t, "another organization's", names(flaking), []string{"cart/pays"})

	// ResultsFrom: a test's results from a time on, with their retries and messages.
	all, _, err := repo.List(f.ctx, o.ID, store.TestFilter{ProjectID: p.ID, Limit: 50})
	must(t, err)
	ids := map[string]string{}
	for _, x := range all {
		ids[x.Suite+"/"+x.Name] = x.ID
	}
	from, err := repo.ResultsFrom(f.ctx, o.ID, []store.TestFrom{{TestID: ids["cart/pays"], From: *r1.FinishedAt},
		{TestID: ids["cart/adds"], From: *r2.FinishedAt}, {TestID: ids["cart/sums"], From: since.Add(time.Minute)}})
	must(t, err)
	want := []resultView{
		{ids["cart/pays"], r1.TaskID, domain.TestFailed, 1, "failed in run " + r1.TaskID},
		{ids["cart/pays"], r2.TaskID, domain.TestPassed, 0, ""},
		{ids["cart/pays"], r3.TaskID, domain.TestPassed, 0, ""},
		{ids["cart/adds"], r2.TaskID, domain.TestFlaky, 1, ""},
		{ids["cart/sums"], r1.TaskID, domain.TestPassed, 0, ""},
		{ids["cart/sums"], r2.TaskID, domain.TestPassed, 0, ""},
		{ids["cart/sums"], r3.TaskID, domain.TestPassed, 0, ""},
	}
	sortResults(want)
	equal(t, "ResultsFrom", viewResults(from), want)
	from, err = repo.ResultsFrom(f.ctx, other.ID, []store.TestFrom{{TestID: ids["cart/pays"], From: since}})
	must(t, err)
	equal(t, "ResultsFrom of another organization's tests", len(from), 0)
	from, err = repo.ResultsFrom(f.ctx, o.ID, nil)
	must(t, err)
	equal(t, "ResultsFrom of no tests", len(from), 0)

	// FirstFailed: by suite, then name, bytewise ("Zeta" before "alpha" and "cart", "alone"
	// before "breaks"); a run without a failure has none; another organization's runs are not
	// read.
	first, err := repo.FirstFailed(f.ctx, o.ID, []string{r1.ID, r2.ID, r3.ID, o1.ID})
	must(t, err)
	byRun := map[string]string{}
	for _, x := range first {
		byRun[x.ExecutionID] = x.Suite + "/" + x.Name + ": " + x.Message + " (" + x.TaskID + ")"
	}
	equal(t, "FirstFailed", byRun, map[string]string{
		r1.ID: "Zeta/breaks: failed in run " + r1.TaskID + " (" + r1.TaskID + ")",
		r2.ID: "Zeta/alone: failed in run " + r2.TaskID + " (" + r2.TaskID + ")",
	})

	// FlakyInRuns: pays is flaky by its window (it passed in r3), adds passed on a retry in r2;
	// sums and breaks are neither; the other organization's pays is not read.
	flakyIn, err := repo.FlakyInRuns(f.ctx, o.ID, []string{r3.ID, o2.ID})
	must(t, err)
	got := names(flakyIn)
	slices.Sort(got)
	equal(t, "FlakyInRuns of the last run: flaky by the window", got, []string{"cart/pays"})
	flakyIn, err = repo.FlakyInRuns(f.ctx, o.ID, []string{r1.ID, r2.ID, r3.ID})
	must(t, err)
	got = names(flakyIn)
	slices.Sort(got)
	equal(t, "FlakyInRuns of the three runs, each test once", got, []string{"cart/adds", "cart/pays"})
	flakyIn, err = repo.FlakyInRuns(f.ctx, other.ID, []string{r2.ID})
	must(t, err)
	equal(t, "FlakyInRuns of another organization's run", len(flakyIn), 0)

	// Lists longer than a statement's chunk: 60 runs of one test each, and 60 tests.
	q := f.project(o.ID, "Wide")
	var runIDs []string
	var wide []store.TestFrom
	for i := range 60 {
		r := record(o.ID, q.ID, since.Add(time.Duration(10+i)*time.Hour), fmt.Sprintf("wide t%02d failed", i),
			fmt.Sprintf("wide u%02d flaky 1", i))
		runIDs = append(runIDs, r.ID)
	}
	tests, _, err := repo.List(f.ctx, o.ID, store.TestFilter{ProjectID: q.ID, Limit: 200})
	must(t, err)
	for _, x := range tests {
		wide = append(wide, store.TestFrom{TestID: x.ID, From: since})
	}
	equal(t, "the wide project's tests", len(wide), 120)
	from, err = repo.ResultsFrom(f.ctx, o.ID, wide)
	must(t, err)
	equal(t, "ResultsFrom of 120 tests, each result once", len(from), 120)
	first, err = repo.FirstFailed(f.ctx, o.ID, runIDs)
	must(t, err)
	seen := map[string]bool{}
	for _, x := range first {
		seen[x.ExecutionID] = true
	}
	equal(t, "FirstFailed of 60 runs, one each", []int{len(first), len(seen)}, []int{60, 60})
	flakyIn, err = repo.FlakyInRuns(f.ctx, o.ID, runIDs)
	must(t, err)
	equal(t, "FlakyInRuns of 60 runs", len(flakyIn), 60)
}

// resultView is what ResultsFrom's contract test compares of a result.
type resultView struct {
	Test, Task string
	Status     domain.TestStatus
	Retries    int
	Message    string
}

// viewResults are outs as compared, by test and run.
func viewResults(outs []domain.TestOutcome) []resultView {
	out := make([]resultView, 0, len(outs))
	for _, x := range outs {
		out = append(out, resultView{x.TestID, x.TaskID, x.Status, x.Retries, x.Message})
	}
	sortResults(out)
	return out
}

func sortResults(rs []resultView) {
	slices.SortFunc(rs, func(a, b resultView) int { return cmp.Or(cmp.Compare(a.Test, b.Test), cmp.Compare(a.Task, b.Task)) })
}
