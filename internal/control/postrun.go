package control

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"verdict/internal/billing"
	"verdict/internal/domain"
	"verdict/internal/store"
)

// Analyst explains failed runs; the post-run chain calls it.
type Analyst interface {
	// Analyse explains run, whose outcome (status, exit code, tests, reports) is filled in. It
	// bounds its own time within ctx and always returns an analysis: one it could not make says
	// why in its Error.
	Analyse(ctx context.Context, run *domain.Execution) *domain.Analysis
}

// Histories are tests' histories as the post-run chain uses them (history.Service).
type Histories interface {
	// Quarantined returns the tests of the run's project (or image) under a quarantine in
	// force now.
	Quarantined(ctx context.Context, run *domain.Execution) ([]domain.TrackedTest, error)
	// Record records the finished run's results in its tests' histories and judges it with
	// its project's quality gate; once per run however often it is called.
	Record(ctx context.Context, run *domain.Execution) error
}

// historyTimeout bounds each call to Histories: the run is announced after it, so an outage of
// the database must not hold the announcement long (a run not recorded then is recorded, and
// judged, by the histories' catch-up).
const historyTimeout = 5 * time.Second

// analysisTimeout bounds the analysis step: the model's 60 s and the built-in fallback.
const analysisTimeout = 90 * time.Second

// settle is the post-run chain (run.Peer.Done): every effect of a run once its container is
// done with and its reports are in, in this order, each bounded in time:
//
//  0. quarantine: a run whose only failures are of quarantined tests is judged by its other
//     tests (domain.ApplyQuarantine), and keeps the list of its quarantined failures.
//  1. analyse: a FAILED or UNSTABLE run of an organization with failure analysis on is
//     recorded ANALYZING (shown live, its verdict kept) and explained by the Analyst, within
//     ctx. The run holds no slot and no collector meanwhile, only its lease (the runner renews
//     it until Done returns).
//  2. finish: the final status, in the one write that ends the run, if its runner still holds
//     it (the reaper may have ended it).
//  3. account: the reports' bytes go to the organization's storage, with its alerts (counted
//     here, not by a Step: they are this Done's reports, counted even when the reaper's
//     write, which records none, ended the run).
//  4. record: the run's results go to its tests' histories (Histories.Record), and its
//     project's gate judges it; the run holds no slot meanwhile. A run missed here (the
//     process ended, the database was away) is recorded by the histories' catch-up.
//  5. the post-run steps (Plane.Steps, see Step), with the run as stored: announce
//     (execution-updated to the organization's room) first, then each registered effect,
//     whose outside deliveries go through the outbox.
//
// A new after-run effect (a notification, a webhook) is a Step, not a line here: it sees the
// run as stored, and never changes a verdict. settle returns finish's error.
//
// It may run again for the same run when finish failed (the runner retries Done while the
// database does not answer): f.Analysis set is the analysis an earlier try made, which is not
// made again, and the storage is counted only by the try whose final write ended the run (or
// that found it ended by the reaper, whose write counts none).
func (p *peer) settle(ctx context.Context, e *domain.Execution, f store.Finish, log *slog.Logger) error {
	if e.IsShard() {
		return p.settleShard(ctx, e, f, log) // its run is settled once, by its last shard (shards.go)
	}
	if p.Histories != nil && f.Summary.Failed > 0 {
		qctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), historyTimeout)
		quarantined, err := p.Histories.Quarantined(qctx, e)
		cancel()
		if err != nil {
			// The run's failures count: a run never passes because its quarantines could not be read.
			log.Warn("reading the quarantined tests failed; the run's failures all count", "err", err)
		}
		f.QuarantinedFailures, f.Status = domain.ApplyQuarantine(f.Status, f.Error, f.Summary, f.Tests, quarantined)
	}
	if f.Analysis == nil && p.wantsAnalysis(ctx, e, f, log) {
		f.Analysis = p.analyse(ctx, e, f, log)
	}
	// The final write must happen even when the run's context was cancelled, and however long
	// the analysis took.
	wctx, wcancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer wcancel()
	err := p.Store.Executions().Finish(wctx, e.ID, p.runnerID, f)
	if err == nil && p.Metrics != nil {
		p.Metrics.RunFinished(withOutcome(e, f))
	}
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		if f.Analysis != nil {
			p.mu.Lock()
			p.analysed[e.ID] = f.Analysis
			p.mu.Unlock()
		}
		return err
	}
	if f.ReportBytes > 0 {
		if err := p.countStorage(wctx, e.OrganizationID, billing.Usage{Used: f.ReportBytes}); err != nil {
			log.Error("counting report storage failed", "err", err)
		}
	}
	if done, err := p.Store.Executions().GetByID(wctx, e.ID); err == nil {
		if p.Histories != nil {
			hctx, cancel := context.WithTimeout(wctx, historyTimeout)
			if err := p.Histories.Record(hctx, done); err != nil {
				log.Warn("recording the run's tests failed; the catch-up will", "err", err)
			} else if again, err := p.Store.Executions().GetByID(hctx, e.ID); err == nil {
				done = again // with its gate
			}
			cancel()
		}
		afterRun(wctx, p.Steps, p.Store, p.Clock, done, log)
	}
	return err
}

