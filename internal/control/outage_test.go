package control

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strings"
	"testing"
	"time"

	"verdict/internal/domain"
	"verdict/internal/report"
	"verdict/internal/run"
	"verdict/internal/store"
	"verdict/internal/store/sqlstore"
	"verdict/internal/testenv"
)

// cuttablePostgres opens a migrated store on a fresh PostgreSQL database reached through a proxy
// the test can cut (the database goes away for this store alone), and a report store.
func cuttablePostgres(t *testing.T) (st *sqlstore.Store, reports *report.FSStore, cut, restore func()) {
	t.Helper()
	u, err := url.Parse(testenv.PostgresDB(t))
	if err != nil {
		t.Fatal(err)
	}
	proxy, cut, restore := testenv.Cutter(t, u.Host)
	u.Host = proxy
	dir := t.TempDir()
	st, err = sqlstore.Open(context.Background(), u.String(), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	if reports, err = report.NewFSStore(dir); err != nil {
		t.Fatal(err)
	}
	return st, reports, cut, restore
}

// newOrg creates an organization on plan.
func newOrg(t *testing.T, st store.Store, plan domain.Plan) *domain.Organization {
	t.Helper()
	ctx := context.Background()
	org := &domain.Organization{ID: domain.NewID(), Name: "Org", Slug: "org", Plan: domain.PlanFree, CreatedAt: time.Now()}
	if err := st.Organizations().Create(ctx, org); err != nil {
		t.Fatal(err)
	}
	if err := st.Organizations().UpdatePlan(ctx, org.ID, plan, domain.Billing{}); err != nil {
		t.Fatal(err)
	}
	return org
}

// queueRun adds a PENDING run of org queued at.
func queueRun(t *testing.T, st store.Store, org *domain.Organization, task string, at time.Time) *domain.Execution {
	t.Helper()
	e := &domain.Execution{ID: domain.NewID(), OrganizationID: org.ID, TaskID: task, Image: "suite:pass", Folder: "all",
		TimeoutSeconds: 60, Status: domain.ExecPending, QueuedAt: at}
	if err := st.Executions().Create(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	return e
}

func statusOf(t *testing.T, st store.Store, org *domain.Organization, task string) *domain.Execution {
	t.Helper()
	e, err := st.Executions().Get(context.Background(), org.ID, task)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// The reaper does not blame runners for an outage of the database: after a sweep that failed
// (PostgreSQL cut off) and after an outage the plane met (Outages), the first sweep that
// reaches the store gives every active run a full grace before any is reaped; a run whose
// runner renews in it lives on, one whose runner is gone is reaped once the grace is over.
func TestReaperGivesRunnersAGraceAfterAnOutage(t *testing.T) {
	ctx := context.Background()
	st, _, cut, restore := cuttablePostgres(t)
	org := newOrg(t, st, domain.PlanEnterprise)
	clock := testenv.NewClock(time.Date(2026, 3, 10, 9, 0, 0, 0, time.UTC))
	claim := func(task string) *domain.Execution {
		t.Helper()
		queueRun(t, st, org, task, clock.Now().Add(-time.Minute))
		e, err := st.Executions().Claim(ctx, "r1", "", "", clock.Now(), clock.Now().Add(time.Minute), limitFor)
		if err != nil || e == nil || e.TaskID != task {
			t.Fatalf("claim %s: %+v, %v", task, e, err)
		}
		return e
	}
	live := claim("live")
	claim("gone")
	outages := &Outages{}
	r := &Reaper{Store: st, Clock: clock.Now, Log: slog.New(slog.DiscardHandler), Grace: 30 * time.Second,
		Outages: outages}
	r.Sweep(ctx) // the first sweep: leases of a minute are longer than the grace, and stay

	// PostgreSQL goes away for two minutes: no runner can renew, and the sweeps fail.
	cut()
	clock.Advance(2 * time.Minute)
	r.Sweep(ctx)
	restore()
	r.Sweep(ctx)
	for _, task := range []string{"live", "gone"} {
		e := statusOf(t, st, org, task)
		if e.Status != domain.ExecRunning || e.LeaseUntil == nil || !e.LeaseUntil.Equal(clock.Now().Add(30*time.Second)) {
			t.Fatalf("%s after the outage: %s, lease %v (want RUNNING, lease now + the grace)", task, e.Status, e.LeaseUntil)
		}
	}
	// The live runner renews within the grace; the gone one does not.
	clock.Advance(5 * time.Second)
	if _, err := st.Executions().Heartbeat(ctx, live.ID, "r1", clock.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	clock.Advance(20 * time.Second)
	r.Sweep(ctx)
	if e := statusOf(t, st, org, "gone"); e.Status != domain.ExecRunning {
		t.Fatalf("gone reaped within the grace: %s", e.Status)
	}
	clock.Advance(5*time.Second + time.Millisecond)
	r.Sweep(ctx)
	if e := statusOf(t, st, org, "gone"); e.Status != domain.ExecError || !strings.Contains(e.Error, "runner lost") {
		t.Fatalf("gone after the grace: %s %q, want ERROR (runner lost)", e.Status, e.Error)
	}
	if e := statusOf(t, st, org, "live"); e.Status != domain.ExecRunning {
		t.Fatalf("live after the grace: %s", e.Status)
	}

	// An outage too short for a sweep to meet, met by a runner's call: the plane records it, and
	// the next sweep gives the grace again. Here the live runner's lease ran out meanwhile.
	clock.Advance(2 * time.Minute)
	plane := &Plane{Store: st, Events: noEvents{}, Clock: clock.Now, Log: slog.New(slog.DiscardHandler), Outages: outages}
	cut()
	_, err := plane.Peer("r1").Extend(ctx, live.ID, time.Minute)
	restore()
	if !errors.Is(err, run.ErrUnavailable) {
		t.Fatalf("Extend while the database is cut off: %v, want ErrUnavailable", err)
	}
	r.Sweep(ctx)
	if e := statusOf(t, st, org, "live"); e.Status != domain.ExecRunning || !e.LeaseUntil.Equal(clock.Now().Add(30*time.Second)) {
		t.Fatalf("live after an outage the plane met: %s, lease %v", e.Status, e.LeaseUntil)
	}
	// Without an outage, an expired lease is reaped at the next sweep.
	clock.Advance(time.Minute)
	r.Sweep(ctx)
	if e := statusOf(t, st, org, "live"); e.Status != domain.ExecError {
		t.Fatalf("live without renewals nor outage: %s, want ERROR", e.Status)
	}
}

// chattyBackend is fakeBackend whose containers print lines, one every interval, then exit 0.
type chattyBackend struct {
	*fakeBackend
	lines    int
	interval time.Duration
}

func (b *chattyBackend) Logs(ctx context.Context, id string) (io.ReadCloser, error) {
	pr, pw := io.Pipe()
	go func() {
		for i := 1; i <= b.lines; i++ {
			if _, err := fmt.Fprintf(pw, "line %d of %d\n", i, b.lines); err != nil {
				return
			}
			time.Sleep(b.interval)
		}
		pw.Close()
		b.mu.Lock()
		ch := b.exits[id]
		b.mu.Unlock()
		ch <- 0
	}()
	return pr, nil
}

// A run in flight while PostgreSQL is cut off for longer than the lease keeps its outcome: the
// runner (in process, over the plane) keeps its log lines, reports and result and delivers them
// when the database is back; the reaper, told of the outage, does not reap it. The run ends
// PASSED with exit code 0 and its whole log, each line once and in order.
func TestRunKeepsItsOutcomeThroughAStoreOutage(t *testing.T) {
	ctx := context.Background()
	st, reports, cut, restore := cuttablePostgres(t)
	org := newOrg(t, st, domain.PlanEnterprise)
	b := &chattyBackend{fakeBackend: newFakeBackend(reportFiles), lines: 40, interval: 50 * time.Millisecond}
	log := slog.New(slog.DiscardHandler)
	outages := &Outages{}
	plane := &Plane{Store: st, Reports: reports, ReportDir: reports.LocalDir, Events: noEvents{}, Clock: domain.SystemClock,
		Log: log, Outages: outages}
	r := &run.Runner{ID: "r1", Peer: plane.Peer("r1"), Backend: b, Clock: domain.SystemClock, Log: log, Slots: 1,
		Lease: time.Second, Poll: 50 * time.Millisecond}
	reaper := &Reaper{Store: st, Clock: domain.SystemClock, Log: log, Interval: 100 * time.Millisecond,
		Grace: time.Second, Outages: outages}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{}, 2)
	go func() { r.Run(runCtx); done <- struct{}{} }()
	go func() { reaper.Run(runCtx); done <- struct{}{} }()
	t.Cleanup(func() { stop(); <-done; <-done })

	queueRun(t, st, org, "a", time.Now())
	r.Notify()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		l, err := st.Logs().Read(ctx, statusOf(t, st, org, "a").ID)
		if err == nil && strings.Contains(l, "line 5 of") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run's first lines were not stored: %q %v", l, err)
		}
	}
	cut()
	time.Sleep(3 * time.Second) // three leases; the container prints its last line and exits meanwhile
	restore()

	var e *domain.Execution
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if e = statusOf(t, st, org, "a"); e.Status.Final() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run did not end after the outage: %s", e.Status)
		}
	}
	if e.Status != domain.ExecPassed || e.ExitCode == nil || *e.ExitCode != 0 || e.Summary.Total != 1 {
		t.Fatalf("run after the outage: %s %q, exit code %v, summary %+v", e.Status, e.Error, e.ExitCode, e.Summary)
	}
	l, err := st.Logs().Read(ctx, e.ID)
	if err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	for i := 1; i <= b.lines; i++ {
		fmt.Fprintf(&want, "line %d of %d\n", i, b.lines)
	}
	if l != want.String() {
		t.Fatalf("stored log:\n%s\nwant:\n%s", l, want.String())
	}
	if outages.count() == 0 {
		t.Fatal("no outage recorded")
	}
}

