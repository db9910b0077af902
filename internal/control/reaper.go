package control

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"verdict/internal/domain"
	"verdict/internal/run"
	"verdict/internal/store"
)

// Reaper ends runs whose runner stopped renewing the lease, so that no run stays RUNNING
// forever after a crash. Every replica may run one: ending a run is a conditional update.
//
// An outage of the control plane is not a lost runner: while the database does not answer, no
// runner can renew its lease, and a lease that ran out meanwhile says nothing about its runner.
// The rule: a run is reaped only when its runner had a full Grace of working database to renew
// it. After any outage this process met (a sweep that failed, or a runner's call the Plane saw
// fail on the store: Outages), the first sweep that reaches the store again first extends every
// active run's lease (RUNNING and ANALYZING) to at least now + Grace, in one conditional write,
// and only then looks for expired leases. The first sweep after the process starts does the
// same: the server may have been down, and the runners with it unable to renew.
type Reaper struct {
	Store store.Store
	// Backends are the backends of the runners in this process, by runner ID: a lost run's
	// container (and what else its runner kept, run.RunnerSweeper) is removed through the
	// backend of the runner that ran it, and only when that runner is in this process. Another
	// runner's (a remote runner's, another replica's) is on an engine this process does not
	// own: that runner removes it itself, when the lease loss reaches it or at its next start.
	// Nil: none.
	Backends map[string]run.Backend
	Steps    []Step // the post-run steps (Plane.Steps), for the runs it ends
	Clock    domain.Clock
	Log      *slog.Logger
	Interval time.Duration // [5s]
	Metrics  RunMetrics    // counts the runs it ends; nil: none
	// Grace is the time every runner gets to renew its leases after an outage [30s]: the
	// server's lease, at least minGrace (a runner retries a failed renewal within a few
	// seconds).
	Grace time.Duration
	// Outages are the store failures this process's control plane met (shared with
	// Plane.Outages); nil: only the reaper's own sweeps count.
	Outages *Outages
	// ShardEnded settles a sharded run once its shards have ended (Plane.ShardEnded), told of
	// each shard the reaper ends; nil: none.
	ShardEnded func(ctx context.Context, parentID string)

	started bool   // a sweep reached the store since the process started
	seen    uint64 // Outages.count() when the leases were last extended
	failing bool   // the last sweep failed: said once per outage
}

// minGrace is the shortest Grace: more than the longest wait between a runner's tries
// (run's maxRetry, the remote client's MaxBackoff), so that every live runner renews in it.
const minGrace = 10 * time.Second

