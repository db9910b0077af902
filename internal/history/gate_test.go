package history_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"verdict/internal/domain"
	"verdict/internal/history"
	"verdict/internal/identity"
	"verdict/internal/store"
	"verdict/internal/store/sqlstore/sqlitetest"
)

var t0 = time.Date(2026, 4, 1, 12, 0, 0, 0, time.UTC)

func ptr[T any](v T) *T { return &v }

// rule finds the judgement of rule in g.
func rule(t *testing.T, g *domain.Gate, name string) domain.GateRule {
	t.Helper()
	if g == nil {
		t.Fatalf("no gate; want rule %s", name)
	}
	for _, r := range g.Rules {
		if r.Rule == name {
			return r
		}
	}
	t.Fatalf("gate %+v has no rule %s", g, name)
	return domain.GateRule{}
}

func wantRule(t *testing.T, g *domain.Gate, name string, passed bool, actual, threshold float64, msg string) {
	t.Helper()
	r := rule(t, g, name)
	if r.Passed != passed || r.Actual != actual || r.Threshold != threshold || !strings.Contains(r.Message, msg) {
		t.Errorf("rule %s: %+v; want passed %v, actual %v, threshold %v, a message with %q", name, r, passed, actual, threshold, msg)
	}
}

// finishedRun is a run of 60 s ending at end with summary s.
func finishedRun(end time.Time, s domain.Summary) *domain.Execution {
	start := end.Add(-time.Minute)
	return &domain.Execution{TaskID: "run", Status: domain.ExecPassed, StartedAt: &start, FinishedAt: &end, Summary: s}
}

