package history

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"

	"verdict/internal/domain"
	"verdict/internal/identity"
	"verdict/internal/store"
)

// Two finished runs compared test by test: what the quality gate's noNewFailures and
// noNewFlaky rules read, and GET /api/executions/{taskId}/compare answers.

var (
	errRun404      = domain.NotFound("Execution not found", "No such execution in your organization")
	errUnfinished  = domain.Conflict("Execution not finished", "Only finished runs are compared: wait for the run to end")
	errWithUnended = domain.Conflict("Execution not finished", "The run to compare with has not finished")
)

// A test is slower when its duration grew by at least SlowerFactor and SlowerMinMs (both, so
// that a few milliseconds of noise on a fast test is not a slowdown).
const (
	SlowerFactor = 1.5
	SlowerMinMs  = 100
)

// Comparison is a run compared with a base run: each list names tests by suite and name, in
// that order. A test may be in more than one list (a new test that fails is added and a new
// failure).
type Comparison struct {
	Run  *domain.Execution
	Base *domain.Execution // nil: no run to compare with (the lists are empty)
	// NewFailures failed in Run and did not fail in Base (passed, flaky or skipped there, or
	// absent); Fixed failed in Base and passed (or was flaky) in Run; StillFailing failed in both.
	NewFailures, Fixed, StillFailing []TestDiff
	// NewlyFlaky were flaky in Run and not in Base (see flakyIn).
	NewlyFlaky []TestDiff
	// Added are in Run only, Missing in Base only.
	Added, Missing []TestDiff
	// Slower ran in both (skipped in neither) and took at least SlowerFactor times and
	// SlowerMinMs longer in Run; the largest slowdown first.
	Slower []TestDiff
}

// TestDiff is a test of a comparison with its result in each run: Status "" when it is not
// in Run, BaseStatus "" when it is not in Base.
type TestDiff struct {
	TestID                     string // "" when its test is not recorded yet (or the gate's, which needs none)
	Suite, Name                string
	Status, BaseStatus         domain.TestStatus
	DurationMs, BaseDurationMs int64
}

// Compare compares the organization's finished run taskID with the run with (another finished
// run of the organization), or, when with is "", with its baseline (the one its project's
// gate rules choose; Base nil when it has none). Every member may read it.
func (s *Service) Compare(ctx context.Context, p *identity.Principal, taskID, with string) (*Comparison, error) {
	run, err := s.store.Executions().Get(ctx, p.OrgID, taskID)
	if err != nil {
		return nil, notFound(err, errRun404)
	}
	if !run.Status.Final() {
		return nil, errUnfinished
	}
	var base *domain.Execution
	if with != "" {
		if base, err = s.store.Executions().Get(ctx, p.OrgID, with); err != nil {
			return nil, notFound(err, errRun404)
		}
		if !base.Status.Final() {
			return nil, errWithUnended
		}
	} else {
		var rules *domain.GateRules
		if run.ProjectID != "" {
			rules, err = s.store.Projects().GateRules(ctx, p.OrgID, run.ProjectID)
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return nil, err
			}
		}
		if base, err = s.baseline(ctx, s.store, run, rules); err != nil {
			return nil, err
		}
	}
	return s.compare(ctx, s.store, run, base, true)
}

// compare reads the results of run and base (nil: none) and compares them; withIDs: the
// listed tests' IDs are looked up too (the gate needs none).
//
// A run's results are read from the run itself (the tests it kept, one row), not from its tests'
// histories (a row per test, joined with its test): thousands of rows for a large run, where the
// run's own list is one read and what the histories recorded is the same list.
func (s *Service) compare(ctx context.Context, st store.Store, run, base *domain.Execution, withIDs bool) (*Comparison, error) {
	if base == nil {
		return Diff(run, nil, nil, nil, nil), nil
	}
	now, err := s.results(ctx, st, run)
	if err != nil {
		return nil, err
	}
	then, err := s.results(ctx, st, base)
	if err != nil {
		return nil, err
	}
	flaky, err := s.flakyTests(ctx, st, run)
	if err != nil {
		return nil, err
	}
	c := Diff(run, base, now, then, flaky)
	if withIDs {
		err = s.testIDs(ctx, st, c)
	}
	return c, err
}

// results are the results of the tests run kept, named as its tests' histories name them
// (domain.TestIdentities); a listed run (without its tests) is read whole. The runs compare
// reads are whole already.
func (s *Service) results(ctx context.Context, st store.Store, run *domain.Execution) ([]domain.TestOutcome, error) {
	if len(run.Tests) == 0 && run.Summary.Total > 0 {
		whole, err := st.Executions().Get(ctx, run.OrganizationID, run.TaskID)
		if err != nil {
			return nil, err
		}
		run = whole
	}
	out := make([]domain.TestOutcome, len(run.Tests))
	for _, id := range domain.TestIdentities(run.Tests) {
		t := &run.Tests[id.Index]
		out[id.Index] = domain.TestOutcome{Suite: id.Suite, Name: id.Name, Status: t.Status, DurationMs: max(t.DurationMs, 0)}
	}
	return out, nil
}

// testIDs fills in the IDs of the tests c lists: a test of the run as its run's scope knows it,
// a test of the base run only as the base run's does. A test not recorded (yet) keeps "".
func (s *Service) testIDs(ctx context.Context, st store.Store, c *Comparison) error {
	lists := [][]TestDiff{c.NewFailures, c.Fixed, c.StillFailing, c.NewlyFlaky, c.Added, c.Missing, c.Slower}
	for _, side := range []struct {
		run  *domain.Execution
		here bool // the tests of the run (else those of the base run only)
	}{{c.Run, true}, {c.Base, false}} {
		var names []store.TestName
		for _, list := range lists {
			for _, d := range list {
				if (d.Status != "") == side.here {
					names = append(names, store.TestName{Suite: d.Suite, Name: d.Name})
				}
			}
		}
		if len(names) == 0 {
			continue
		}
		ids, err := st.Tests().IDs(ctx, side.run.OrganizationID, domain.TestScope(side.run.ProjectID, side.run.Image), names)
		if err != nil {
			return err
		}
		for _, list := range lists {
			for i := range list {
				if d := &list[i]; (d.Status != "") == side.here {
					d.TestID = ids[store.TestName{Suite: d.Suite, Name: d.Name}]
				}
			}
		}
	}
	return nil
}

