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

// FlakyTest is a test of a project that both passed and failed in the window's runs, or was
// reported flaky (passed on a retry), or was retried.
type FlakyTest struct {
	ProjectID, Project string
	Suite, Name        string
	Passed, Failed     int // runs in which it passed, failed
	Flaky              int // runs in which it passed only on a retry
	Retried            int // runs in which it was retried (whatever its outcome)
	// LastTaskID is the newest run in which it failed, was flaky or was retried.
	LastTaskID string
	LastSeen   time.Time
}

// RecentFailure is a FAILED or ERROR run with its first failed test (none for a run that
// failed before any test reported, e.g. a non-zero exit or an ERROR).
type RecentFailure struct {
	TaskID, ProjectID, Project string
	Status                     domain.ExecStatus
	QueuedAt                   time.Time
	Suite, Test, Message       string
}

// Overview is the run health of the caller's organization over the last OverviewDays days.
// Every member may read it.
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
	capped := len(runs) > OverviewMaxRuns
	if capped {
		runs = runs[:OverviewMaxRuns]
	}
	o := BuildOverview(runs, projects, since, OverviewDays)
	o.Capped = capped
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

// testKey names a test within a project.
type testKey struct{ project, suite, name string }

// BuildOverview computes the overview from the window's finished runs, newest first (as
// ExecutionRepo.Outcomes lists them), and the organization's projects, for days UTC days from
// since. Runs queued outside the window and runs not in a final verdict (PASSED, FAILED,
// UNSTABLE, ERROR) are ignored. It does no I/O.
func BuildOverview(runs []store.RunOutcome, projects []domain.Project, since time.Time, days int) *Overview {
	b := newOverviewBuilder(projects, since, days)
	for i := range runs {
		r := &runs[i]
		if !b.inWindow(r) {
			continue
		}
		b.o.Runs++
		b.countRun(r)
		b.noteFailure(r)
		b.tallyTests(i, r)
	}
	b.projectFigures()
	b.flakyTests()
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
	flaky        map[testKey]*testTally
	order        []testKey // the tests in the order first seen (newest run first)
}

func newOverviewBuilder(projects []domain.Project, since time.Time, days int) *overviewBuilder {
	since = since.UTC()
	b := &overviewBuilder{since: since, until: since.AddDate(0, 0, days), days: days,
		names: make(map[string]string, len(projects)), byProject: map[string]*ProjectHealth{},
		durations: map[string][]int64{}, flaky: map[testKey]*testTally{},
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
// runs), with its first failed test.
func (b *overviewBuilder) noteFailure(r *store.RunOutcome) {
	if (r.Status != domain.ExecFailed && r.Status != domain.ExecError) || len(b.o.RecentFailures) >= overviewFailures {
		return
	}
	f := RecentFailure{TaskID: r.TaskID, ProjectID: r.ProjectID, Project: b.nameOf(r.ProjectID), Status: r.Status,
		QueuedAt: r.QueuedAt, Message: r.Error}
	for _, t := range r.Tests {
		if t.Status == domain.TestFailed {
			f.Suite, f.Test, f.Message = t.Suite, t.Name, t.Error
			break
		}
	}
	b.o.RecentFailures = append(b.o.RecentFailures, f)
}

// tallyTests counts the outcomes of r's tests (r is the i-th run) toward the flaky tests.
func (b *overviewBuilder) tallyTests(i int, r *store.RunOutcome) {
	for _, t := range r.Tests {
		if t.Status == domain.TestSkipped && t.Retries == 0 {
			continue
		}
		k := testKey{r.ProjectID, t.Suite, t.Name}
		tt := b.flaky[k]
		if tt == nil {
			tt = &testTally{FlakyTest: FlakyTest{ProjectID: r.ProjectID, Project: b.nameOf(r.ProjectID), Suite: t.Suite, Name: t.Name},
				last: [4]int{-1, -1, -1, -1}}
			b.flaky[k] = tt
			b.order = append(b.order, k)
		}
		ft := &tt.FlakyTest
		switch t.Status {
		case domain.TestPassed:
			tt.count(0, i, &ft.Passed)
		case domain.TestFailed:
			tt.count(1, i, &ft.Failed)
		case domain.TestFlaky:
			tt.count(2, i, &ft.Flaky)
		}
		if t.Retries > 0 {
			tt.count(3, i, &ft.Retried)
		}
		// Runs come newest first: the first bad sighting is the newest.
		if ft.LastTaskID == "" && (t.Status == domain.TestFailed || t.Status == domain.TestFlaky || t.Retries > 0) {
			ft.LastTaskID, ft.LastSeen = r.TaskID, r.QueuedAt
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

// flakyTests keeps the tests that passed in one run and failed in another, or were flaky or
// retried: the most failures first, then the newest, at most overviewFlaky.
func (b *overviewBuilder) flakyTests() {
	for _, k := range b.order {
		ft := &b.flaky[k].FlakyTest
		if (ft.Passed > 0 && ft.Failed > 0) || ft.Flaky > 0 || ft.Retried > 0 {
			b.o.Flaky = append(b.o.Flaky, *ft)
		}
	}
	slices.SortStableFunc(b.o.Flaky, func(x, y FlakyTest) int {
		return cmp.Or(cmp.Compare(y.Failed+y.Flaky, x.Failed+x.Flaky), y.LastSeen.Compare(x.LastSeen))
	})
	if len(b.o.Flaky) > overviewFlaky {
		b.o.Flaky = b.o.Flaky[:overviewFlaky]
	}
}

// testTally counts a test's runs by outcome: a test listed twice in one run (the same name
// and suite) counts once per outcome.
type testTally struct {
	FlakyTest
	last [4]int // the index of the last run counted in Passed, Failed, Flaky, Retried
}

func (tt *testTally) count(which, run int, n *int) {
	if tt.last[which] != run {
		tt.last[which] = run
		*n++
	}
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