// TestJudgeEachRule: every rule passes and fails on its own figure, its message saying what
// was measured.
func TestJudgeEachRule(t *testing.T) {
	judge := func(r domain.GateRules, c *history.Comparison) *domain.Gate {
		return history.Judge(&r, c, t0)
	}
	diff := func(run, base *domain.Execution, now, then []domain.TestOutcome) *history.Comparison {
		return history.Diff(run, base, now, then, nil)
	}
	full := domain.Summary{Total: 10, Passed: 8, Failed: 1, Skipped: 0, Flaky: 1}
	run := finishedRun(t0, full)

	t.Run("minTests", func(t *testing.T) {
		g := judge(domain.GateRules{MinTests: ptr(10)}, diff(run, nil, nil, nil))
		wantRule(t, g, domain.RuleMinTests, true, 10, 10, "10 tests, at least 10 required")
		if g.Status != domain.GatePassed || len(g.Rules) != 1 {
			t.Fatalf("gate %+v: one rule, passed", g)
		}
		g = judge(domain.GateRules{MinTests: ptr(11)}, diff(run, nil, nil, nil))
		wantRule(t, g, domain.RuleMinTests, false, 10, 11, "incomplete run: 10 tests, fewer than the 11 required")
		if g.Status != domain.GateFailed {
			t.Fatalf("gate %+v: failed", g)
		}
	})

	t.Run("maxFailed", func(t *testing.T) {
		wantRule(t, judge(domain.GateRules{MaxFailed: ptr(1)}, diff(run, nil, nil, nil)), domain.RuleMaxFailed, true, 1, 1, "1 failed test, at most 1 allowed")
		wantRule(t, judge(domain.GateRules{MaxFailed: ptr(0)}, diff(run, nil, nil, nil)), domain.RuleMaxFailed, false, 1, 0, "1 failed test, at most 0 allowed")
		// Quarantined failures do not count.
		q := *run
		q.Summary.Failed = 3
		q.QuarantinedFailures = []domain.QuarantinedFailure{{Suite: "s", Name: "a", Status: domain.TestFailed}, {Suite: "s", Name: "b", Status: domain.TestFailed}}
		wantRule(t, judge(domain.GateRules{MaxFailed: ptr(1)}, diff(&q, nil, nil, nil)), domain.RuleMaxFailed, true, 1, 1, "(2 quarantined failures not counted)")
		wantRule(t, judge(domain.GateRules{MaxFailed: ptr(0)}, diff(&q, nil, nil, nil)), domain.RuleMaxFailed, false, 1, 0, "1 failed test")
	})

	t.Run("minPassRate", func(t *testing.T) {
		// 8 passed and 1 flaky of 10 run: 0.9.
		wantRule(t, judge(domain.GateRules{MinPassRate: ptr(0.9)}, diff(run, nil, nil, nil)), domain.RuleMinPassRate, true, 0.9, 0.9, "pass rate 90% (9 of 10 tests run passed), at least 90% required")
		wantRule(t, judge(domain.GateRules{MinPassRate: ptr(0.95)}, diff(run, nil, nil, nil)), domain.RuleMinPassRate, false, 0.9, 0.95, "at least 95% required")
		// Skipped tests are not in the rate; a run where none ran fails.
		sk := finishedRun(t0, domain.Summary{Total: 4, Passed: 1, Skipped: 3})
		wantRule(t, judge(domain.GateRules{MinPassRate: ptr(1.0)}, diff(sk, nil, nil, nil)), domain.RuleMinPassRate, true, 1, 1, "1 of 1 tests run")
		none := finishedRun(t0, domain.Summary{Total: 2, Skipped: 2})
		wantRule(t, judge(domain.GateRules{MinPassRate: ptr(0.0)}, diff(none, nil, nil, nil)), domain.RuleMinPassRate, false, 0, 0, "no test ran")
	})

	t.Run("maxDurationSeconds", func(t *testing.T) {
		wantRule(t, judge(domain.GateRules{MaxDurationSeconds: ptr(60)}, diff(run, nil, nil, nil)), domain.RuleMaxDurationSeconds, true, 60, 60, "ran 60 s, at most 60 s allowed")
		wantRule(t, judge(domain.GateRules{MaxDurationSeconds: ptr(59)}, diff(run, nil, nil, nil)), domain.RuleMaxDurationSeconds, false, 60, 59, "ran 60 s, at most 59 s allowed")
	})

	out := func(suite, name string, s domain.TestStatus) domain.TestOutcome {
		return domain.TestOutcome{Suite: suite, Name: name, Status: s, DurationMs: 100}
	}
	base := finishedRun(t0.Add(-time.Hour), full)
	base.TaskID = "main-1"
	then := []domain.TestOutcome{out("api", "a", domain.TestPassed), out("api", "b", domain.TestFailed), out("api", "c", domain.TestSkipped)}

	t.Run("noNewFailures", func(t *testing.T) {
		on := domain.GateRules{NoNewFailures: ptr(true)}
		// No baseline: nothing to compare with, the rule passes.
		g := judge(on, diff(run, nil, nil, nil))
		wantRule(t, g, domain.RuleNoNewFailures, true, 0, 0, "no baseline run to compare with")
		if g.BaselineTaskID != "" {
			t.Fatalf("baseline %q, want none", g.BaselineTaskID)
		}
		// b failed before too: not new.
		g = judge(on, diff(run, base, []domain.TestOutcome{out("api", "a", domain.TestPassed), out("api", "b", domain.TestFailed)}, then))
		wantRule(t, g, domain.RuleNoNewFailures, true, 0, 0, "no new failures against main-1")
		if g.BaselineTaskID != "main-1" {
			t.Fatalf("baseline %q", g.BaselineTaskID)
		}
		// a passed, c was skipped, d did not exist: three new failures.
		now := []domain.TestOutcome{out("api", "a", domain.TestFailed), out("api", "b", domain.TestFailed),
			out("api", "c", domain.TestFailed), out("api", "d", domain.TestFailed)}
		wantRule(t, judge(on, diff(run, base, now, then)), domain.RuleNoNewFailures, false, 3, 0,
			"3 new failures against main-1: api › a, api › c, api › d")
		// Quarantined failures are left out.
		q := *run
		q.QuarantinedFailures = []domain.QuarantinedFailure{{Suite: "api", Name: "a"}, {Suite: "api", Name: "d"}}
		wantRule(t, judge(on, diff(&q, base, now, then)), domain.RuleNoNewFailures, false, 1, 0, "1 new failure against main-1: api › c")
		// Off: not judged.
		if g := judge(domain.GateRules{NoNewFailures: ptr(false), MinTests: ptr(0)}, diff(run, base, now, then)); len(g.Rules) != 1 {
			t.Fatalf("noNewFailures false is judged: %+v", g)
		}
	})

	t.Run("noNewFlaky", func(t *testing.T) {
		on := domain.GateRules{NoNewFlaky: ptr(true)}
		wantRule(t, judge(on, diff(run, nil, nil, nil)), domain.RuleNoNewFlaky, true, 0, 0, "no baseline run to compare with")
		// a flaky now, passed before: newly flaky.
		now := []domain.TestOutcome{out("api", "a", domain.TestFlaky), out("api", "b", domain.TestFailed)}
		wantRule(t, judge(on, diff(run, base, now, then)), domain.RuleNoNewFlaky, false, 1, 0, "1 newly flaky test against main-1: api › a")
		// Flaky in the baseline run too: not new.
		flakyThen := []domain.TestOutcome{out("api", "a", domain.TestFlaky)}
		wantRule(t, judge(on, diff(run, base, now, flakyThen)), domain.RuleNoNewFlaky, true, 0, 0, "no newly flaky tests against main-1")
	})

	t.Run("allTogether", func(t *testing.T) {
		g := judge(domain.GateRules{MinTests: ptr(1), MaxFailed: ptr(5), MinPassRate: ptr(0.5), NoNewFailures: ptr(true),
			NoNewFlaky: ptr(true), MaxDurationSeconds: ptr(3600)}, diff(run, base, nil, then))
		var order []string
		for _, r := range g.Rules {
			order = append(order, r.Rule)
		}
		if g.Status != domain.GatePassed || strings.Join(order, ",") != "minTests,maxFailed,minPassRate,noNewFailures,noNewFlaky,maxDurationSeconds" {
			t.Fatalf("gate %+v", g)
		}
	})
}

