package schedules_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"verdict/internal/control"
	"verdict/internal/crypto/secretbox"
	"verdict/internal/domain"
	"verdict/internal/executions"
	"verdict/internal/identity"
	"verdict/internal/report"
	"verdict/internal/schedules"
	"verdict/internal/store"
	"verdict/internal/store/sqlstore"
	"verdict/internal/store/sqlstore/sqlitetest"
	"verdict/internal/testenv"
)

// The service's rules on the real store (a temporary SQLite file) and the real executions
// service: the fast tier runs them. internal/app's end-to-end tests check the routes, two
// replicas on PostgreSQL and real runs.

type fixture struct {
	st                 *sqlstore.Store
	box                *secretbox.Box
	clock              *testenv.Clock
	execs              *executions.Service
	svc                *schedules.Service
	refused            *refusals
	org                *domain.Organization
	project            *domain.Project
	admin, dev, viewer *identity.Principal
	ctx                context.Context
}

type refusals struct {
	mu  sync.Mutex
	got []string
}

func (r *refusals) ScheduleRefused(_ context.Context, orgID, projectID, scheduleID, name, reason string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, strings.Join([]string{orgID, projectID, scheduleID, name, reason}, "|"))
	return nil
}

type noEvents struct{}

func (noEvents) ExecutionUpdated(*domain.Execution)         {}
func (noEvents) ExecutionLog(string, string, string, int64) {}