// flakyPage is how many of the scope's flaky tests one read takes.
const flakyPage = 500

// flakyTests are the tests of run's scope that are flaky now (their windows, read to tell
// whether they were flaky as of each run: flakyAt), by testKey.
func (s *Service) flakyTests(ctx context.Context, st store.Store, run *domain.Execution) (map[string]*domain.TrackedTest, error) {
	out := map[string]*domain.TrackedTest{}
	for offset := 0; ; offset += flakyPage {
		page, total, err := st.Tests().List(ctx, run.OrganizationID, store.TestFilter{
			Scope: domain.TestScope(run.ProjectID, run.Image), Flaky: true, Limit: flakyPage, Offset: offset})
		if err != nil {
			return nil, err
		}
		for i := range page {
			out[testKey(page[i].Suite, page[i].Name)] = &page[i]
		}
		if len(page) < flakyPage || offset+len(page) >= total {
			return out, nil
		}
	}
}

func testKey(suite, name string) string { return suite + "\x00" + name }

// flakyAt reports whether t was flaky as of at: over the results of its window up to at (its
// window reaches back FlakeWindow results from now, so a run older than that reads fewer).
func flakyAt(t *domain.TrackedTest, at time.Time) bool {
	if t == nil {
		return false
	}
	i := 0
	for i < len(t.Recent) && t.Recent[i].At.After(at) {
		i++
	}
	return domain.Rates(t.Recent[i:]).Flaky
}

// finishedAt is when run ended (its queueing when it has no end).
func finishedAt(run *domain.Execution) time.Time {
	if run.FinishedAt != nil {
		return *run.FinishedAt
	}
	return run.QueuedAt
}

// Diff compares run's results now with base's results then. flaky are the scope's tests that
// are flaky now, by testKey: a test is flaky in a run when its result there is FLAKY (it passed
// only on a retry) or it was flaky as of the run's end (flakyAt). base nil: nothing to compare
// with, every list empty.
func Diff(run, base *domain.Execution, now, then []domain.TestOutcome, flaky map[string]*domain.TrackedTest) *Comparison {
	c := &Comparison{Run: run, Base: base, NewFailures: []TestDiff{}, Fixed: []TestDiff{}, StillFailing: []TestDiff{},
		NewlyFlaky: []TestDiff{}, Added: []TestDiff{}, Missing: []TestDiff{}, Slower: []TestDiff{}}
	if base == nil {
		return c
	}
	runAt, baseAt := finishedAt(run), finishedAt(base)
	before := make(map[string]*domain.TestOutcome, len(then))
	for i := range then {
		before[testKey(then[i].Suite, then[i].Name)] = &then[i]
	}
	seen := make(map[string]bool, len(now))
	for i := range now {
		o := &now[i]
		k := testKey(o.Suite, o.Name)
		seen[k] = true
		d := TestDiff{TestID: o.TestID, Suite: o.Suite, Name: o.Name, Status: o.Status, DurationMs: o.DurationMs}
		b := before[k]
		if b != nil {
			d.BaseStatus, d.BaseDurationMs = b.Status, b.DurationMs
		}
		failed, wasFailed := o.Status == domain.TestFailed, b != nil && b.Status == domain.TestFailed
		switch {
		case failed && !wasFailed:
			c.NewFailures = append(c.NewFailures, d)
		case failed && wasFailed:
			c.StillFailing = append(c.StillFailing, d)
		case wasFailed && (o.Status == domain.TestPassed || o.Status == domain.TestFlaky):
			c.Fixed = append(c.Fixed, d)
		}
		t := flaky[k]
		if o.Status == domain.TestFlaky || flakyAt(t, runAt) {
			if b == nil || (b.Status != domain.TestFlaky && !flakyAt(t, baseAt)) {
				c.NewlyFlaky = append(c.NewlyFlaky, d)
			}
		}
		if b == nil {
			c.Added = append(c.Added, d)
			continue
		}
		if o.Status != domain.TestSkipped && b.Status != domain.TestSkipped &&
			float64(o.DurationMs) >= SlowerFactor*float64(b.DurationMs) && o.DurationMs-b.DurationMs >= SlowerMinMs {
			c.Slower = append(c.Slower, d)
		}
	}
	for k, b := range before {
		if !seen[k] {
			c.Missing = append(c.Missing, TestDiff{TestID: b.TestID, Suite: b.Suite, Name: b.Name,
				BaseStatus: b.Status, BaseDurationMs: b.DurationMs})
		}
	}
	byName := func(a, b TestDiff) int { return cmp.Or(cmp.Compare(a.Suite, b.Suite), cmp.Compare(a.Name, b.Name)) }
	for _, list := range [][]TestDiff{c.NewFailures, c.Fixed, c.StillFailing, c.NewlyFlaky, c.Added, c.Missing} {
		slices.SortFunc(list, byName)
	}
	slices.SortFunc(c.Slower, func(a, b TestDiff) int {
		return cmp.Or(cmp.Compare(b.DurationMs-b.BaseDurationMs, a.DurationMs-a.BaseDurationMs), byName(a, b))
	})
	return c
}