// TestDiffCategories: each test lands in the lists its results in the two runs say.
func TestDiffCategories(t *testing.T) {
	base := finishedRun(t0.Add(-time.Hour), domain.Summary{})
	base.TaskID = "base"
	run := finishedRun(t0, domain.Summary{})
	o := func(name string, s domain.TestStatus, ms int64) domain.TestOutcome {
		return domain.TestOutcome{TestID: "id-" + name, Suite: "s", Name: name, Status: s, DurationMs: ms}
	}
	then := []domain.TestOutcome{
		o("fixed", domain.TestFailed, 10), o("still", domain.TestFailed, 10), o("broke", domain.TestPassed, 10),
		o("gone", domain.TestPassed, 10), o("slow", domain.TestPassed, 1000), o("noise", domain.TestPassed, 10),
		o("was-skipped", domain.TestSkipped, 10), o("flaky-fixed", domain.TestFailed, 10), o("window", domain.TestPassed, 10),
	}
	now := []domain.TestOutcome{
		o("fixed", domain.TestPassed, 10), o("still", domain.TestFailed, 10), o("broke", domain.TestFailed, 10),
		o("new", domain.TestFailed, 10), o("slow", domain.TestPassed, 1600), o("noise", domain.TestPassed, 90),
		o("was-skipped", domain.TestPassed, 5000), o("flaky-fixed", domain.TestFlaky, 10), o("window", domain.TestPassed, 10),
	}
	// window passed in both runs, but its history turned flaky between them: two flips on the
	// same commit, after the base run ended.
	at := func(d time.Duration, s domain.TestStatus) domain.TestPoint {
		return domain.TestPoint{TaskID: fmt.Sprint(d), Status: s, At: t0.Add(d)}
	}
	window := &domain.TrackedTest{Suite: "s", Name: "window", Recent: []domain.TestPoint{
		at(0, domain.TestPassed), at(-10*time.Minute, domain.TestFailed), at(-20*time.Minute, domain.TestPassed),
		at(-time.Hour, domain.TestPassed), at(-2*time.Hour, domain.TestPassed)}}
	if !domain.Rates(window.Recent).Flaky {
		t.Fatal("the fixture's window is not flaky")
	}
	c := history.Diff(run, base, now, then, map[string]*domain.TrackedTest{"s\x00window": window})
	names := func(list []history.TestDiff) string {
		var out []string
		for _, d := range list {
			out = append(out, d.Name)
		}
		return strings.Join(out, ",")
	}
	for _, w := range []struct {
		what string
		list []history.TestDiff
		want string
	}{
		{"newFailures", c.NewFailures, "broke,new"},
		{"fixed", c.Fixed, "fixed,flaky-fixed"},
		{"stillFailing", c.StillFailing, "still"},
		{"newlyFlaky", c.NewlyFlaky, "flaky-fixed,window"},
		{"added", c.Added, "new"},
		{"missing", c.Missing, "gone"},
		{"slower", c.Slower, "slow"}, // noise: +80 ms is under 100 ms; was-skipped did not run before
	} {
		if got := names(w.list); got != w.want {
			t.Errorf("%s: %s, want %s", w.what, got, w.want)
		}
	}
	if m := c.Missing[0]; m.Status != "" || m.BaseStatus != domain.TestPassed || m.TestID != "id-gone" {
		t.Errorf("missing: %+v", m)
	}
	if s := c.Slower[0]; s.DurationMs != 1600 || s.BaseDurationMs != 1000 {
		t.Errorf("slower: %+v", s)
	}
	// Compared with nothing: every list empty, never nil.
	none := history.Diff(run, nil, now, nil, nil)
	if none.Base != nil || none.NewFailures == nil || len(none.NewFailures)+len(none.Added)+len(none.Slower) != 0 {
		t.Errorf("no base: %+v", none)
	}
}

