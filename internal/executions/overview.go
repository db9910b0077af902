package executions

import (
	"cmp"
	"context"
	"slices"
	"time"

	"verdict/internal/domain"
	"verdict/internal/identity"
	"verdict/internal/store"
)

// The run-health overview looks at the organization's runs of the last OverviewDays days (UTC
// days, today included), at most OverviewMaxRuns of them (the newest).
const (
	OverviewDays    = 30
	OverviewMaxRuns = 2000
	// overviewFlaky and overviewFailures bound the overview's lists.
	overviewFlaky    = 25
	overviewFailures = 10
)

// Overview is the run health of an organization over a window of days.
type Overview struct {
	Since time.Time // the first day of the window, at 00:00 UTC
	Days  int
	// Runs is the number of finished runs read; Capped: the window held more, and only the
	// newest OverviewMaxRuns were read.
	Runs   int
	Capped bool
	// Projects are the projects with runs in the window, the most runs first; runs without a
	// project are one entry with ProjectID "".
	Projects       []ProjectHealth
	Flaky          []FlakyTest
	RecentFailures []RecentFailure

	windows [][]domain.TestPoint // of each of Flaky: its window within the overview's, newest first
}

// ProjectHealth is one project's figures over the window. A run passed when it ended PASSED or
// UNSTABLE (every test passed, some only on a retry); FAILED and ERROR did not; CANCELLED runs
// and runs still going are not counted.
type ProjectHealth struct {
	ProjectID string // "" for runs without a project
	Name      string // "" for runs without a project; "(deleted project)" for a project gone
	Runs      int
	Passed    int
	PassRate  float64 // Passed / Runs, 0..1
	// MedianMs and P90Ms are of the runs' durations (start to finish; runs never started are
	// left out), by nearest rank; 0 when no run has one.
	MedianMs, P90Ms int64
	Daily           []DayHealth // Days entries, oldest first
}

// DayHealth is one UTC day of a project.
type DayHealth struct {
	Day    time.Time
	Runs   int
	Passed int
}

// PassRate is the day's pass rate, 0..1 (0 for a day without runs: see Runs).
func (d DayHealth) PassRate() float64 {
	if d.Runs == 0 {
		return 0
	}
	return float64(d.Passed) / float64(d.Runs)
}

// FlakyTest is a test of a project (or of an image's runs without one) whose newest results
// within the window (its window: at most domain.FlakeWindow of them) hold a flake event
// (domain.Rates): a pass only on a retry, or a pass and a failure in a row on one branch with
// no change of commit. Its counts are of those results.
type FlakyTest struct {
	ProjectID, Project string
	Suite, Name        string
	Passed, Failed     int // results that passed (on the first attempt), failed
	Flaky              int // results that passed only on a retry
	Retried            int // results that were retried (whatever their outcome)
	// LastTaskID is the newest run in which it failed or passed only on a retry; LastSeen is
	// when that run ended.
	LastTaskID string
	LastSeen   time.Time

	testID string
}

// RecentFailure is a FAILED or ERROR run with its first failed test by suite and name (none for
// a run that failed before any test reported, e.g. a non-zero exit or an ERROR).
type RecentFailure struct {
	TaskID, ProjectID, Project string
	Status                     domain.ExecStatus
	QueuedAt                   time.Time
	Suite, Test, Message       string

	executionID string
}

// overviewTests bounds the tests with a flake event the overview reads (the most recently
// seen): its flaky tests are the overviewFlaky with the most failures among them.
const overviewTests = 1000

