package control

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"verdict/internal/billing"
	"verdict/internal/domain"
	"verdict/internal/run"
	"verdict/internal/store"
)

// A sharded run (domain.Sharding) is carried out by the records of its containers, which the
// runners claim, run and settle like any run, each in a run slot of its organization. When
// the last of them has ended, its run is settled once, from their merged outcome
// (domain.MergeShards), through the same post-run chain as a run of one container: one
// analysis, one final write, one record in the tests' histories (and one gate), one
// announcement. Failed tests get a retry container first, while the run has retries and time
// left.

// mergeLease bounds the settling of a sharded run (its analysis included): a process that dies
// meanwhile leaves it to the reaper.
const mergeLease = 5 * time.Minute

// minRetryTime is the least time a retry container is started with.
const minRetryTime = 30 * time.Second

// shardWork is the container's part of its sharded run, as the runner needs it: the run's
// taskId, the container's place and lists.
func (p *peer) shardWork(ctx context.Context, e *domain.Execution, log *slog.Logger) *run.ShardWork {
	taskID, _, _ := domain.ParseShardTaskID(e.TaskID)
	w := &run.ShardWork{RunTaskID: taskID, Index: e.ShardIndex, Total: e.Shards, Retry: e.Retry > 0, Tests: e.Assigned}
	if e.Assigned != nil && e.Retry == 0 {
		parent, err := p.Store.Executions().GetByID(ctx, e.ParentID)
		if err != nil {
			log.Warn("reading the sharded run failed; the shard gets its own list only", "err", err)
		} else {
			w.AllTests = parent.Assigned
		}
	}
	return w
}

// announceRun announces the sharded run of shard e as it stands (its shards' states in it).
func (p *Plane) announceRun(ctx context.Context, e *domain.Execution) {
	if parent, err := p.Store.Executions().GetByID(ctx, e.ParentID); err == nil {
		p.Events.ExecutionUpdated(parent)
	}
}

// settleShard ends a shard with its own outcome (no analysis, history or post-run step: those
// are its run's), counts its reports' storage, and then settles its run if it was the last.
func (p *peer) settleShard(ctx context.Context, e *domain.Execution, f store.Finish, log *slog.Logger) error {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := p.Store.Executions().Finish(wctx, e.ID, p.runnerID, f); err != nil {
		return err
	}
	if done, err := p.Store.Executions().GetByID(wctx, e.ID); err == nil {
		p.Events.ExecutionUpdated(done) // ends the streams that follow the shard's log
	}
	if f.ReportBytes > 0 {
		if err := p.countStorage(wctx, e.OrganizationID, billing.Usage{Used: f.ReportBytes}); err != nil {
			log.Error("counting report storage failed", "err", err)
		}
	}
	p.Plane.ShardEnded(ctx, e.ParentID)
	return nil
}

