package executions

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"verdict/internal/domain"
	"verdict/internal/store"
)

func TestOverviewSince(t *testing.T) {
	now := time.Date(2026, 3, 30, 17, 5, 0, 0, time.UTC)
	if got, want := OverviewSince(now), time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Fatalf("OverviewSince = %v, want %v", got, want)
	}
}

func TestPercentile(t *testing.T) {
	for _, c := range []struct {
		in   []int64
		p    int
		want int64
	}{
		{nil, 50, 0},
		{[]int64{7}, 50, 7},
		{[]int64{7}, 90, 7},
		{[]int64{4, 1, 3, 2}, 50, 2},
		{[]int64{4, 1, 3, 2}, 90, 4},
		{[]int64{10, 20, 30, 40, 50, 60, 70, 80, 90, 100}, 90, 90},
		{[]int64{10, 20, 30, 40, 50, 60, 70, 80, 90, 100}, 50, 50},
		{[]int64{5, 1, 3}, 50, 3},
	} {
		if got := percentile(append([]int64(nil), c.in...), c.p); got != c.want {
			t.Errorf("percentile(%v, %d) = %d, want %d", c.in, c.p, got, c.want)
		}
	}
}

// outcome is a finished run of project queued at, lasting ms.
func outcome(task, project string, status domain.ExecStatus, at time.Time, ms int64) store.RunOutcome {
	start := at.Add(time.Second)
	end := start.Add(time.Duration(ms) * time.Millisecond)
	return store.RunOutcome{ID: "id-" + task, TaskID: task, ProjectID: project, Status: status, QueuedAt: at, StartedAt: &start,
		FinishedAt: &end}
}

// tracked is a test of project whose window holds points (on branch main unless they name
// one), newest first as the store keeps it.
func tracked(id, project, suite, name string, points ...domain.TestPoint) domain.TrackedTest {
	t := domain.TrackedTest{ID: id, ProjectID: project, Scope: domain.TestScope(project, "suite:1"), Suite: suite, Name: name}
	for _, p := range points {
		if p.Branch == "" {
			p.Branch = "main"
		}
		t.Merge(p)
	}
	return t
}

func point(task string, s domain.TestStatus, at time.Time) domain.TestPoint {
	return domain.TestPoint{TaskID: task, Status: s, At: at}
}