// Overview is the run health of the caller's organization over the last OverviewDays days.
// Every member may read it. It reads the runs (ExecutionRepo.Outcomes) and the projects, the
// tests with a flake event (TestRepo.Flaking), then what the results add: the recent
// failures' first failed tests (TestRepo.FirstFailed) and the flaky tests' retries
// (TestRepo.ResultsFrom); never a run's stored tests.
func (s *Service) Overview(ctx context.Context, p *identity.Principal) (*Overview, error) {
	now := s.clock()
	since := OverviewSince(now)
	runs, err := s.store.Executions().Outcomes(ctx, p.OrgID, since, OverviewMaxRuns+1)
	if err != nil {
		return nil, err
	}
	projects, err := s.store.Projects().List(ctx, p.OrgID)
	if err != nil {
		return nil, err
	}
	tests, err := s.store.Tests().Flaking(ctx, p.OrgID, since, overviewTests)
	if err != nil {
		return nil, err
	}
	capped := len(runs) > OverviewMaxRuns
	if capped {
		runs = runs[:OverviewMaxRuns]
	}
	o := BuildOverview(runs, tests, projects, since, OverviewDays)
	o.Capped = capped
	first, err := s.store.Tests().FirstFailed(ctx, p.OrgID, o.FailedRuns())
	if err != nil {
		return nil, err
	}
	results, err := s.store.Tests().ResultsFrom(ctx, p.OrgID, o.FlakyWindows())
	if err != nil {
		return nil, err
	}
	o.AddResults(first, results)
	return o, nil
}

// OverviewSince is the first moment of the overview's window at now: 00:00 UTC of the day
// OverviewDays-1 days before now's.
func OverviewSince(now time.Time) time.Time {
	y, m, d := now.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC).AddDate(0, 0, -(OverviewDays - 1))
}

// passed reports whether a run's verdict counts as passed in the overview.
func passed(s domain.ExecStatus) bool { return s == domain.ExecPassed || s == domain.ExecUnstable }

// BuildOverview computes the overview from the window's finished runs, newest first (as
// ExecutionRepo.Outcomes lists them), the organization's tests with a flake event in their
// window (as TestRepo.Flaking lists them: most recently seen first) and its projects, for days
// UTC days from since. Runs queued outside the window and runs not in a final verdict (PASSED,
// FAILED, UNSTABLE, ERROR) are ignored; of a test's window, only the results that ended within
// the overview's count. It does no I/O: the recent failures' first failed tests and the flaky
// tests' Retried counts are what the results add (AddResults).
func BuildOverview(runs []store.RunOutcome, tests []domain.TrackedTest, projects []domain.Project, since time.Time, days int) *Overview {
	b := newOverviewBuilder(projects, since, days)
	for i := range runs {
		r := &runs[i]
		if !b.inWindow(r) {
			continue
		}
		b.o.Runs++
		b.countRun(r)
		b.noteFailure(r)
	}
	b.projectFigures()
	b.flakyTests(tests)
	return b.o
}

// overviewBuilder holds what BuildOverview has counted so far.
type overviewBuilder struct {
	o            *Overview
	since, until time.Time
	days         int
	names        map[string]string // project names by ID
	byProject    map[string]*ProjectHealth
	durations    map[string][]int64 // start-to-finish milliseconds, by project
}

func newOverviewBuilder(projects []domain.Project, since time.Time, days int) *overviewBuilder {
	since = since.UTC()
	b := &overviewBuilder{since: since, until: since.AddDate(0, 0, days), days: days,
		names: make(map[string]string, len(projects)), byProject: map[string]*ProjectHealth{}, durations: map[string][]int64{},
		o: &Overview{Since: since, Days: days, Projects: []ProjectHealth{}, Flaky: []FlakyTest{}, RecentFailures: []RecentFailure{}}}
	for _, p := range projects {
		b.names[p.ID] = p.Name
	}
	return b
}

// nameOf is a project's name: "" for no project, "(deleted project)" for one gone.
func (b *overviewBuilder) nameOf(id string) string {
	if id == "" {
		return ""
	}
	if n, ok := b.names[id]; ok {
		return n
	}
	return "(deleted project)"
}

