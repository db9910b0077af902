// Package control is the control plane as runners meet it: run.Peer implemented in process over
// the store (the run queue, leases, logs, final writes), billing (report storage and its
// alerts), the secret box (a claimed run's variables, unsealed for that run alone) and the
// report store. It also settles the runs whose runner was lost (Reaper, Reconcile). Package run
// knows none of these: a runner reaches them through run.Peer only.
package control

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"sync"
	"time"

	"verdict/internal/billing"
	"verdict/internal/crypto/secretbox"
	"verdict/internal/domain"
	"verdict/internal/report"
	"verdict/internal/run"
	"verdict/internal/store"
)

// Events is where the run plane announces what happens; the realtime hub implements it.
type Events interface {
	ExecutionUpdated(e *domain.Execution)
	// ExecutionLog announces chunk (whole lines), which starts offset bytes into the run's log.
	ExecutionLog(orgID, taskID, chunk string, offset int64)
}

// RunMetrics records runs as they start and reach their final status (metrics.Metrics).
type RunMetrics interface {
	RunStarted(e *domain.Execution)
	RunFinished(e *domain.Execution)
}

// Plane serves runners in process. Peer gives each runner its run.Peer.
type Plane struct {
	Store     store.Store
	Reports   report.Store
	ReportDir func(orgID, taskID string) string // local folder of a run's reports, for parsing
	Box       *secretbox.Box                    // seals runs' variables
	Events    Events
	Clock     domain.Clock
	Log       *slog.Logger
	Alerts    *billing.Alerts // storage alerts as reports are kept or refused; nil: none
	Analyst   Analyst         // explains failed runs (see settle); nil: none
	Metrics   RunMetrics      // records starts and ends; nil: none
	// Histories hold the quarantines that decide a finishing run's status, and record each
	// finished run's results (see settle); nil: none.
	Histories Histories
	// Steps are the post-run steps, in order, run once a run reached its final status (see
	// Step; Announce is the one that tells the organization's room); nil: none.
	Steps []Step

	// ReportFS presents a run's reports for parsing where they are not in a local folder
	// (report.S3Store.FS); used instead of ReportDir when set.
	ReportFS func(ctx context.Context, orgID, taskID string) (fs.FS, error)

	// Outages records the outages of the store the runners' calls meet, for the lease reaper
	// (shared with Reaper.Outages); nil: not recorded. A call that meets one fails with
	// run.ErrUnavailable, which a runner retries.
	Outages *Outages
}

// Peer is runnerID's door to the plane: the runs it claims are leased to runnerID, and its
// calls about a run count only while runnerID holds it.
func (p *Plane) Peer(runnerID string) run.Peer { return p.InstancePeer(runnerID, "") }

// InstancePeer is the door of one process of runnerID, instance (a remote runner's random ID
// of its start): the runs it claims record the instance too, and its calls about a run count
// only when that process claimed it. Another process under the same runner ID (the same name
// and secret) can report on none of them; a restarted runner is a new instance, and the runs
// of its earlier life are left to their leases.
func (p *Plane) InstancePeer(runnerID, instance string) run.RemotePeer {
	if p.Log == nil {
		p.Log = slog.Default()
	}
	return &peer{Plane: p, runnerID: runnerID, instance: instance, held: map[string]*domain.Execution{},
		analysed: map[string]*domain.Analysis{}}
}

type peer struct {
	*Plane
	runnerID string
	instance string
	mu       sync.Mutex
	held     map[string]*domain.Execution // runs claimed and not yet done, by ID
	// analysed keeps the analysis of a run whose final write failed, by ID, for the runner's
	// next Done: a retried Done does not ask the model again.
	analysed map[string]*domain.Analysis
}

func limitFor(p domain.Plan) int { return domain.LimitsFor(p).MaxConcurrentRuns }

// Next claims a run, announces it, and unseals its variables. A run whose variables cannot be
// unsealed is ended ERROR here, and the next one claimed.
func (p *peer) Next(ctx context.Context, lease time.Duration) (*run.Work, error) {
	return p.NextClaim(ctx, lease, "")
}