// A run the reaper ended while its runner was away is no longer the runner's: Started and Done
// answer ErrLeaseLost (not the store's not found), so the runner stops retrying at once.
func TestPeerCallsAfterTheReaperEndedTheRun(t *testing.T) {
	ctx := context.Background()
	st, reports := openStores(t)
	org := newOrg(t, st, domain.PlanEnterprise)
	queueRun(t, st, org, "a", time.Now())
	plane := &Plane{Store: st, Reports: reports, ReportDir: reports.LocalDir, Events: noEvents{}, Clock: domain.SystemClock,
		Log: slog.New(slog.DiscardHandler)}
	peer := plane.Peer("r1")
	w, err := peer.Next(ctx, time.Millisecond)
	if err != nil || w == nil {
		t.Fatalf("Next: %v %v", w, err)
	}
	time.Sleep(5 * time.Millisecond)
	if ended, err := st.Executions().EndExpired(ctx, w.ID, time.Now(), "runner lost"); !ended || err != nil {
		t.Fatalf("EndExpired: %v %v", ended, err)
	}
	if err := peer.Started(ctx, w.ID, "c1"); !errors.Is(err, run.ErrLeaseLost) {
		t.Fatalf("Started after the reaper: %v, want ErrLeaseLost", err)
	}
	exit := 0
	if err := peer.Done(ctx, w.ID, run.Result{Status: domain.ExecPassed, ExitCode: &exit, FinishedAt: time.Now()}); !errors.Is(err, run.ErrLeaseLost) {
		t.Fatalf("Done after the reaper: %v, want ErrLeaseLost", err)
	}
	if e := statusOf(t, st, org, "a"); e.Status != domain.ExecError {
		t.Fatalf("the reaper's run: %s", e.Status)
	}
}