// gateFixture is a history service on a SQLite store with an organization, its members and a
// project.
type gateFixture struct {
	t                  *testing.T
	ctx                context.Context
	st                 store.Store
	svc                *history.Service
	org                *domain.Organization
	admin, dev, viewer *identity.Principal
	outsider           *identity.Principal
	project, bare      *domain.Project
	projectOfOtherOrg  *domain.Project
	n                  int
	clock              time.Time
}

func newGateFixture(t *testing.T) *gateFixture {
	st := sqlitetest.Open(t)
	f := &gateFixture{t: t, ctx: context.Background(), st: st, clock: t0}
	f.svc = history.New(history.Deps{Store: st, Clock: func() time.Time { return f.clock }})
	f.org = sqlitetest.Org(t, st, "Gate Co", domain.PlanTeam, t0)
	f.admin = sqlitetest.As(sqlitetest.Member(t, st, f.org, "admin@gate.test", domain.RoleAdmin))
	f.dev = sqlitetest.As(sqlitetest.Member(t, st, f.org, "dev@gate.test", domain.RoleDeveloper))
	f.viewer = sqlitetest.As(sqlitetest.Member(t, st, f.org, "viewer@gate.test", domain.RoleViewer))
	outside := sqlitetest.Org(t, st, "Other Co", domain.PlanTeam, t0)
	f.outsider = sqlitetest.As(sqlitetest.Member(t, st, outside, "admin@other.test", domain.RoleAdmin))
	f.project = f.newProject(f.org.ID, "Web")
	f.bare = f.newProject(f.org.ID, "No rules")
	f.projectOfOtherOrg = f.newProject(outside.ID, "Theirs")
	return f
}