// Claimed is the run the runner's ask claim claimed already, while this process holds it (its
// answer was lost, maybe with the replica that gave it); nil, nil: none.
func (p *peer) Claimed(ctx context.Context, claim string) (*run.Work, error) {
	e, err := p.Store.Executions().Claimed(ctx, p.runnerID, p.instance, claim)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, p.unavailable(ctx, err)
	}
	return p.work(ctx, e)
}

// NextClaim is Next, the run claimed keeping claim for Claimed.
func (p *peer) NextClaim(ctx context.Context, lease time.Duration, claim string) (*run.Work, error) {
	for {
		now := p.Clock()
		e, err := p.Store.Executions().Claim(ctx, p.runnerID, p.instance, claim, now, now.Add(lease), limitFor)
		if err != nil || e == nil {
			return nil, p.unavailable(ctx, err)
		}
		if e.IsShard() {
			p.announceRun(ctx, e) // the run shows its shards' states
		} else {
			p.Events.ExecutionUpdated(e)
		}
		if p.Metrics != nil {
			p.Metrics.RunStarted(e) // a shard's container waits in the queue as a run does
		}
		if w, err := p.work(ctx, e); err == nil {
			return w, nil
		}
	}
}

// work is claimed run e as its runner needs it, held by this door. A run whose variables cannot
// be unsealed is ended ERROR, and its error returned.
func (p *peer) work(ctx context.Context, e *domain.Execution) (*run.Work, error) {
	env, err := OpenEnv(p.Box, e.EnvCipher)
	if err != nil {
		log := p.Plane.Log.With("org", e.OrganizationID, "task", e.TaskID)
		f := store.Finish{Status: domain.ExecError, Error: "the run's variables could not be decrypted", FinishedAt: p.Clock()}
		if err := p.settle(ctx, e, f, log); err != nil {
			log.Warn("settling the run failed (it may have been ended by the lease reaper)", "err", err)
		}
		log.Info("run finished", "status", f.Status, "error", f.Error)
		return nil, err
	}
	p.mu.Lock()
	p.held[e.ID] = e
	p.mu.Unlock()
	w := &run.Work{ID: e.ID, OrganizationID: e.OrganizationID, TaskID: e.TaskID, Image: e.Image,
		Command: e.Command, BaseURL: e.BaseURL, Folder: e.Folder, TimeoutSeconds: e.TimeoutSeconds,
		ReportFolders: e.ReportFolders, Env: env}
	if e.IsShard() {
		w.Shard = p.shardWork(ctx, e, p.Plane.Log.With("org", e.OrganizationID, "task", e.TaskID))
	}
	return w, nil
}

// run is the claimed run id as this runner holds it: as claimed, or as stored when this
// door did not claim it (another replica's did, or this one restarted): run.ErrLeaseLost when
// another runner, or another process of this runner, holds it, or it has ended (the reaper
// ended it, or an earlier Done of this runner whose answer was lost settled it). A run's runner
// and instance are set once, by its claim, so the check holds for the call that follows it.
func (p *peer) run(ctx context.Context, id string) (*domain.Execution, error) {
	p.mu.Lock()
	e := p.held[id]
	p.mu.Unlock()
	if e != nil {
		return e, nil
	}
	e, err := p.Store.Executions().GetByID(ctx, id)
	if errors.Is(err, store.ErrNotFound) ||
		(err == nil && (e.RunnerID != p.runnerID || e.RunnerInstance != p.instance || e.Status.Final())) {
		return nil, run.ErrLeaseLost
	}
	return e, p.unavailable(ctx, err)
}

// lostIfGone is err with the store's ErrNotFound, about a run this runner was holding, read as
// run.ErrLeaseLost (the run ended without it, or was deleted), and outages marked.
func (p *peer) lostIfGone(ctx context.Context, err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return run.ErrLeaseLost
	}
	return p.unavailable(ctx, err)
}

