package control

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"verdict/internal/domain"
	"verdict/internal/mail"
	"verdict/internal/run"
	"verdict/internal/store/sqlstore/sqlitetest"
)

// notifyStep is a Deliverer that enqueues one delivery per run (its task and status) and
// records what it saw and what it delivered; its first deliveries fail.
type notifyStep struct {
	mu        sync.Mutex
	seen      []string // task:status, as After got them
	delivered []string
	failFirst int
}

func (*notifyStep) Name() string { return "notify" }

func (s *notifyStep) After(ctx context.Context, run *domain.Execution, out Outbox) error {
	s.mu.Lock()
	s.seen = append(s.seen, run.TaskID+":"+string(run.Status))
	s.mu.Unlock()
	return out.Enqueue(ctx, run.ID, run.TaskID+" ended "+string(run.Status))
}

func (s *notifyStep) Deliver(_ context.Context, payload string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failFirst > 0 {
		s.failFirst--
		return errors.New("the chat service answered 503")
	}
	s.delivered = append(s.delivered, payload)
	return nil
}

func (s *notifyStep) got() (seen, delivered []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.seen), slices.Clone(s.delivered)
}

// failingStep fails; the steps after it still run.
type failingStep struct{}

func (failingStep) Name() string { return "failing" }
func (failingStep) After(context.Context, *domain.Execution, Outbox) error {
	return errors.New("out of order")
}

// recordedEvents records the announced runs.
type recordedEvents struct {
	mu      sync.Mutex
	updated []string
}

func (e *recordedEvents) ExecutionUpdated(x *domain.Execution) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.updated = append(e.updated, x.TaskID+":"+string(x.Status))
}
func (e *recordedEvents) ExecutionLog(string, string, string, int64) {}

// The post-run steps run in order once a run reached its final status, with the run as stored,
// whichever way it ended (a runner's Done, the reaper, a restart's reconcile); a step's failure
// fails neither the run nor the steps after it; a step's delivery is enqueued once per run,
// however often the end is reported, and the outbox worker makes it through the step, retrying
// a failure.
func TestPostRunStepsAndTheirDeliveries(t *testing.T) {
	ctx := context.Background()
	st := sqlitetest.Open(t)
	org := &domain.Organization{ID: domain.NewID(), Name: "Org", Slug: "org", Plan: domain.PlanEnterprise}
	if err := st.Organizations().Create(ctx, org); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	events := &recordedEvents{}
	notify := &notifyStep{failFirst: 1}
	steps := []Step{Announce{Events: events}, failingStep{}, notify}
	now := time.Now()
	queue := func(task string) {
		t.Helper()
		e := &domain.Execution{ID: domain.NewID(), OrganizationID: org.ID, TaskID: task, Image: "suite:pass",
			Folder: "all", TimeoutSeconds: 60, Status: domain.ExecPending, QueuedAt: now.Add(-time.Hour)}
		if err := st.Executions().Create(ctx, e); err != nil {
			t.Fatal(err)
		}
	}

	// A runner's Done: the steps see the run PASSED.
	plane := &Plane{Store: st, Events: noEvents{}, Clock: domain.SystemClock, Log: log, Steps: steps}
	peer := plane.Peer("r1")
	queue("done")
	w, err := peer.Next(ctx, time.Minute)
	if err != nil || w == nil {
		t.Fatalf("claim: %+v %v", w, err)
	}
	exit := 0
	if err := peer.Done(ctx, w.ID, run.Result{Status: domain.ExecPassed, ExitCode: &exit, FinishedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}

	// The reaper: a lost runner's run, ERROR. Then a restart: the runner's earlier life's run.
	queue("lost")
	if c, err := st.Executions().Claim(ctx, "gone", "", "", now, now.Add(time.Minute), func(domain.Plan) int { return 10 }); err != nil || c == nil {
		t.Fatalf("claim: %+v %v", c, err)
	}
	at := now
	reaper := &Reaper{Store: st, Steps: steps, Clock: func() time.Time { return at }, Log: log}
	reaper.Sweep(ctx)
	at = now.Add(2 * time.Minute)
	reaper.Sweep(ctx)
	queue("restarted")
	if c, err := st.Executions().Claim(ctx, "earlier-life", "", "", now, now.Add(time.Hour), func(domain.Plan) int { return 10 }); err != nil || c == nil {
		t.Fatalf("claim: %+v %v", c, err)
	}
	if err := Reconcile(ctx, st, newFakeBackend(nil), "earlier-life", domain.SystemClock, steps, log); err != nil {
		t.Fatal(err)
	}

	want := []string{"done:PASSED", "lost:ERROR", "restarted:ERROR"}
	if seen, _ := notify.got(); !slices.Equal(seen, want) || !slices.Equal(events.updated, want) {
		t.Fatalf("the steps saw %v, announced %v; want %v (in order, past the failing step)", seen, events.updated, want)
	}

	// The end reported again (the reaper's write raced the runner's; a Done repeated): the
	// steps run again, the delivery is not enqueued twice.
	done, err := st.Executions().Get(ctx, org.ID, "done")
	if err != nil {
		t.Fatal(err)
	}
	afterRun(ctx, steps, st, domain.SystemClock, done, log)
	if seen, _ := notify.got(); len(seen) != 4 {
		t.Fatalf("the steps saw %v, want the repeated end too", seen)
	}

	// The outbox worker makes them through the step, each once: the first attempt fails and is
	// retried after its backoff; the mails' backlog does not count them.
	clock := time.Now().Add(3 * time.Minute) // past the reaper's clock, which dated its delivery
	worker := &mail.Worker{Repo: st.Outbox(), Deliverers: Deliveries(steps), Clock: func() time.Time { return clock }, Logger: log}
	if _, err := worker.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if _, delivered := notify.got(); len(delivered) != 2 {
		t.Fatalf("delivered %v after one round with one failure, want 2", delivered)
	}
	clock = clock.Add(mail.Backoff(1) + time.Second)
	if _, err := worker.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	_, delivered := notify.got()
	slices.Sort(delivered)
	if !slices.Equal(delivered, []string{"done ended PASSED", "lost ended ERROR", "restarted ended ERROR"}) {
		t.Fatalf("delivered %v", delivered)
	}
	if n, err := st.Outbox().Backlog(ctx); err != nil || n != 0 {
		t.Fatalf("mail backlog %d %v", n, err)
	}
	if m, err := st.Outbox().Claim(ctx, clock.Add(time.Hour), clock.Add(2*time.Hour), 10); err != nil || len(m) != 0 {
		t.Fatalf("left in the outbox: %+v %v", m, err)
	}
}