func (f *gateFixture) newProject(orgID, name string) *domain.Project {
	p := &domain.Project{ID: domain.NewID(), OrganizationID: orgID, Name: name, Image: "suite", CreatedAt: t0, UpdatedAt: t0}
	if err := f.st.Projects().Create(f.ctx, p); err != nil {
		f.t.Fatal(err)
	}
	return p
}

// test is a result of a run's test in suite "s".
func test(name string, s domain.TestStatus) domain.TestResult {
	return domain.TestResult{Suite: "s", Name: name, Status: s, DurationMs: 100}
}

// finish ends a run of project an hour after the one before with tests (and the quarantined
// failures q), as the post-run chain does (its final write), then records it (judging its
// gate); it returns the run as stored.
func (f *gateFixture) finish(project *domain.Project, status domain.ExecStatus, labels map[string]string, q []domain.QuarantinedFailure, tests ...domain.TestResult) *domain.Execution {
	f.t.Helper()
	f.n++
	f.clock = t0.Add(time.Duration(f.n) * time.Hour)
	start := f.clock.Add(-2 * time.Minute)
	e := &domain.Execution{ID: domain.NewID(), OrganizationID: project.OrganizationID, TaskID: fmt.Sprintf("run-%d", f.n),
		ProjectID: project.ID, Image: "suite", Status: domain.ExecRunning, RunnerID: "r1", QueuedAt: start, StartedAt: &start,
		Labels: labels}
	if err := f.st.Executions().Create(f.ctx, e); err != nil {
		f.t.Fatal(err)
	}
	if err := f.st.Executions().Finish(f.ctx, e.ID, "r1", store.Finish{Status: status, FinishedAt: f.clock, Tests: tests,
		Summary: domain.Summarize(tests), QuarantinedFailures: q}); err != nil {
		f.t.Fatal(err)
	}
	return f.record(e.ID)
}

// record records the stored run id (as the post-run chain reads it) and returns it after.
func (f *gateFixture) record(id string) *domain.Execution {
	f.t.Helper()
	run, err := f.st.Executions().GetByID(f.ctx, id)
	if err != nil {
		f.t.Fatal(err)
	}
	if err := f.svc.Record(f.ctx, run); err != nil {
		f.t.Fatal(err)
	}
	after, err := f.st.Executions().GetByID(f.ctx, id)
	if err != nil {
		f.t.Fatal(err)
	}
	return after
}

func wantErr(t *testing.T, err error, kind domain.Kind, msg string) {
	t.Helper()
	var de *domain.Error
	if !errors.As(err, &de) || de.Kind != kind || !strings.Contains(de.Message, msg) {
		t.Fatalf("error %v, want kind %v with %q", err, kind, msg)
	}
}