func (p *peer) Extend(ctx context.Context, id string, lease time.Duration) (bool, error) {
	if _, err := p.run(ctx, id); err != nil {
		return false, err // another process's run keeps its lease as it was
	}
	stop, err := p.Store.Executions().Heartbeat(ctx, id, p.runnerID, p.Clock().Add(lease))
	return stop, p.lostIfGone(ctx, err)
}

func (p *peer) Started(ctx context.Context, id, containerID string) error {
	if _, err := p.run(ctx, id); err != nil {
		return err
	}
	return p.lostIfGone(ctx, p.Store.Executions().SetContainer(ctx, id, containerID))
}

func (p *peer) Log(ctx context.Context, id string, seq int, offset int64, chunk string) error {
	e, err := p.run(ctx, id)
	if err != nil {
		return err
	}
	// The live event goes first: watchers should not wait for the database. Its offset lets a
	// watcher that joined late see what it missed, and skip what it has.
	p.Events.ExecutionLog(e.OrganizationID, e.TaskID, chunk, offset)
	err = p.Store.Logs().Append(ctx, id, seq, chunk)
	if errors.Is(err, store.ErrConflict) {
		// The chunk is stored already: the runner sent it again after losing the answer (over
		// HTTP, or when the database failed after the write).
		return nil
	}
	return p.lostIfGone(ctx, err)
}

func (p *peer) Upload(ctx context.Context, id string, archive io.Reader) (run.Reports, error) {
	e, err := p.run(ctx, id)
	if err != nil {
		return run.Reports{}, err
	}
	rep, err := p.keepReports(ctx, e, archive, p.Plane.Log.With("org", e.OrganizationID, "task", e.TaskID))
	return rep, p.unavailable(ctx, err)
}

// Done settles the run. It may be called again after it failed (the runner retries while the
// control plane is unavailable): the run is still this runner's until its final write, and an
// analysis made before a failed final write is kept for the next call. run.ErrLeaseLost: the
// run was ended without this runner (the reaper's final write won), and the runner stops.
func (p *peer) Done(ctx context.Context, id string, res run.Result) error {
	// A cancelled run is settled too: its context may have ended.
	e, err := p.run(context.WithoutCancel(ctx), id)
	if errors.Is(err, run.ErrLeaseLost) {
		p.forget(id)
	}
	if err != nil {
		return err
	}
	rep := res.Reports
	f := store.Finish{Status: res.Status, Error: res.Error, ExitCode: res.ExitCode, FinishedAt: res.FinishedAt,
		Summary: rep.Summary, Tests: rep.Tests, ReportDirs: rep.Dirs, ReportBytes: rep.Bytes, Notes: rep.Notes,
		ReportIndexes: rep.Indexes}
	p.mu.Lock()
	f.Analysis = p.analysed[id]
	p.mu.Unlock()
	err = p.settle(ctx, e, f, p.Plane.Log.With("org", e.OrganizationID, "task", e.TaskID))
	if errors.Is(err, store.ErrNotFound) {
		err = run.ErrLeaseLost
	}
	if err == nil || errors.Is(err, run.ErrLeaseLost) {
		p.forget(id)
		return err
	}
	return p.unavailable(ctx, err)
}

// forget drops what the door keeps of run id once it is settled or lost.
func (p *peer) forget(id string) {
	p.mu.Lock()
	delete(p.held, id)
	delete(p.analysed, id)
	p.mu.Unlock()
}

// countStorage adds u.Used report bytes to the organization's storage (none when reports were
// refused) and raises the storage alerts the new figure, or the refusal, calls for.
func (p *Plane) countStorage(ctx context.Context, orgID string, u billing.Usage) error {
	return p.Store.InTx(ctx, func(tx store.Store) error {
		if u.Used > 0 {
			if err := tx.Organizations().AddStorageUsed(ctx, orgID, u.Used); err != nil {
				return err
			}
		}
		org, err := tx.Organizations().Get(ctx, orgID)
		if err != nil {
			return err
		}
		u.Resource, u.Before = billing.ResourceStorage, org.StorageUsedBytes-u.Used
		u.Used, u.Limit = org.StorageUsedBytes, org.Limits().MaxStorageBytes
		return p.Alerts.Check(ctx, tx, org, u)
	})
}
