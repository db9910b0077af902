// Package retention keeps each organization's run history within its retention: the
// background job that deletes the logs and report files of finished runs older than the
// organization's logs days, and the runs themselves (with their test results) older than its
// runs days. Pinned runs are exempt until unpinned.
//
// Every replica may run the job at once. Each step is a conditional write of the store
// (store.ExecutionRepo.ExpireFiles, DeleteExpired) that takes a run once: a run's files are
// marked expired, and their bytes taken off the organization's storage, in one transaction
// that no other caller repeats. The files themselves are deleted after that write, so a run
// pinned at the same moment never loses them; should the process stop in between, the report
// files left are deleted with the run at the end of its runs days (a run's log chunks go with
// its row).
package retention

import (
	"context"
	"log/slog"
	"time"

	"verdict/internal/domain"
	"verdict/internal/report"
	"verdict/internal/store"
)

// Job is the retention job. Like the lease reaper, it is a worker configured once by its
// fields, where a zero value takes the default in brackets.
type Job struct {
	Store   store.Store
	Reports report.Store
	// Max are the server's maxima (config.Retention); 0: none.
	Max      domain.Retention
	Interval time.Duration // between passes [10m]
	// Batch is the most runs one step writes [100]: a short transaction, so that on SQLite the
	// one writer is held for milliseconds, and readers are never held. After each step the job
	// rests as long as the step took: working through a backlog, it takes at most half of a
	// core from the requests the server answers meanwhile.
	Batch int
	Clock domain.Clock // [domain.SystemClock]
	Log   *slog.Logger // [slog.Default()]
}

// Result is what a pass did.
type Result struct {
	Expired int   // runs whose files it deleted
	Freed   int64 // report bytes taken off the organizations' storage
	Deleted int   // runs it deleted
}

func (j *Job) defaults() {
	if j.Interval <= 0 {
		j.Interval = 10 * time.Minute
	}
	if j.Batch <= 0 {
		j.Batch = 100
	}
	if j.Clock == nil {
		j.Clock = domain.SystemClock
	}
	if j.Log == nil {
		j.Log = slog.Default()
	}
}

// Run makes a pass at once (a server that restarts more often than the interval still keeps
// its history within bounds), then one every Interval, until ctx ends.
func (j *Job) Run(ctx context.Context) {
	j.defaults()
	t := time.NewTicker(j.Interval)
	defer t.Stop()
	for {
		res, err := j.Pass(ctx)
		if err != nil && ctx.Err() == nil {
			j.Log.Warn("retention: the pass stopped early; the next one goes on", "err", err)
		}
		if res.Expired > 0 || res.Deleted > 0 {
			j.Log.Info("retention: pass done", "filesExpired", res.Expired, "bytesFreed", res.Freed, "runsDeleted", res.Deleted)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// logChunksPerStatement bounds the log chunks one statement deletes (a chunk is a runner's
// batch of lines, at most about 48 KiB): a write of at most about 10 MiB, whatever the runs'
// logs hold.
const logChunksPerStatement = 200

// orgPage is how many organizations a pass reads at a time.
const orgPage = 100

// Pass applies every organization's retention once. An organization whose step fails is left
// for the next pass; the others go on. It returns the first error met.
func (j *Job) Pass(ctx context.Context) (Result, error) {
	j.defaults()
	var total Result
	var first error
	for after := ""; ; {
		orgs, err := j.Store.Organizations().ListAfter(ctx, after, orgPage)
		if err != nil {
			return total, err
		}
		for i := range orgs {
			if err := ctx.Err(); err != nil {
				return total, err
			}
			res, err := j.Organization(ctx, &orgs[i])
			total.Expired, total.Freed, total.Deleted = total.Expired+res.Expired, total.Freed+res.Freed, total.Deleted+res.Deleted
			if err != nil {
				j.Log.Warn("retention: an organization's step failed", "org", orgs[i].ID, "err", err)
				if first == nil {
					first = err
				}
			}
		}
		if len(orgs) < orgPage {
			return total, first
		}
		after = orgs[len(orgs)-1].ID
	}
}

// Organization applies org's retention at the job's clock: first the files of runs past its
// logs days, then the runs past its runs days (whose files expired by then: runs are kept at
// least as long as their files).
func (j *Job) Organization(ctx context.Context, org *domain.Organization) (Result, error) {
	j.defaults()
	var res Result
	now := j.Clock()
	logsBefore, runsBefore := domain.RetentionCutoffs(domain.EffectiveRetention(org.Plan, org.Retention, j.Max), now)
	note := domain.FilesExpiredNote(now)
	for {
		start := time.Now()
		batch, err := j.Store.Executions().ExpireFiles(ctx, org.ID, logsBefore, now, note, j.Batch)
		if err != nil {
			return res, err
		}
		ids := make([]string, len(batch))
		for i, r := range batch {
			ids[i] = r.ID
			res.Expired++
			res.Freed += r.ReportBytes
		}
		// The batch's log chunks, a bounded number a statement; those left (the process
		// stopped) go with the runs' rows.
		for {
			n, err := j.Store.Logs().DeleteChunks(ctx, ids, logChunksPerStatement)
			if err != nil {
				return res, err
			}
			if n < logChunksPerStatement {
				break
			}
		}
		for _, r := range batch {
			j.deleteReports(ctx, org.ID, r.TaskID)
		}
		if len(batch) < j.Batch {
			break
		}
		if err := rest(ctx, time.Since(start)); err != nil {
			return res, err
		}
	}
	for {
		start := time.Now()
		batch, err := j.Store.Executions().ListExpired(ctx, org.ID, runsBefore, j.Batch)
		if err != nil || len(batch) == 0 {
			return res, err
		}
		ids := make([]string, len(batch))
		for i, r := range batch {
			ids[i] = r.ID
			// Normally nothing is left: only what an interrupted expiry did not delete.
			j.deleteReports(ctx, org.ID, r.TaskID)
		}
		n, err := j.Store.Executions().DeleteExpired(ctx, org.ID, ids, runsBefore)
		res.Deleted += n
		if err != nil || n == 0 || len(batch) < j.Batch {
			return res, err
		}
		if err := rest(ctx, time.Since(start)); err != nil {
			return res, err
		}
	}
}

// rest waits d (the time the step before took), or until ctx ends.
func rest(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// deleteReports deletes a run's report files. A failure (the bucket away) is logged: the run is
// marked already, and its files are tried again when the run itself is deleted.
func (j *Job) deleteReports(ctx context.Context, orgID, taskID string) {
	if _, err := j.Reports.Delete(ctx, orgID, taskID); err != nil {
		j.Log.Warn("retention: deleting a run's report files failed; they are tried again when the run is deleted",
			"org", orgID, "task", taskID, "err", err)
	}
}