func TestBuildOverview(t *testing.T) {
	since := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	day := func(d int, h int) time.Time { return since.AddDate(0, 0, d).Add(time.Duration(h) * time.Hour) }
	projects := []domain.Project{{ID: "shop", Name: "Shop"}, {ID: "api", Name: "API"}}
	// Newest first, as the store lists them.
	runs := []store.RunOutcome{
		outcome("r9", "shop", domain.ExecFailed, day(29, 10), 9000),
		outcome("r8", "shop", domain.ExecCancelled, day(29, 9), 1), // not counted
		outcome("r7", "shop", domain.ExecPassed, day(28, 9), 1000),
		outcome("r6", "", domain.ExecError, day(20, 1), 50), // no project, no tests
		outcome("r5", "shop", domain.ExecUnstable, day(20, 0), 2000),
		outcome("r4", "gone", domain.ExecPassed, day(3, 5), 100), // a deleted project
		outcome("r3", "api", domain.ExecPassed, day(0, 0), 300),
		outcome("r2", "api", domain.ExecFailed, day(0, 0), 400),
		outcome("r1", "shop", domain.ExecPassed, day(-1, 23), 1), // before the window
		outcome("r0", "shop", domain.ExecPassed, day(30, 0), 1),  // after it
	}
	runs[3].Error = "the container could not start"
	runs[7].Error = "exit status 1"
	end := func(i int) time.Time { return *runs[i].FinishedAt }
	// Tests with a flake event in their window, most recently seen first (as the store lists
	// them); the results were recorded as each run ended.
	tests := []domain.TrackedTest{
		// pays passed in r7 and failed in r9: one flake event. Its flip before the window
		// (r1 failed after a pass on day -2) does not count.
		tracked("t-pays", "shop", "cart", "pays", point("r-old", domain.TestPassed, day(-2, 0)),
			point("r1", domain.TestFailed, end(8)), point("r7", domain.TestPassed, end(2)), point("r9", domain.TestFailed, end(0)),
			point("r0", domain.TestPassed, end(9))), // ended after the window: left out
		// adds passed on a retry in r5.
		tracked("t-adds", "shop", "cart", "adds", point("r5", domain.TestFlaky, end(4)), point("r9", domain.TestPassed, end(0))),
		// Failures beside passes that are no flake event: a fix on another commit, and a
		// failure on another branch.
		tracked("t-fixed", "shop", "cart", "fixed",
			domain.TestPoint{TaskID: "r5", Status: domain.TestFailed, Commit: "a1", At: end(4)},
			domain.TestPoint{TaskID: "r7", Status: domain.TestPassed, Commit: "b2", At: end(2)}),
		tracked("t-branch", "shop", "cart", "branch",
			domain.TestPoint{TaskID: "r5", Status: domain.TestFailed, Branch: "feature", At: end(4)},
			domain.TestPoint{TaskID: "r7", Status: domain.TestPassed, At: end(2)}),
		// Flips only before the window.
		tracked("t-old", "shop", "cart", "old", point("r-old", domain.TestPassed, day(-3, 0)),
			point("r1", domain.TestFailed, end(8)), point("r7", domain.TestPassed, end(2))),
		// A test of an image's runs without a project: passed on a retry in r3, failed in r2
		// (which ended last).
		tracked("t-login", "", "", "login", point("r2", domain.TestFailed, end(7)), point("r3", domain.TestFlaky, end(6))),
	}
	o := BuildOverview(runs, tests, projects, since, 30)
	if o.Runs != 7 || o.Days != 30 || !o.Since.Equal(since) {
		t.Fatalf("runs %d days %d since %v", o.Runs, o.Days, o.Since)
	}
	if len(o.Projects) != 4 {
		t.Fatalf("projects: %+v", o.Projects)
	}
	shop := o.Projects[0]
	if shop.ProjectID != "shop" || shop.Name != "Shop" || shop.Runs != 3 || shop.Passed != 2 {
		t.Fatalf("shop: %+v", shop)
	}
	if shop.PassRate < 0.66 || shop.PassRate > 0.67 {
		t.Fatalf("shop pass rate %v", shop.PassRate)
	}
	if shop.MedianMs != 2000 || shop.P90Ms != 9000 {
		t.Fatalf("shop durations: median %d p90 %d", shop.MedianMs, shop.P90Ms)
	}
	if len(shop.Daily) != 30 || !shop.Daily[0].Day.Equal(since) || !shop.Daily[29].Day.Equal(day(29, 0)) {
		t.Fatalf("shop days: %d, first %v", len(shop.Daily), shop.Daily[0].Day)
	}
	if d := shop.Daily[29]; d.Runs != 1 || d.Passed != 0 || d.PassRate() != 0 {
		t.Fatalf("shop day 29: %+v", d)
	}
	if d := shop.Daily[20]; d.Runs != 1 || d.Passed != 1 || d.PassRate() != 1 {
		t.Fatalf("shop day 20 (UNSTABLE counts as passed): %+v", d)
	}
	api := o.Projects[1]
	if api.Name != "API" || api.Runs != 2 || api.Passed != 1 || api.PassRate != 0.5 || api.MedianMs != 300 || api.P90Ms != 400 {
		t.Fatalf("api: %+v", api)
	}
	// One run each: the named project first, "No project" last.
	if o.Projects[2].Name != "(deleted project)" || o.Projects[3].ProjectID != "" || o.Projects[3].Name != "" {
		t.Fatalf("order: %+v", o.Projects)
	}
	if nop := o.Projects[3]; nop.Runs != 1 || nop.Passed != 0 || nop.MedianMs != 50 {
		t.Fatalf("no project: %+v", nop)
	}

	// What the overview asks of the results: the recent failures' runs, and the flaky tests'
	// windows within its own (from their oldest point in it). login has the most failures,
	// then pays and adds with one each, the newest first.
	if got, want := o.FailedRuns(), []string{"id-r9", "id-r6", "id-r2"}; !slices.Equal(got, want) {
		t.Fatalf("failed runs %v, want %v", got, want)
	}
	wantFrom := []store.TestFrom{{TestID: "t-login", From: end(6)}, {TestID: "t-pays", From: end(2)}, {TestID: "t-adds", From: end(4)}}
	if got := o.FlakyWindows(); !slices.Equal(got, wantFrom) {
		t.Fatalf("flaky windows %v, want %v", got, wantFrom)
	}
	o.AddResults(
		[]domain.TestOutcome{
			{ExecutionID: "id-r9", Suite: "cart", Name: "pays", Status: domain.TestFailed, Message: "expected 200, got 500"},
			{ExecutionID: "id-r2", Suite: "", Name: "login", Status: domain.TestFailed, Message: "timeout"},
			{ExecutionID: "id-r7", Suite: "cart", Name: "other", Status: domain.TestFailed}, // not a recent failure
		},
		[]domain.TestOutcome{
			{TestID: "t-pays", TaskID: "r9", Status: domain.TestFailed, Retries: 1},
			{TestID: "t-pays", TaskID: "r7", Status: domain.TestPassed},
			{TestID: "t-pays", TaskID: "r1", Status: domain.TestFailed, Retries: 2}, // before the window
			{TestID: "t-adds", TaskID: "r5", Status: domain.TestFlaky, Retries: 1},
			{TestID: "t-adds", TaskID: "r9", Status: domain.TestPassed},
			{TestID: "t-login", TaskID: "r2", Status: domain.TestFailed, Retries: 2},
			{TestID: "t-login", TaskID: "r3", Status: domain.TestFlaky},              // a pass on a retry was retried
			{TestID: "t-fixed", TaskID: "r5", Status: domain.TestFailed, Retries: 1}, // not a flaky test
		})

	want := []FlakyTest{
		{Name: "login", Failed: 1, Flaky: 1, Retried: 2, LastTaskID: "r2", LastSeen: end(7), testID: "t-login"},
		{ProjectID: "shop", Project: "Shop", Suite: "cart", Name: "pays", Passed: 1, Failed: 1, Retried: 1, LastTaskID: "r9",
			LastSeen: end(0), testID: "t-pays"},
		{ProjectID: "shop", Project: "Shop", Suite: "cart", Name: "adds", Passed: 1, Flaky: 1, Retried: 1, LastTaskID: "r5",
			LastSeen: end(4), testID: "t-adds"},
	}
	if !slices.Equal(o.Flaky, want) {
		t.Errorf("flaky:\n got %+v\nwant %+v", o.Flaky, want)
	}

	// Recent failures: FAILED and ERROR, newest first, with their first failed test.
	if len(o.RecentFailures) != 3 {
		t.Fatalf("failures: %+v", o.RecentFailures)
	}
	if f := o.RecentFailures[0]; f.TaskID != "r9" || f.Test != "pays" || f.Suite != "cart" || f.Message != "expected 200, got 500" || f.Project != "Shop" {
		t.Errorf("failure 0: %+v", f)
	}
	if f := o.RecentFailures[1]; f.TaskID != "r6" || f.Test != "" || f.Status != domain.ExecError || f.Project != "" ||
		f.Message != "the container could not start" {
		t.Errorf("failure 1: %+v", f)
	}
	if f := o.RecentFailures[2]; f.TaskID != "r2" || f.Test != "login" || f.Message != "timeout" || f.Project != "API" {
		t.Errorf("failure 2: %+v", f)
	}
}

