package executions

import (
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

// outcome is a finished run of project queued at, lasting ms, with tests.
func outcome(task, project string, status domain.ExecStatus, at time.Time, ms int64, tests ...domain.TestResult) store.RunOutcome {
	start := at.Add(time.Second)
	end := start.Add(time.Duration(ms) * time.Millisecond)
	return store.RunOutcome{TaskID: task, ProjectID: project, Status: status, QueuedAt: at, StartedAt: &start,
		FinishedAt: &end, Tests: tests}
}

func test(suite, name string, s domain.TestStatus) domain.TestResult {
	return domain.TestResult{Suite: suite, Name: name, Status: s}
}

func TestBuildOverview(t *testing.T) {
	since := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	day := func(d int, h int) time.Time { return since.AddDate(0, 0, d).Add(time.Duration(h) * time.Hour) }
	projects := []domain.Project{{ID: "shop", Name: "Shop"}, {ID: "api", Name: "API"}}
	failing := domain.TestResult{Suite: "cart", Name: "pays", Status: domain.TestFailed, Error: "expected 200, got 500"}
	// Newest first, as the store lists them.
	runs := []store.RunOutcome{
		outcome("r9", "shop", domain.ExecFailed, day(29, 10), 9000, test("cart", "adds", domain.TestPassed), failing),
		outcome("r8", "shop", domain.ExecCancelled, day(29, 9), 1, failing), // not counted
		outcome("r7", "shop", domain.ExecPassed, day(28, 9), 1000, test("cart", "pays", domain.TestPassed), test("cart", "pays", domain.TestPassed)),
		outcome("r6", "", domain.ExecError, day(20, 1), 50), // no project, no tests
		outcome("r5", "shop", domain.ExecUnstable, day(20, 0), 2000, domain.TestResult{Suite: "cart", Name: "adds", Status: domain.TestFlaky, Retries: 1}),
		outcome("r4", "gone", domain.ExecPassed, day(3, 5), 100), // a deleted project
		outcome("r3", "api", domain.ExecPassed, day(0, 0), 300, test("", "skips", domain.TestSkipped)),
		outcome("r2", "api", domain.ExecFailed, day(0, 0), 400, domain.TestResult{Name: "retried", Status: domain.TestFailed, Retries: 2}),
		outcome("r1", "shop", domain.ExecPassed, day(-1, 23), 1, failing), // before the window
		outcome("r0", "shop", domain.ExecPassed, day(30, 0), 1, failing),  // after it
	}
	o := BuildOverview(runs, projects, since, 30)
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

	// Flaky: cart › pays passed in r7 (listed twice there: one run) and failed in r9; cart › adds passed in r9 and was flaky
	// in r5; retried failed only but was retried. Skipped tests are no sign.
	want := map[string]FlakyTest{
		"cart/pays": {ProjectID: "shop", Project: "Shop", Suite: "cart", Name: "pays", Passed: 1, Failed: 1, LastTaskID: "r9", LastSeen: day(29, 10)},
		"cart/adds": {ProjectID: "shop", Project: "Shop", Suite: "cart", Name: "adds", Passed: 1, Flaky: 1, Retried: 1, LastTaskID: "r5", LastSeen: day(20, 0)},
		"/retried":  {ProjectID: "api", Project: "API", Name: "retried", Failed: 1, Retried: 1, LastTaskID: "r2", LastSeen: day(0, 0)},
	}
	if len(o.Flaky) != len(want) {
		t.Fatalf("flaky: %+v", o.Flaky)
	}
	for _, f := range o.Flaky {
		if w, ok := want[f.Suite+"/"+f.Name]; !ok || w != f {
			t.Errorf("flaky %+v, want %+v", f, w)
		}
	}
	if o.Flaky[0].Name != "pays" {
		t.Errorf("flaky order: %+v", o.Flaky)
	}

	// Recent failures: FAILED and ERROR, newest first, with their first failed test.
	if len(o.RecentFailures) != 3 {
		t.Fatalf("failures: %+v", o.RecentFailures)
	}
	if f := o.RecentFailures[0]; f.TaskID != "r9" || f.Test != "pays" || f.Suite != "cart" || f.Message != "expected 200, got 500" || f.Project != "Shop" {
		t.Errorf("failure 0: %+v", f)
	}
	if f := o.RecentFailures[1]; f.TaskID != "r6" || f.Test != "" || f.Status != domain.ExecError || f.Project != "" {
		t.Errorf("failure 1: %+v", f)
	}
	if f := o.RecentFailures[2]; f.TaskID != "r2" || f.Test != "retried" {
		t.Errorf("failure 2: %+v", f)
	}
}

// The error of a run that failed before any test is its message.
func TestBuildOverviewFailureWithoutTests(t *testing.T) {
	since := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	r := outcome("r1", "", domain.ExecError, since, 10)
	r.Error = "the container could not start"
	o := BuildOverview([]store.RunOutcome{r}, nil, since, 30)
	if len(o.RecentFailures) != 1 || o.RecentFailures[0].Message != "the container could not start" {
		t.Fatalf("%+v", o.RecentFailures)
	}
}

func TestBuildOverviewBounds(t *testing.T) {
	since := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	if o := BuildOverview(nil, nil, since, 30); o.Runs != 0 || len(o.Projects) != 0 || o.Flaky == nil || o.RecentFailures == nil {
		t.Fatalf("empty: %+v", o)
	}
	var runs []store.RunOutcome
	for i := range 40 {
		runs = append(runs, outcome("r", "p", domain.ExecFailed, since.Add(time.Duration(40-i)*time.Hour), 1,
			test("s", string(rune('a'+i)), domain.TestFailed), test("s", string(rune('a'+i)), domain.TestPassed)))
	}
	o := BuildOverview(runs, nil, since, 30)
	if len(o.RecentFailures) != overviewFailures || len(o.Flaky) != overviewFlaky {
		t.Fatalf("failures %d flaky %d", len(o.RecentFailures), len(o.Flaky))
	}
}