// TestGateRulesService: every member reads a project's rules, admins and developers replace
// them (audit-logged), out-of-range values are refused, another organization's project is not
// found.
func TestGateRulesService(t *testing.T) {
	f := newGateFixture(t)
	got, err := f.svc.GateRules(f.ctx, f.viewer, f.project.ID)
	if err != nil || got.Judges() || got.BaselineLabels == nil || len(got.BaselineLabels) != 0 {
		t.Fatalf("a new project's rules: %+v, %v; want every rule off", got, err)
	}
	rules := domain.GateRules{MinTests: ptr(4), NoNewFailures: ptr(true), BaselineLabels: map[string]string{"branch": "main"}}
	_, err = f.svc.SetGateRules(f.ctx, f.viewer, f.project.ID, rules)
	wantErr(t, err, domain.KindForbidden, "Viewers cannot change a project's gate rules")
	_, err = f.svc.SetGateRules(f.ctx, f.outsider, f.project.ID, rules)
	wantErr(t, err, domain.KindNotFound, "No such project in your organization")
	_, err = f.svc.GateRules(f.ctx, f.outsider, f.project.ID)
	wantErr(t, err, domain.KindNotFound, "No such project in your organization")
	for _, bad := range []struct {
		r   domain.GateRules
		msg string
	}{
		{domain.GateRules{MinTests: ptr(-1)}, "minTests must be a whole number from 0 to 1000000000"},
		{domain.GateRules{MaxFailed: ptr(-3)}, "maxFailed must be"},
		{domain.GateRules{MaxDurationSeconds: ptr(-1)}, "maxDurationSeconds must be"},
		{domain.GateRules{MinTests: ptr(domain.MaxGateCount + 1)}, "minTests must be"},
		{domain.GateRules{MinPassRate: ptr(1.01)}, "minPassRate must be a number from 0 to 1"},
		{domain.GateRules{MinPassRate: ptr(-0.1)}, "minPassRate must be a number from 0 to 1"},
		{domain.GateRules{BaselineLabels: map[string]string{"Branch": "main"}}, `baselineLabels: label "Branch": a key is`},
		{domain.GateRules{BaselineLabels: map[string]string{"branch": "a\nb"}}, `baselineLabels: label "branch": a value is`},
	} {
		_, err := f.svc.SetGateRules(f.ctx, f.dev, f.project.ID, bad.r)
		wantErr(t, err, domain.KindInvalid, bad.msg)
	}
	saved, err := f.svc.SetGateRules(f.ctx, f.dev, f.project.ID, rules)
	if err != nil || *saved.MinTests != 4 || !*saved.NoNewFailures || saved.BaselineLabels["branch"] != "main" || saved.MaxFailed != nil {
		t.Fatalf("saved %+v, %v", saved, err)
	}
	read, err := f.svc.GateRules(f.ctx, f.viewer, f.project.ID)
	if err != nil || *read.MinTests != 4 || read.MaxFailed != nil {
		t.Fatalf("read %+v, %v", read, err)
	}
	entries, err := f.st.Audit().List(f.ctx, f.org.ID, 10)
	if err != nil || len(entries) != 1 || entries[0].Action != "project.gate_updated" || entries[0].TargetID != f.project.ID ||
		entries[0].ActorID != f.dev.UserID {
		t.Fatalf("audit: %+v, %v", entries, err)
	}
	// An empty set turns every rule off.
	off, err := f.svc.SetGateRules(f.ctx, f.admin, f.project.ID, domain.GateRules{})
	if err != nil || off.Judges() || off.MinTests != nil {
		t.Fatalf("cleared: %+v, %v", off, err)
	}
	if r, _ := f.st.Projects().GateRules(f.ctx, f.org.ID, f.project.ID); r != nil {
		t.Fatalf("stored after clearing: %+v", r)
	}
}