// The error of a run that failed before any test is its message.
func TestBuildOverviewFailureWithoutTests(t *testing.T) {
	since := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	r := outcome("r1", "", domain.ExecError, since, 10)
	r.Error = "the container could not start"
	o := BuildOverview([]store.RunOutcome{r}, nil, nil, since, 30)
	o.AddResults(nil, nil)
	if len(o.RecentFailures) != 1 || o.RecentFailures[0].Message != "the container could not start" {
		t.Fatalf("%+v", o.RecentFailures)
	}
}

func TestBuildOverviewBounds(t *testing.T) {
	since := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	if o := BuildOverview(nil, nil, nil, since, 30); o.Runs != 0 || len(o.Projects) != 0 || o.Flaky == nil || o.RecentFailures == nil ||
		len(o.FailedRuns()) != 0 || len(o.FlakyWindows()) != 0 {
		t.Fatalf("empty: %+v", o)
	}
	var runs []store.RunOutcome
	var tests []domain.TrackedTest
	for i := range 40 {
		at := since.Add(time.Duration(40-i) * time.Hour)
		runs = append(runs, outcome(fmt.Sprint("r", i), "p", domain.ExecFailed, at, 1))
		// Test i flips i%5+1 times: the most failures first, then the newest.
		var points []domain.TestPoint
		for k := range 2 * (i%5 + 1) {
			s := domain.TestPassed
			if k%2 == 1 {
				s = domain.TestFailed
			}
			points = append(points, point(fmt.Sprint("r", i, "-", k), s, at.Add(time.Duration(k)*time.Minute)))
		}
		tests = append(tests, tracked(fmt.Sprint("t", i), "p", "s", fmt.Sprint("test ", i), points...))
	}
	o := BuildOverview(runs, tests, nil, since, 30)
	if len(o.RecentFailures) != overviewFailures || len(o.Flaky) != overviewFlaky || len(o.FlakyWindows()) != overviewFlaky ||
		len(o.FailedRuns()) != overviewFailures {
		t.Fatalf("failures %d flaky %d", len(o.RecentFailures), len(o.Flaky))
	}
	// Five failures each: tests 4, 9, … 39 (8 of them), newest (lowest i) first; then four each.
	if f := o.Flaky[0]; f.Name != "test 4" || f.Failed != 5 || f.Passed != 5 {
		t.Errorf("first flaky: %+v", f)
	}
	if f := o.Flaky[7]; f.Name != "test 39" || f.Failed != 5 {
		t.Errorf("eighth flaky: %+v", f)
	}
	if f := o.Flaky[8]; f.Name != "test 3" || f.Failed != 4 {
		t.Errorf("ninth flaky: %+v", f)
	}
	for i, f := range o.FlakyWindows() {
		if f.TestID != o.Flaky[i].testID {
			t.Fatalf("window %d is of %s, flaky test of %s", i, f.TestID, o.Flaky[i].testID)
		}
	}
}