// Run sweeps every Interval until ctx ends.
func (r *Reaper) Run(ctx context.Context) {
	if r.Interval <= 0 {
		r.Interval = 5 * time.Second
	}
	t := time.NewTicker(r.Interval)
	defer t.Stop()
	for {
		r.Sweep(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Sweep ends every run whose lease has expired, removing its container when its runner is in
// this process (Backends); after an outage it first gives every runner a Grace to renew (see
// Reaper). Sweeps of one Reaper do not overlap (Run calls them one after another).
func (r *Reaper) Sweep(ctx context.Context) {
	if r.Outages == nil {
		r.Outages = &Outages{}
	}
	now := r.Clock()
	if met := r.Outages.count(); !r.started || met != r.seen {
		grace := max(r.Grace, minGrace)
		if r.Grace <= 0 {
			grace = 30 * time.Second
		}
		n, err := r.Store.Executions().ExtendLeases(ctx, now.Add(grace))
		if err != nil {
			r.failed(ctx, "extending the leases after an outage failed", err)
			return
		}
		if n > 0 && r.started {
			r.Log.Warn("the store was unavailable: every active run's lease extended, so that no runner loses its runs for it",
				"runs", n, "grace", grace)
		}
		r.started, r.seen = true, met
	}
	expired, err := r.Store.Executions().Expired(ctx, now)
	if err != nil {
		r.failed(ctx, "looking for expired leases failed", err)
		return
	}
	if r.failing {
		r.Log.Info("the lease reaper reaches the store again")
		r.failing = false
	}
	for _, e := range expired {
		r.end(ctx, &e, now, "the runner stopped renewing its lease (runner lost)")
	}
	if r.ShardEnded != nil {
		// A sharded run whose last shard ended without settling it (the process ended, the
		// database failed at that moment) is settled here: no run stays RUNNING.
		stranded, err := r.Store.Executions().Stranded(ctx)
		if err != nil {
			r.Log.Warn("looking for sharded runs to settle failed", "err", err)
		}
		for _, id := range stranded {
			r.ShardEnded(ctx, id)
		}
	}
}

// failed records a sweep that could not reach the store: the next one that does extends the
// leases first.
func (r *Reaper) failed(ctx context.Context, what string, err error) {
	if ctx.Err() != nil {
		return
	}
	r.Outages.Met()
	if !r.failing {
		r.Log.Error(what+"; no run is reaped until the store answers and every runner had time to renew", "err", err)
		r.failing = true
	}
}

func (r *Reaper) end(ctx context.Context, e *domain.Execution, now time.Time, reason string) {
	if r.requeueShard(ctx, e, now) {
		return
	}
	if e.IsShard() {
		reason = domain.ShardLost // its run's error names it: "shard 3 of 4 was lost"
	}
	var ended bool
	var err error
	final := domain.ExecError
	if e.Status == domain.ExecAnalyzing {
		// Its verdict was reached before the analysis began: it stands, unexplained.
		final = settledVerdict(e)
		ended, err = r.Store.Executions().SettleExpired(ctx, e.ID, now, final, interruptedAnalysis("runner lost", now))
	} else {
		ended, err = r.Store.Executions().EndExpired(ctx, e.ID, now, reason)
	}
	if err != nil || !ended {
		return
	}
	if r.Metrics != nil && !e.IsShard() {
		done := *e
		done.Status, done.FinishedAt = final, &now
		r.Metrics.RunFinished(&done)
	}
	r.Log.Warn("run ended: lease expired", "org", e.OrganizationID, "task", e.TaskID, "runner", e.RunnerID)
	r.removeLost(ctx, e)
	if e.IsShard() {
		// A shard's end is its run's business: the run is settled once its shards have ended.
		if r.ShardEnded != nil {
			r.ShardEnded(ctx, e.ParentID)
		}
		return
	}
	if done, err := r.Store.Executions().GetByID(ctx, e.ID); err == nil {
		afterRun(ctx, r.Steps, r.Store, r.Clock, done, r.Log)
	}
}

// removeLost removes the container of a run whose runner was lost, when that runner's backend
// is this process's (Backends), and the runner's network sandboxes.
func (r *Reaper) removeLost(ctx context.Context, e *domain.Execution) {
	if b := r.Backends[e.RunnerID]; b != nil && e.RunnerID != "" {
		if e.ContainerID != "" {
			if err := b.Remove(ctx, e.ContainerID); err != nil {
				r.Log.Info("removing the lost run's container failed", "container", e.ContainerID, "err", err)
			}
		}
		if s, ok := b.(run.RunnerSweeper); ok {
			// What the runner kept besides its containers (Docker's network sandboxes) and no
			// longer holds; it makes new ones for its next runs.
			if err := s.SweepRunner(ctx, e.RunnerID); err != nil {
				r.Log.Info("removing the lost runner's network sandboxes failed", "runner", e.RunnerID, "err", err)
			}
		}
	}
}

// Reconcile runs at start, before the runner claims anything: runs still held by this runner's
// ID belong to an earlier life of this process and end ERROR (the post-run steps run for each),
// and this runner's containers whose run is over or gone are removed. Other runners'
// containers are never touched.
func Reconcile(ctx context.Context, st store.Store, b run.Backend, runnerID string, clock domain.Clock, steps []Step, log *slog.Logger) error {
	// Every active run: leases last seconds, so a day ahead covers all of them.
	active, err := st.Executions().Expired(ctx, clock().Add(24*time.Hour))
	if err != nil {
		return err
	}
	for _, e := range active {
		if e.RunnerID != runnerID {
			continue
		}
		// The container goes first, so a run seen settled has none left.
		if e.ContainerID != "" {
			if err := b.Remove(ctx, e.ContainerID); err != nil {
				log.Warn("removing an orphaned container failed", "container", e.ContainerID, "err", err)
			}
		}
		f := store.Finish{Status: domain.ExecError, Error: "the server restarted while the run was in progress", FinishedAt: clock()}
		if e.Status == domain.ExecAnalyzing {
			// The run had its verdict and outcome recorded; only its explanation is lost.
			f = store.Finish{Status: settledVerdict(&e), Error: e.Error, ExitCode: e.ExitCode, FinishedAt: clock(),
				Summary: e.Summary, Tests: e.Tests, ReportDirs: e.ReportDirs, ReportBytes: e.ReportBytes, Notes: e.Notes,
				ReportIndexes: e.ReportIndexes, QuarantinedFailures: e.QuarantinedFailures,
				Analysis: interruptedAnalysis("the server restarted", clock())}
		}
		if err := st.Executions().Finish(ctx, e.ID, runnerID, f); err == nil {
			if done, err := st.Executions().GetByID(ctx, e.ID); err == nil {
				afterRun(ctx, steps, st, clock, done, log)
			}
		}
	}
	return SweepContainers(ctx, st, b, runnerID, log)
}

// SweepContainersEvery runs SweepContainers every interval until ctx ends.
func SweepContainersEvery(ctx context.Context, st store.Store, b run.Backend, runnerID string, log *slog.Logger, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := SweepContainers(ctx, st, b, runnerID, log); err != nil && ctx.Err() == nil {
			log.Warn("sweeping finished runs' containers failed", "err", err)
		}
	}
}

// SweepContainers removes this runner's containers whose run is over or gone: the runner
// removes each container as its run ends, so one is left only when that removal failed (an
// engine that did not answer in time). Other runners' containers are never touched.
func SweepContainers(ctx context.Context, st store.Store, b run.Backend, runnerID string, log *slog.Logger) error {
	containers, err := b.List(ctx, map[string]string{run.LabelManaged: "true", run.LabelRunner: runnerID})
	if err != nil {
		return err
	}
	for _, c := range containers {
		org, task := c.Labels[run.LabelOrg], c.Labels[run.LabelTask]
		e, err := st.Executions().Get(ctx, org, task)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if e == nil || e.Status.Final() {
			log.Info("removing an orphaned run container", "container", c.ID, "org", org, "task", task)
			if err := b.Remove(ctx, c.ID); err != nil {
				log.Warn("removing an orphaned container failed", "container", c.ID, "err", err)
			}
		}
	}
	return nil
}