// TestGateJudgedWhenRecorded: a finished run of a project with rules is judged when its tests
// are recorded, against its baseline (branch:main by default for runs with a branch label, the
// newest finished run otherwise, the project's baselineLabels when set; never an ERROR run);
// a project without rules gives no gate; recording again changes nothing.
func TestGateJudgedWhenRecorded(t *testing.T) {
	f := newGateFixture(t)
	if _, err := f.svc.SetGateRules(f.ctx, f.admin, f.project.ID, domain.GateRules{MinTests: ptr(4), MaxFailed: ptr(0),
		MinPassRate: ptr(0.75), NoNewFailures: ptr(true), NoNewFlaky: ptr(true), MaxDurationSeconds: ptr(300)}); err != nil {
		t.Fatal(err)
	}
	main := map[string]string{"branch": "main"}
	feature := map[string]string{"branch": "feature"}
	passing := []domain.TestResult{test("a", domain.TestPassed), test("b", domain.TestPassed), test("c", domain.TestPassed), test("d", domain.TestPassed)}

	first := f.finish(f.project, domain.ExecPassed, main, nil, passing...)
	g := first.Gate
	if g == nil || g.Status != domain.GatePassed || g.BaselineTaskID != "" || len(g.Rules) != 6 || !first.TestsRecorded {
		t.Fatalf("first run's gate: %+v (recorded %v)", g, first.TestsRecorded)
	}
	wantRule(t, g, domain.RuleNoNewFailures, true, 0, 0, "no baseline run to compare with")
	wantRule(t, g, domain.RuleMaxDurationSeconds, true, 120, 300, "ran 120 s")

	// A feature run breaks b, adds a failing e, and c passes only on a retry.
	broken := f.finish(f.project, domain.ExecFailed, feature, nil, test("a", domain.TestPassed), test("b", domain.TestFailed),
		test("c", domain.TestFlaky), test("d", domain.TestPassed), test("e", domain.TestFailed))
	g = broken.Gate
	if g == nil || g.Status != domain.GateFailed || g.BaselineTaskID != first.TaskID || broken.Status != domain.ExecFailed {
		t.Fatalf("broken run's gate: %+v", g)
	}
	wantRule(t, g, domain.RuleMinTests, true, 5, 4, "5 tests")
	wantRule(t, g, domain.RuleMaxFailed, false, 2, 0, "2 failed tests")
	wantRule(t, g, domain.RuleMinPassRate, false, 0.6, 0.75, "pass rate 60%")
	wantRule(t, g, domain.RuleNoNewFailures, false, 2, 0, "2 new failures against run-1: s › b, s › e")
	wantRule(t, g, domain.RuleNoNewFlaky, false, 1, 0, "1 newly flaky test against run-1: s › c")

	// Another feature run: its baseline is still the main run, not the feature run before it.
	// Its one failure is quarantined: not counted, not new.
	q := f.finish(f.project, domain.ExecPassed, feature, []domain.QuarantinedFailure{{TestID: "t", Suite: "s", Name: "b", Status: domain.TestFailed}},
		test("a", domain.TestPassed), test("b", domain.TestFailed), test("c", domain.TestPassed), test("d", domain.TestPassed))
	g = q.Gate
	if g == nil || g.BaselineTaskID != first.TaskID {
		t.Fatalf("quarantined run's gate: %+v", g)
	}
	wantRule(t, g, domain.RuleMaxFailed, true, 0, 0, "(1 quarantined failure not counted)")
	wantRule(t, g, domain.RuleNoNewFailures, true, 0, 0, "no new failures against run-1")
	wantRule(t, g, domain.RuleNoNewFlaky, true, 0, 0, "no newly flaky tests")

	// A main run after an ERROR one: the ERROR run is never a baseline.
	errored := f.finish(f.project, domain.ExecError, main, nil)
	if errored.Gate == nil || rule(t, errored.Gate, domain.RuleMinTests).Passed {
		t.Fatalf("an ERROR run is judged too: %+v", errored.Gate)
	}
	next := f.finish(f.project, domain.ExecPassed, main, nil, passing...)
	if next.Gate.BaselineTaskID != first.TaskID || next.Gate.Status != domain.GatePassed {
		t.Fatalf("after an ERROR run: %+v", next.Gate)
	}

	// Runs without a branch label: the newest finished run, whatever its labels.
	plain := f.finish(f.project, domain.ExecPassed, nil, nil, passing...)
	if plain.Gate.BaselineTaskID != next.TaskID {
		t.Fatalf("no branch label: baseline %q, want %q", plain.Gate.BaselineTaskID, next.TaskID)
	}

	// The project's baselineLabels choose: the newest run carrying them all.
	if _, err := f.svc.SetGateRules(f.ctx, f.dev, f.project.ID, domain.GateRules{NoNewFailures: ptr(true),
		BaselineLabels: map[string]string{"branch": "feature"}}); err != nil {
		t.Fatal(err)
	}
	chosen := f.finish(f.project, domain.ExecPassed, main, nil, passing...)
	if chosen.Gate.BaselineTaskID != q.TaskID || len(chosen.Gate.Rules) != 1 {
		t.Fatalf("baselineLabels branch:feature: %+v, want baseline %s", chosen.Gate, q.TaskID)
	}

	// Recording again changes nothing; a project without rules gives no gate.
	again := f.record(chosen.ID)
	if again.Gate.EvaluatedAt != chosen.Gate.EvaluatedAt {
		t.Fatalf("recorded again: judged again at %v", again.Gate.EvaluatedAt)
	}
	if bare := f.finish(f.bare, domain.ExecFailed, main, nil, test("a", domain.TestFailed)); bare.Gate != nil || !bare.TestsRecorded {
		t.Fatalf("a project without rules: gate %+v", bare.Gate)
	}
}

