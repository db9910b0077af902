package control

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"verdict/internal/domain"
	"verdict/internal/store"
)

// Step is a post-run step: an effect of a run's end that comes after its final write
// (announcing it; notifying a chat room, calling a webhook, setting a commit status). `app`
// registers the steps, one line each, and hands the one list to Plane.Steps, Reaper.Steps and
// Reconcile; they run in that order for every run a runner, the reaper or a restart ended,
// each bounded by stepTimeout. A queued run cancelled before it started never ran: no step
// sees it.
type Step interface {
	// Name names the step in the log, and its deliveries in the outbox ("step:<name>"):
	// unique among the steps, and stable (a delivery queued by one version is made by the
	// next).
	Name() string
	// After is given the run as stored, in its final status. It is quick and local: an effect
	// on an outside service is not made here but enqueued with out.Enqueue, and made later by
	// the outbox worker through the step's Deliver (Deliverer), with retries. After may be
	// called more than once for a run (a runner's Done repeated after a lost answer, a
	// runner's and the reaper's final writes racing); out keeps one delivery per step and
	// run. Its error is logged and fails nothing; it never changes the run.
	After(ctx context.Context, run *domain.Execution, out Outbox) error
}

// Deliverer is a Step with deliveries: the outbox worker (mail.Worker, through Deliveries)
// calls Deliver with each payload After enqueued, from any replica. An error is retried with
// the outbox's backoff (30 s doubling to an hour, 10 attempts, then given up; or the policy
// app registers for the step's kind, mail.Worker.Policies), an error marked mail.Permanent is
// not; a delivery made may be made again if recording it fails (at least once).
type Deliverer interface {
	Step
	Deliver(ctx context.Context, payload string) error
}

// Outbox is a step's door to the durable outbox (store.OutboxRepo): its deliveries are stored
// sealed at rest, like mails' bodies, and claimed with a lease, so one replica makes each.
type Outbox interface {
	// Enqueue stores payload for the step's Deliver, due at once, once per run: a second
	// Enqueue for the same run stores nothing and is not an error.
	Enqueue(ctx context.Context, runID, payload string) error
}

// stepTimeout bounds each step's After.
const stepTimeout = 10 * time.Second

// deliveryKind is the outbox kind of step name's deliveries.
func deliveryKind(name string) string { return "step:" + name }

// DeliveryKind is the outbox kind of step name's deliveries, for a step that enqueues one
// before the run ends (a commit's pending status when the run is queued), in the transaction
// that queues it, with store.OutboxRepo.Enqueue.
func DeliveryKind(name string) string { return deliveryKind(name) }

// Deliveries are the deliveries of steps' Deliverers by outbox kind, for mail.Worker.Deliverers.
func Deliveries(steps []Step) map[string]func(ctx context.Context, payload string) error {
	out := map[string]func(ctx context.Context, payload string) error{}
	for _, s := range steps {
		if d, ok := s.(Deliverer); ok {
			out[deliveryKind(s.Name())] = d.Deliver
		}
	}
	return out
}

// afterRun runs steps for run, which reached its final status, in order, each within
// stepTimeout even when ctx was cancelled (the run is over; its effects are still due).
func afterRun(ctx context.Context, steps []Step, st store.Store, clock domain.Clock, run *domain.Execution, log *slog.Logger) {
	if run == nil || !run.Status.Final() {
		return
	}
	for _, s := range steps {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stepTimeout)
		err := s.After(sctx, run, stepOutbox{repo: st.Outbox(), kind: deliveryKind(s.Name()), clock: clock})
		cancel()
		if err != nil {
			log.Warn("a post-run step failed", "step", s.Name(), "task", run.TaskID, "err", err)
		}
	}
}

// stepOutbox is Outbox for one step.
type stepOutbox struct {
	repo  store.OutboxRepo
	kind  string
	clock domain.Clock
}

func (o stepOutbox) Enqueue(ctx context.Context, runID, payload string) error {
	now := o.clock()
	err := o.repo.Enqueue(ctx, &store.Mail{Kind: o.kind, Key: o.kind + ":" + runID, To: []string{}, Text: payload,
		NextAttempt: now, CreatedAt: now})
	if errors.Is(err, store.ErrConflict) {
		return nil // enqueued already, by an earlier report of the run's end
	}
	return err
}

// Announce is the first post-run step: execution-updated, with the run as stored, to its
// organization's room (and its followers).
type Announce struct{ Events Events }

func (Announce) Name() string { return "announce" }

func (a Announce) After(_ context.Context, run *domain.Execution, _ Outbox) error {
	a.Events.ExecutionUpdated(run)
	return nil
}