// inWindow tells whether r counts: a final verdict, queued within the window.
func (b *overviewBuilder) inWindow(r *store.RunOutcome) bool {
	switch r.Status {
	case domain.ExecPassed, domain.ExecFailed, domain.ExecUnstable, domain.ExecError:
	default:
		return false
	}
	return !r.QueuedAt.Before(b.since) && r.QueuedAt.Before(b.until)
}

// countRun counts r in its project's runs, passes, days and durations.
func (b *overviewBuilder) countRun(r *store.RunOutcome) {
	ph := b.byProject[r.ProjectID]
	if ph == nil {
		ph = &ProjectHealth{ProjectID: r.ProjectID, Name: b.nameOf(r.ProjectID), Daily: make([]DayHealth, b.days)}
		for d := range ph.Daily {
			ph.Daily[d].Day = b.since.AddDate(0, 0, d)
		}
		b.byProject[r.ProjectID] = ph
	}
	day := dayIndex(b.since, r.QueuedAt, b.days)
	ph.Runs++
	ph.Daily[day].Runs++
	if passed(r.Status) {
		ph.Passed++
		ph.Daily[day].Passed++
	}
	if r.StartedAt != nil && r.FinishedAt != nil && !r.FinishedAt.Before(*r.StartedAt) {
		b.durations[r.ProjectID] = append(b.durations[r.ProjectID], r.FinishedAt.Sub(*r.StartedAt).Milliseconds())
	}
}

// noteFailure keeps r among the recent failures (the newest overviewFailures FAILED or ERROR
// runs), with the run's error as its message until AddResults finds its first failed test.
func (b *overviewBuilder) noteFailure(r *store.RunOutcome) {
	if (r.Status != domain.ExecFailed && r.Status != domain.ExecError) || len(b.o.RecentFailures) >= overviewFailures {
		return
	}
	b.o.RecentFailures = append(b.o.RecentFailures, RecentFailure{TaskID: r.TaskID, ProjectID: r.ProjectID,
		Project: b.nameOf(r.ProjectID), Status: r.Status, QueuedAt: r.QueuedAt, Message: r.Error, executionID: r.ID})
}

// flakyTests keeps the tests whose window within the overview's holds a flake event: the most
// failures (failed or passed only on a retry) first, then the newest, at most overviewFlaky;
// with each one's window, whose results AddResults reads.
func (b *overviewBuilder) flakyTests(tests []domain.TrackedTest) {
	var windows [][]domain.TestPoint
	for i := range tests {
		t := &tests[i]
		w := b.within(t.Recent)
		if len(w) == 0 || domain.Rates(w).FlakeEvents == 0 {
			continue
		}
		ft := FlakyTest{ProjectID: t.ProjectID, Project: b.nameOf(t.ProjectID), Suite: t.Suite, Name: t.Name, testID: t.ID}
		for _, p := range w { // newest first: the first bad result is the newest
			switch p.Status {
			case domain.TestPassed:
				ft.Passed++
			case domain.TestFailed:
				ft.Failed++
			case domain.TestFlaky:
				ft.Flaky++
			}
			if ft.LastTaskID == "" && (p.Status == domain.TestFailed || p.Status == domain.TestFlaky) {
				ft.LastTaskID, ft.LastSeen = p.TaskID, p.At
			}
		}
		b.o.Flaky = append(b.o.Flaky, ft)
		windows = append(windows, w)
	}
	order := make([]int, len(b.o.Flaky))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(i, j int) int {
		x, y := &b.o.Flaky[i], &b.o.Flaky[j]
		return cmp.Or(cmp.Compare(y.Failed+y.Flaky, x.Failed+x.Flaky), y.LastSeen.Compare(x.LastSeen))
	})
	order = order[:min(len(order), overviewFlaky)]
	kept := make([]FlakyTest, len(order))
	b.o.windows = make([][]domain.TestPoint, len(order))
	for k, i := range order {
		kept[k], b.o.windows[k] = b.o.Flaky[i], windows[i]
	}
	b.o.Flaky = kept
}