// TestCompareService: a finished run compared with its baseline or another run of the
// organization; a run without a baseline answers no base; unfinished runs and other
// organizations' are refused.
func TestCompareService(t *testing.T) {
	f := newGateFixture(t)
	main := map[string]string{"branch": "main"}
	base := f.finish(f.project, domain.ExecPassed, main, nil, test("a", domain.TestPassed), test("b", domain.TestPassed))
	run := f.finish(f.project, domain.ExecFailed, map[string]string{"branch": "fix"}, nil, test("a", domain.TestFailed), test("c", domain.TestPassed))

	c, err := f.svc.Compare(f.ctx, f.viewer, run.TaskID, "")
	if err != nil || c.Base == nil || c.Base.TaskID != base.TaskID {
		t.Fatalf("against the baseline: %+v, %v", c, err)
	}
	if len(c.NewFailures) != 1 || c.NewFailures[0].Name != "a" || c.NewFailures[0].TestID == "" ||
		len(c.Added) != 1 || c.Added[0].Name != "c" || len(c.Missing) != 1 || c.Missing[0].Name != "b" {
		t.Fatalf("comparison: %+v", c)
	}
	// The other way round, with `with`.
	c, err = f.svc.Compare(f.ctx, f.viewer, base.TaskID, run.TaskID)
	if err != nil || c.Base.TaskID != run.TaskID || len(c.Fixed) != 1 || c.Fixed[0].Name != "a" || len(c.NewFailures) != 0 {
		t.Fatalf("with: %+v, %v", c, err)
	}
	// The first run has no baseline.
	c, err = f.svc.Compare(f.ctx, f.viewer, base.TaskID, "")
	if err != nil || c.Base != nil || len(c.Missing)+len(c.Added) != 0 {
		t.Fatalf("no baseline: %+v, %v", c, err)
	}
	_, err = f.svc.Compare(f.ctx, f.outsider, run.TaskID, "")
	wantErr(t, err, domain.KindNotFound, "No such execution in your organization")
	_, err = f.svc.Compare(f.ctx, f.viewer, run.TaskID, "nope")
	wantErr(t, err, domain.KindNotFound, "No such execution in your organization")

	// Another organization's run as `with`: not found either.
	theirs := f.finish(f.projectOfOtherOrg, domain.ExecPassed, nil, nil, test("a", domain.TestPassed))
	_, err = f.svc.Compare(f.ctx, f.viewer, run.TaskID, theirs.TaskID)
	if theirs.TaskID == run.TaskID {
		t.Fatal("the fixture's task IDs collide")
	}
	wantErr(t, err, domain.KindNotFound, "No such execution in your organization")

	pending := &domain.Execution{ID: domain.NewID(), OrganizationID: f.org.ID, TaskID: "pending", ProjectID: f.project.ID,
		Image: "suite", Status: domain.ExecPending, QueuedAt: t0}
	if err := f.st.Executions().Create(f.ctx, pending); err != nil {
		t.Fatal(err)
	}
	_, err = f.svc.Compare(f.ctx, f.viewer, "pending", "")
	wantErr(t, err, domain.KindConflict, "Only finished runs are compared")
	_, err = f.svc.Compare(f.ctx, f.viewer, run.TaskID, "pending")
	wantErr(t, err, domain.KindConflict, "The run to compare with has not finished")
}