// ShardEnded is told that a shard of the sharded run parentID has ended (settled by its runner,
// or by the lease reaper): once all its containers have ended, it starts a retry container of
// the failed tests when the run has retries and time left, or settles the run from their
// merged outcome. Of the shards that end at the same moment, one settles the run
// (ExecutionRepo.ClaimMerge); a retry container is made once (its taskId is unique).
func (p *Plane) ShardEnded(ctx context.Context, parentID string) {
	ctx = context.WithoutCancel(ctx)
	if p.Log == nil {
		p.Log = slog.Default()
	}
	log := p.Log.With("run", parentID)
	parts, err := p.Store.Executions().Shards(ctx, parentID)
	if err != nil {
		log.Warn("reading the run's shards failed", "err", err)
		return
	}
	parent, err := p.Store.Executions().GetByID(ctx, parentID)
	if err != nil {
		log.Warn("reading the sharded run failed", "err", err)
		return
	}
	log = log.With("org", parent.OrganizationID, "task", parent.TaskID)
	for _, s := range parts {
		if !s.Status.Final() {
			p.Events.ExecutionUpdated(parent) // a shard's state changed
			return
		}
	}
	if parent.Status.Final() {
		return
	}
	now := p.Clock()
	merged := domain.MergeShards(parent.Shards, parts)
	if p.retry(ctx, parent, parts, merged, now, log) {
		return
	}
	holder := "merge:" + parentID
	if ok, err := p.Store.Executions().ClaimMerge(ctx, parentID, holder, now.Add(mergeLease)); err != nil || !ok {
		if err != nil {
			log.Warn("claiming the sharded run's settling failed; the reaper ends it", "err", err)
		}
		return
	}
	f := store.Finish{Status: merged.Status, Error: merged.Error, ExitCode: merged.ExitCode, FinishedAt: now,
		Summary: merged.Summary, Tests: merged.Tests, Notes: parent.Notes}
	for _, s := range parts {
		f.Notes = append(f.Notes, s.Notes...)
	}
	m := p.InstancePeer(holder, "").(*peer)
	if err := m.settle(ctx, parent, f, log); err != nil {
		log.Warn("settling the sharded run failed; the reaper ends it", "err", err)
		return
	}
	log.Info("sharded run finished", "status", f.Status, "shards", parent.Shards, "error", f.Error)
}

// retry queues the next retry container of the run's failed tests, when it failed by failed
// tests only, has retries left, was not cancelled and has time left for one (its timeout
// counts from its start). It reports whether it did.
func (p *Plane) retry(ctx context.Context, parent *domain.Execution, parts []domain.Execution, merged domain.Merged,
	now time.Time, log *slog.Logger) bool {
	if merged.Status != domain.ExecFailed || merged.Summary.Failed == 0 || parent.CancelRequested {
		return false
	}
	rounds, shards := 0, 0
	for _, s := range parts {
		if s.Retry > 0 {
			rounds++
		} else {
			shards++
		}
	}
	if rounds >= parent.Retries {
		return false
	}
	start := parent.QueuedAt
	if parent.StartedAt != nil {
		start = *parent.StartedAt
	}
	left := time.Duration(parent.TimeoutSeconds)*time.Second - now.Sub(start)
	if left < minRetryTime {
		log.Info("no retry of the failed tests: the run's timeout leaves too little time", "left", left)
		return false
	}
	// A shard whose failures the merge cannot tie to tests (its exit code alone) is not retried.
	for _, s := range parts {
		if s.Retry == 0 && s.ExitCode != nil && *s.ExitCode != 0 && s.Summary.Failed == 0 {
			return false
		}
	}
	r := domain.ShardRecord(parent, shards+rounds+1, rounds+1)
	r.Assigned = domain.FailedTests(merged.Tests)
	r.TimeoutSeconds = int(left / time.Second)
	r.QueuedAt = now
	err := p.Store.Executions().Create(ctx, r)
	if errors.Is(err, store.ErrConflict) {
		return true // another shard's end queued it
	}
	if err != nil {
		log.Warn("queueing the retry of the failed tests failed; the run ends with its failures", "err", err)
		return false
	}
	log.Info("retrying the failed tests", "round", r.Retry, "tests", len(r.Assigned))
	p.Events.ExecutionUpdated(parent)
	return true
}

// requeueShard is the reaper's end of a shard whose lease expired: started again once on another
// runner (true), or, lost a second time, ended ERROR (false: the reaper ends it as any run,
// with domain.ShardLost).
func (r *Reaper) requeueShard(ctx context.Context, e *domain.Execution, now time.Time) bool {
	if !e.IsShard() || e.Attempt > 0 || e.Status != domain.ExecRunning || e.CancelRequested {
		return false
	}
	ok, err := r.Store.Executions().RequeueLost(ctx, e.ID, now, "started again: the runner of its first start was lost")
	if err != nil || !ok {
		return false
	}
	r.Log.Warn("shard started again: its runner was lost", "org", e.OrganizationID, "task", e.TaskID, "runner", e.RunnerID)
	r.removeLost(ctx, e)
	return true
}