// wantsAnalysis tells whether the run is one to explain: failed or unstable, in an
// organization with failure analysis on, with an Analyst to ask.
func (p *peer) wantsAnalysis(ctx context.Context, e *domain.Execution, f store.Finish, log *slog.Logger) bool {
	if p.Analyst == nil || (f.Status != domain.ExecFailed && f.Status != domain.ExecUnstable) {
		return false
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	org, err := p.Store.Organizations().Get(rctx, e.OrganizationID)
	if err != nil {
		log.Warn("reading the organization's analysis setting failed; the run is not analysed", "err", err)
		return false
	}
	return org.AIAnalysisEnabled
}

// analyse records the run ANALYZING with its outcome so far, announces it, and asks the
// Analyst. A run this runner no longer holds is not analysed.
func (p *peer) analyse(ctx context.Context, e *domain.Execution, f store.Finish, log *slog.Logger) *domain.Analysis {
	pending := f
	pending.Status = domain.ExecAnalyzing
	wctx, wcancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer wcancel()
	if err := p.Store.Executions().Finish(wctx, e.ID, p.runnerID, pending); err != nil {
		log.Warn("recording the analysis step failed", "err", err)
		return nil
	}
	if now, err := p.Store.Executions().GetByID(wctx, e.ID); err == nil {
		p.Events.ExecutionUpdated(now)
	}
	actx, cancel := context.WithTimeout(ctx, analysisTimeout)
	defer cancel()
	return p.Analyst.Analyse(actx, withOutcome(e, f))
}

// withOutcome is a copy of the run with its outcome f filled in, as the store will hold it.
func withOutcome(e *domain.Execution, f store.Finish) *domain.Execution {
	run := *e
	run.Status, run.Error, run.ExitCode = f.Status, f.Error, f.ExitCode
	run.Summary, run.Tests, run.Notes, run.QuarantinedFailures = f.Summary, f.Tests, f.Notes, f.QuarantinedFailures
	run.ReportDirs, run.ReportBytes, run.ReportIndexes = f.ReportDirs, f.ReportBytes, f.ReportIndexes
	if !f.FinishedAt.IsZero() {
		at := f.FinishedAt
		run.FinishedAt = &at
	}
	return &run
}

// interruptedAnalysis is the analysis of a run whose analysis step never ended: its verdict
// stands, and it says why it has no explanation.
func interruptedAnalysis(reason string, now time.Time) *domain.Analysis {
	msg := "the analysis was interrupted: " + reason
	return &domain.Analysis{Status: domain.AnalysisFailed, Provider: "builtin", Model: "builtin",
		Category: "unknown", Failures: []domain.FailureRef{}, Evidence: []string{}, Error: &msg, CreatedAt: now}
}

// settledVerdict is the final status of a run stuck in ANALYZING, from what it recorded (its
// quarantined failures included).
func settledVerdict(e *domain.Execution) domain.ExecStatus {
	exit := 1
	if e.ExitCode != nil {
		exit = *e.ExitCode
	}
	status := domain.Verdict(exit, e.Summary)
	if n := len(e.QuarantinedFailures); n > 0 && n == e.Summary.Failed && e.Error == "" {
		rest := e.Summary
		rest.Failed = 0
		status = domain.Verdict(0, rest)
	}
	return status
}