// within is the part of a window (newest first) that ended within the overview's.
func (b *overviewBuilder) within(recent []domain.TestPoint) []domain.TestPoint {
	var w []domain.TestPoint
	for _, p := range recent {
		if !p.At.Before(b.since) && p.At.Before(b.until) {
			w = append(w, p)
		}
	}
	return w
}

// FailedRuns are the internal IDs of the recent failures' runs, whose first failed tests
// AddResults takes (TestRepo.FirstFailed).
func (o *Overview) FailedRuns() []string {
	ids := make([]string, 0, len(o.RecentFailures))
	for _, f := range o.RecentFailures {
		if f.executionID != "" {
			ids = append(ids, f.executionID)
		}
	}
	return ids
}

// FlakyWindows name the flaky tests' windows within the overview's, whose results AddResults
// takes (TestRepo.ResultsFrom): each test's results from its window's oldest point on.
func (o *Overview) FlakyWindows() []store.TestFrom {
	from := make([]store.TestFrom, 0, len(o.windows))
	for i, w := range o.windows {
		from = append(from, store.TestFrom{TestID: o.Flaky[i].testID, From: w[len(w)-1].At})
	}
	return from
}

// AddResults completes the overview with what the results add: each recent failure's first
// failed test and its message (first: TestRepo.FirstFailed of FailedRuns), and each flaky
// test's Retried count, of the results of its window (results: TestRepo.ResultsFrom of
// FlakyWindows; a result that passed only on a retry was retried).
func (o *Overview) AddResults(first, results []domain.TestOutcome) {
	byRun := make(map[string]*domain.TestOutcome, len(first))
	for i := range first {
		byRun[first[i].ExecutionID] = &first[i]
	}
	for i := range o.RecentFailures {
		f := &o.RecentFailures[i]
		if t := byRun[f.executionID]; t != nil && f.executionID != "" {
			f.Suite, f.Test, f.Message = t.Suite, t.Name, t.Message
		}
	}
	retried := map[[2]string]bool{} // test and run
	for _, r := range results {
		if r.Retries > 0 || r.Status == domain.TestFlaky {
			retried[[2]string{r.TestID, r.TaskID}] = true
		}
	}
	for i, w := range o.windows {
		ft := &o.Flaky[i]
		ft.Retried = 0
		for _, p := range w {
			if retried[[2]string{ft.testID, p.TaskID}] {
				ft.Retried++
			}
		}
	}
}

// projectFigures completes each project's pass rate and durations, most runs first (named
// projects before "No project" at equal runs, then by name).
func (b *overviewBuilder) projectFigures() {
	for id, ph := range b.byProject {
		ph.PassRate = float64(ph.Passed) / float64(ph.Runs)
		ph.MedianMs, ph.P90Ms = percentile(b.durations[id], 50), percentile(b.durations[id], 90)
		b.o.Projects = append(b.o.Projects, *ph)
	}
	slices.SortFunc(b.o.Projects, func(x, y ProjectHealth) int {
		if c := cmp.Compare(y.Runs, x.Runs); c != 0 {
			return c
		}
		if (x.ProjectID == "") != (y.ProjectID == "") { // "No project" after the named ones
			if x.ProjectID == "" {
				return 1
			}
			return -1
		}
		return cmp.Or(cmp.Compare(x.Name, y.Name), cmp.Compare(x.ProjectID, y.ProjectID))
	})
}

// dayIndex is the day of the window t falls in (t within it).
func dayIndex(since, t time.Time, days int) int {
	d := int(t.Sub(since) / (24 * time.Hour))
	return min(max(d, 0), days-1)
}

// percentile is the p-th percentile of values by nearest rank (sorting values), 0 for none.
func percentile(values []int64, p int) int64 {
	if len(values) == 0 {
		return 0
	}
	slices.Sort(values)
	rank := (p*len(values) + 99) / 100 // ceil(p/100 × n), 1-based
	return values[max(rank, 1)-1]
}