func newFixture(t *testing.T, plan domain.Plan) *fixture {
	t.Helper()
	f := &fixture{st: sqlitetest.Open(t), box: sqlitetest.Box(t, 0x22), ctx: context.Background(), refused: &refusals{},
		clock: testenv.NewClock(time.Date(2026, 5, 4, 9, 59, 30, 0, time.UTC))}
	reports, err := report.NewFSStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f.execs = executions.New(executions.Deps{Store: f.st, Box: f.box, Reports: reports, Events: noEvents{}, Clock: f.clock.Now})
	f.svc = f.service()
	f.org = sqlitetest.Org(t, f.st, "Schedule Co", plan, f.clock.Now())
	f.admin = sqlitetest.As(sqlitetest.Member(t, f.st, f.org, "admin@sched.test", domain.RoleAdmin))
	f.dev = sqlitetest.As(sqlitetest.Member(t, f.st, f.org, "dev@sched.test", domain.RoleDeveloper))
	f.viewer = sqlitetest.As(sqlitetest.Member(t, f.st, f.org, "viewer@sched.test", domain.RoleViewer))
	name, image := "Web", "registry.example.com/web-suite:1"
	f.project, err = f.execs.CreateProject(f.ctx, f.admin, executions.ProjectInput{Name: &name, Image: &image})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// service is another replica's schedules service on the same store and clock.
func (f *fixture) service() *schedules.Service {
	return schedules.New(schedules.Deps{Store: f.st, Box: f.box, Runs: f.execs, Refusals: f.refused, Clock: f.clock.Now,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
}

func ptr[T any](v T) *T { return &v }

func (f *fixture) create(t *testing.T, name, cron, zone string) *schedules.View {
	t.Helper()
	v, err := f.svc.Create(f.ctx, f.dev, f.project.ID, schedules.Input{Name: &name, Cron: &cron, Timezone: &zone})
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	return v
}

func TestCreateListUpdateDelete(t *testing.T) {
	f := newFixture(t, domain.PlanTeam)
	vars := []domain.EnvVar{{Key: "MODE", Value: "nightly"}, {Key: "API_TOKEN", Value: "s3cr3t-value", Secret: true}}
	v, err := f.svc.Create(f.ctx, f.dev, f.project.ID, schedules.Input{Name: ptr(" Nightly "), Cron: ptr("30 2 * * 1-5"),
		Timezone: ptr("Europe/Paris"), Folder: ptr("tests/smoke"), BaseURL: ptr("https://staging.example.com"),
		EnvVars: &vars, Labels: &map[string]string{"suite": "smoke"}})
	if err != nil {
		t.Fatal(err)
	}
	// Monday 2026-05-04 09:59 UTC: the next weekdays' 02:30 in Paris (CEST, UTC+2).
	equalTimes(t, "nextRuns", v.NextRuns, []time.Time{time.Date(2026, 5, 5, 0, 30, 0, 0, time.UTC),
		time.Date(2026, 5, 6, 0, 30, 0, 0, time.UTC), time.Date(2026, 5, 7, 0, 30, 0, 0, time.UTC)})
	if v.Name != "Nightly" || !v.Enabled || v.EnvVars[1].Value != executions.Masked || v.EnvVars[0].Value != "nightly" {
		t.Errorf("created view: %+v", v.Schedule)
	}
	// The secret is sealed in the store.
	stored, err := f.st.Schedules().Get(f.ctx, f.org.ID, v.ID)
	if err != nil {
		t.Fatal(err)
	}
	if plain, err := f.box.Open(stored.EnvVars[1].Value); err != nil || string(plain) != "s3cr3t-value" {
		t.Errorf("stored secret: %q opens to %q, %v", stored.EnvVars[1].Value, plain, err)
	}
	// Readers list; writers only change.
	list, err := f.svc.List(f.ctx, f.viewer, f.project.ID)
	if err != nil || len(list) != 1 || list[0].ID != v.ID || list[0].EnvVars[1].Value != executions.Masked || len(list[0].NextRuns) != 3 {
		t.Fatalf("viewer's list: %+v %v", list, err)
	}
	for name, call := range map[string]func() error{
		"Create": func() error {
			_, err := f.svc.Create(f.ctx, f.viewer, f.project.ID, schedules.Input{Name: ptr("x"), Cron: ptr("* * * * *"), Timezone: ptr("UTC")})
			return err
		},
		"Update": func() error {
			_, err := f.svc.Update(f.ctx, f.viewer, f.project.ID, v.ID, schedules.Input{Enabled: ptr(false)})
			return err
		},
		"Delete": func() error { return f.svc.Delete(f.ctx, f.viewer, f.project.ID, v.ID) },
	} {
		t.Run(name, func(t *testing.T) {
			testenv.WantError(t, call(), 403, "Forbidden", "Viewers cannot create, change or delete schedules")
		})
	}

	// Pausing empties nextRuns; a masked secret keeps its value; resuming reschedules from now.
	vars[1].Value = executions.Masked
	p, err := f.svc.Update(f.ctx, f.admin, f.project.ID, v.ID, schedules.Input{Enabled: ptr(false), EnvVars: &vars})
	if err != nil || p.Enabled || len(p.NextRuns) != 0 {
		t.Fatalf("paused: %+v %v", p, err)
	}
	stored2, _ := f.st.Schedules().Get(f.ctx, f.org.ID, v.ID)
	if stored2.EnvVars[1].Value != stored.EnvVars[1].Value {
		t.Errorf("a masked secret changed the stored value")
	}
	f.clock.Advance(72 * time.Hour)
	r, err := f.svc.Update(f.ctx, f.admin, f.project.ID, v.ID, schedules.Input{Enabled: ptr(true), Cron: ptr("0 * * * *"), Timezone: ptr("UTC")})
	if err != nil || !r.NextRuns[0].Equal(time.Date(2026, 5, 7, 10, 0, 0, 0, time.UTC)) {
		t.Fatalf("resumed: %v %v", r.NextRuns, err)
	}

	// Refusals name the field.
	_, err = f.svc.Update(f.ctx, f.admin, f.project.ID, v.ID, schedules.Input{Cron: ptr("every day")})
	testenv.WantError(t, err, 400, "Invalid cron", `cron "every day" must have 5 fields: minute, hour, day of month, month, day of week (e.g. 0 2 * * 1-5)`)
	_, err = f.svc.Create(f.ctx, f.dev, f.project.ID, schedules.Input{Name: ptr("Zoned"), Cron: ptr("0 2 * * *"), Timezone: ptr("Europe/Pariss")})
	testenv.WantError(t, err, 400, "Invalid timezone", `timezone "Europe/Pariss" is not an IANA time zone (e.g. Europe/Paris, America/New_York, UTC)`)
	_, err = f.svc.Create(f.ctx, f.dev, f.project.ID, schedules.Input{Name: ptr("NoCron"), Timezone: ptr("UTC")})
	testenv.WantError(t, err, 400, "Missing required fields", "cron is required")
	_, err = f.svc.Create(f.ctx, f.dev, f.project.ID, schedules.Input{Name: ptr("Nightly"), Cron: ptr("0 2 * * *"), Timezone: ptr("UTC")})
	testenv.WantError(t, err, 409, "Schedule name already in use", "The project already has a schedule with this name")
	_, err = f.svc.Update(f.ctx, f.admin, f.project.ID, v.ID, schedules.Input{Labels: &map[string]string{"trigger": "manual"}})
	testenv.WantError(t, err, 400, "Validation error", "label trigger is set by the schedule itself")
	_, err = f.svc.Update(f.ctx, f.admin, f.project.ID, v.ID, schedules.Input{Folder: ptr("../etc")})
	testenv.WantError(t, err, 400, "Validation error", "folder must not contain ..")

	// Another organization sees none of it: its project and schedule are 404s.
	other := sqlitetest.Org(t, f.st, "Other Co", domain.PlanTeam, f.clock.Now())
	stranger := sqlitetest.As(sqlitetest.Member(t, f.st, other, "admin@other.test", domain.RoleAdmin))
	_, err = f.svc.List(f.ctx, stranger, f.project.ID)
	testenv.WantError(t, err, 404, "Project not found", "No such project in your organization")
	_, err = f.svc.Update(f.ctx, stranger, f.project.ID, v.ID, schedules.Input{Enabled: ptr(false)})
	testenv.WantError(t, err, 404, "Project not found", "No such project in your organization")
	testenv.WantError(t, f.svc.Delete(f.ctx, stranger, f.project.ID, v.ID), 404, "Project not found", "No such project in your organization")
	// A schedule reached through another project of the organization is not found either.
	name, image := "API", "registry.example.com/api-suite:1"
	api, err := f.execs.CreateProject(f.ctx, f.admin, executions.ProjectInput{Name: &name, Image: &image})
	if err == nil {
		_, err = f.svc.Get(f.ctx, f.dev, api.ID, v.ID)
		testenv.WantError(t, err, 404, "Schedule not found", "No such schedule in this project")
	}

	if err := f.svc.Delete(f.ctx, f.dev, f.project.ID, v.ID); err != nil {
		t.Fatal(err)
	}
	testenv.WantError(t, f.svc.Delete(f.ctx, f.dev, f.project.ID, v.ID), 404, "Schedule not found", "No such schedule in this project")
}

// A project holds at most MaxPerProject schedules.
func TestScheduleBound(t *testing.T) {
	f := newFixture(t, domain.PlanTeam)
	for i := range schedules.MaxPerProject {
		f.create(t, fmt.Sprintf("s%02d", i), "0 3 * * *", "UTC")
	}
	_, err := f.svc.Create(f.ctx, f.dev, f.project.ID, schedules.Input{Name: ptr("one more"), Cron: ptr("0 3 * * *"), Timezone: ptr("UTC")})
	testenv.WantError(t, err, 403, "Schedule limit reached", "A project has at most 50 schedules")
}

// Two replicas polling the same store at the same instants fire each due time once, as the
// organization's automation, with the schedule's settings and labels; secret variables reach
// the run sealed and masked.
func TestFiresOnceAcrossReplicas(t *testing.T) {
	f := newFixture(t, domain.PlanEnterprise)
	vars := []domain.EnvVar{{Key: "API_TOKEN", Value: "s3cr3t-value", Secret: true}}
	v, err := f.svc.Create(f.ctx, f.dev, f.project.ID, schedules.Input{Name: ptr("Every minute"), Cron: ptr("* * * * *"),
		Timezone: ptr("UTC"), Folder: ptr("tests/smoke"), EnvVars: &vars, Labels: &map[string]string{"suite": "smoke"}})
	if err != nil {
		t.Fatal(err)
	}
	replicas := []*schedules.Service{f.svc, f.service(), f.service()}
	var claimed atomic.Int64
	for range 10 * 12 { // ten minutes in steps of 5 s; every replica polls at each step, together
		f.clock.Advance(5 * time.Second)
		var wg sync.WaitGroup
		for _, r := range replicas {
			wg.Add(1)
			go func() {
				defer wg.Done()
				n, err := r.FireDue(f.ctx)
				if err != nil {
					t.Error(err)
				}
				claimed.Add(int64(n))
			}()
		}
		wg.Wait()
	}
	runs, _, err := f.st.Executions().List(f.ctx, f.org.ID, store.ExecutionFilter{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var tasks []string
	for _, e := range runs {
		tasks = append(tasks, e.TaskID)
		if e.Labels[domain.TriggerLabel] != "schedule" || e.Labels[domain.ScheduleLabel] != "Every minute" || e.Labels["suite"] != "smoke" ||
			e.Folder != "tests/smoke" || e.ProjectID != f.project.ID || e.TriggeredBy != "" || e.Image != f.project.Image {
			t.Errorf("run %s: %+v", e.TaskID, e)
		}
		full, err := f.st.Executions().Get(f.ctx, f.org.ID, e.TaskID)
		if err != nil {
			t.Fatal(err)
		}
		env, err := control.OpenEnv(f.box, full.EnvCipher)
		if err != nil || env.Vars["API_TOKEN"] != "s3cr3t-value" || !slices.Contains(env.Secrets, "API_TOKEN") {
			t.Errorf("run %s's variables: %+v %v", e.TaskID, env, err)
		}
	}
	slices.Sort(tasks)
	var want []string
	for m := range 10 {
		want = append(want, schedules.TaskID(v.ID, time.Date(2026, 5, 4, 10, m, 0, 0, time.UTC)))
	}
	if !slices.Equal(tasks, want) {
		t.Fatalf("runs queued over ten minutes:\n got  %v\n want %v", tasks, want)
	}
	if claimed.Load() != 10 {
		t.Fatalf("%d fires claimed by the replicas, want 10", claimed.Load())
	}
	s, _ := f.st.Schedules().Get(f.ctx, f.org.ID, v.ID)
	if s.LastTaskID != want[9] || !s.LastFireAt.Equal(time.Date(2026, 5, 4, 10, 9, 0, 0, time.UTC)) || s.MissedFires != 0 || s.LastError != "" {
		t.Errorf("fire record: %+v", s)
	}
}

// After downtime, a missed fire within the grace period runs once; older ones are skipped and
// counted on the schedule, never queued as a burst.
func TestMissedFiresAfterDowntime(t *testing.T) {
	f := newFixture(t, domain.PlanEnterprise)
	v := f.create(t, "Minutely", "* * * * *", "UTC")
	f.clock.Advance(3 * time.Hour) // the replicas were down from 10:00 to 12:59:30
	n, err := f.svc.FireDue(f.ctx)
	if err != nil || n != 1 {
		t.Fatalf("FireDue after downtime: %d %v", n, err)
	}
	count, _ := f.st.Executions().CountSince(f.ctx, f.org.ID, time.Time{})
	s, _ := f.st.Schedules().Get(f.ctx, f.org.ID, v.ID)
	if count != 1 || s.LastTaskID != schedules.TaskID(v.ID, time.Date(2026, 5, 4, 12, 59, 0, 0, time.UTC)) || s.MissedFires != 179 ||
		!s.LastMissedAt.Equal(time.Date(2026, 5, 4, 12, 58, 0, 0, time.UTC)) || !s.NextFireAt.Equal(time.Date(2026, 5, 4, 13, 0, 0, 0, time.UTC)) {
		t.Fatalf("after downtime: %d runs, %+v", count, s)
	}
	// With a grace of ten seconds, a fire 30 s late is skipped, not run.
	short := schedules.New(schedules.Deps{Store: f.st, Box: f.box, Runs: f.execs, Clock: f.clock.Now, Grace: 10 * time.Second})
	f.clock.Advance(60 * time.Second) // 13:00:30
	if n, err := short.FireDue(f.ctx); err != nil || n != 1 {
		t.Fatalf("FireDue past the grace: %d %v", n, err)
	}
	count, _ = f.st.Executions().CountSince(f.ctx, f.org.ID, time.Time{})
	s, _ = f.st.Schedules().Get(f.ctx, f.org.ID, v.ID)
	if count != 1 || s.MissedFires != 180 || !s.NextFireAt.Equal(time.Date(2026, 5, 4, 13, 1, 0, 0, time.UTC)) {
		t.Fatalf("past the grace: %d runs, %+v", count, s)
	}
}

// A run the plan refuses is recorded on the schedule with the reason, and reported.
func TestRefusedFireRecorded(t *testing.T) {
	f := newFixture(t, domain.PlanFree)
	for i := range domain.LimitsFor(domain.PlanFree).MaxTestRuns {
		if _, err := f.execs.Queue(f.ctx, f.dev, executions.QueueInput{ProjectID: f.project.ID, TaskID: fmt.Sprintf("fill-%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	v := f.create(t, "Nightly", "0 10 * * *", "UTC")
	f.clock.Advance(31 * time.Second) // 10:00:01
	if n, err := f.svc.FireDue(f.ctx); err != nil || n != 1 {
		t.Fatalf("FireDue: %d %v", n, err)
	}
	got, err := f.svc.Get(f.ctx, f.viewer, f.project.ID, v.ID)
	if err != nil {
		t.Fatal(err)
	}
	const reason = "Test run limit exceeded: The free plan allows 100 test runs per billing period"
	if got.LastError != reason || got.LastRefusedAt == nil || !got.LastRefusedAt.Equal(f.clock.Now()) || got.LastTaskID != "" ||
		!got.LastFireAt.Equal(time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC)) {
		t.Fatalf("refused fire's record: %+v", got.Schedule)
	}
	if want := []string{f.org.ID + "|" + f.project.ID + "|" + v.ID + "|Nightly|" + reason}; !slices.Equal(f.refused.got, want) {
		t.Fatalf("refusals reported: %q", f.refused.got)
	}
	// The next fire is still tomorrow's.
	if !got.NextRuns[0].Equal(time.Date(2026, 5, 5, 10, 0, 0, 0, time.UTC)) {
		t.Fatalf("next after a refusal: %v", got.NextRuns)
	}
}

// A replica that claims a fire and stops before recording it leaves the fire pending: once its
// lease is past another replica takes it again and queues its run, and a run the first one did
// queue is not queued a second time (its taskId is the fire's).
func TestFireLeftPendingIsTakenAgain(t *testing.T) {
	f := newFixture(t, domain.PlanEnterprise)
	v := f.create(t, "Minutely", "* * * * *", "UTC")
	runs := func() int {
		n, err := f.st.Executions().CountSince(f.ctx, f.org.ID, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	// 10:00:01: a replica claims the 10:00 fire, then stops before queueing its run.
	f.clock.Advance(31 * time.Second)
	ten := time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC)
	if ok, err := f.st.Schedules().Claim(f.ctx, v.ID, ten, ten.Add(time.Minute), &ten, f.clock.Now().Add(schedules.Lease)); !ok || err != nil {
		t.Fatalf("claim: %v %v", ok, err)
	}
	if n, err := f.svc.FireDue(f.ctx); n != 0 || err != nil || runs() != 0 {
		t.Fatalf("within the lease: %d fires, %d runs, %v", n, runs(), err)
	}
	f.clock.Advance(schedules.Lease) // 10:00:31: the lease is past
	if n, err := f.svc.FireDue(f.ctx); n != 1 || err != nil || runs() != 1 {
		t.Fatalf("past the lease: %d fires, %d runs, %v", n, runs(), err)
	}
	s, _ := f.st.Schedules().Get(f.ctx, f.org.ID, v.ID)
	if s.LastTaskID != schedules.TaskID(v.ID, ten) || s.PendingUntil != nil {
		t.Fatalf("after taking it again: %+v", s)
	}

	// 10:01:01: a replica claims the 10:01 fire and queues its run, then stops before recording.
	f.clock.Advance(30 * time.Second)
	tenOne := ten.Add(time.Minute)
	if ok, err := f.st.Schedules().Claim(f.ctx, v.ID, tenOne, tenOne.Add(time.Minute), &tenOne, f.clock.Now().Add(schedules.Lease)); !ok || err != nil {
		t.Fatalf("claim: %v %v", ok, err)
	}
	if _, err := f.execs.Queue(f.ctx, identity.Automation(f.org.ID), executions.QueueInput{ProjectID: f.project.ID,
		TaskID: schedules.TaskID(v.ID, tenOne)}); err != nil {
		t.Fatal(err)
	}
	// 10:02:01: the 10:02 fire waits for the pending one; once its lease is past (10:01:31),
	// the pending fire is recorded without a second run, and the 10:02 fire runs.
	f.clock.Advance(time.Minute)
	for range 2 {
		if _, err := f.svc.FireDue(f.ctx); err != nil {
			t.Fatal(err)
		}
	}
	s, _ = f.st.Schedules().Get(f.ctx, f.org.ID, v.ID)
	if runs() != 3 || s.LastTaskID != schedules.TaskID(v.ID, ten.Add(2*time.Minute)) || s.PendingUntil != nil {
		t.Fatalf("after the second recovery: %d runs, %+v", runs(), s)
	}
}
