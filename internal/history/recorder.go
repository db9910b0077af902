package history

import (
	"context"
	"time"

	"verdict/internal/ai/analyzer"
	"verdict/internal/domain"
	"verdict/internal/store"
)

// Outcomes are the results of a finished run as its tests' histories keep them: each with its
// failure's signature (the analyser's) and message (already masked when the run's results were
// stored; bounded here).
func Outcomes(run *domain.Execution) []domain.TestOutcome {
	out := make([]domain.TestOutcome, len(run.Tests))
	for _, id := range domain.TestIdentities(run.Tests) {
		t := run.Tests[id.Index]
		o := domain.TestOutcome{Suite: id.Suite, Name: id.Name, Status: t.Status, DurationMs: max(t.DurationMs, 0),
			Retries: max(t.Retries, 0)}
		if t.Status == domain.TestFailed && t.Error != "" {
			o.Signature = analyzer.Signature(analyzer.SplitError(t.Error))
			o.Message = domain.OutcomeMessage(t.Error)
		}
		out[id.Index] = o
	}
	return out
}

// Record records a finished run's results in its tests' histories and judges it with its
// project's gate, then applies the project's automatic quarantine rule (for later runs). Recording a run again
// does nothing. It is the post-run chain's, and the catch-up's, for runs it missed.
//
// The results and the gate are written in one transaction: once a run is marked recorded its
// outcome no longer changes, which the run list's caches rely on.
func (s *Service) Record(ctx context.Context, run *domain.Execution) error {
	if run == nil || !run.Status.Final() || run.TestsRecorded {
		return nil
	}
	err := s.store.InTx(ctx, func(tx store.Store) error {
		if err := tx.Tests().Record(ctx, store.RunResults{Run: run, Outcomes: Outcomes(run)}); err != nil {
			return err
		}
		if run.ProjectID == "" {
			return nil
		}
		return s.judge(ctx, tx, run)
	})
	if err != nil || run.ProjectID == "" {
		return err
	}
	if err := s.autoQuarantine(ctx, run); err != nil {
		s.log.Warn("applying the project's automatic quarantine failed", "task", run.TaskID, "err", err)
	}
	return nil
}

// catchUpBatch is how many runs one catch-up read takes.
const catchUpBatch = 50

// CatchUp records finished runs not recorded yet (runs from before histories were kept, a run
// whose recording a crash or an outage interrupted), oldest first, until none is left or ctx
// ends. It returns how many it recorded. A restart resumes where it stopped: what is recorded
// is marked in the same transaction.
func (s *Service) CatchUp(ctx context.Context) (int, error) {
	n := 0
	for ctx.Err() == nil {
		runs, err := s.store.Tests().Unrecorded(ctx, catchUpBatch)
		if err != nil || len(runs) == 0 {
			return n, err
		}
		for i := range runs {
			if err := s.Record(ctx, &runs[i]); err != nil {
				return n, err
			}
			n++
		}
	}
	return n, ctx.Err()
}

// Run catches up every interval (and at once) until ctx ends; errors are logged.
func (s *Service) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if n, err := s.CatchUp(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("recording tests' histories failed; retrying later", "err", err, "recorded", n)
		} else if n > 0 {
			s.log.Info("recorded tests' histories of finished runs", "runs", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Quarantined returns the tests of run's scope under a quarantine in force now: what decides
// a finishing run's status (ApplyQuarantine).
func (s *Service) Quarantined(ctx context.Context, run *domain.Execution) ([]domain.TrackedTest, error) {
	return s.store.Tests().Quarantined(ctx, run.OrganizationID, domain.TestScope(run.ProjectID, run.Image), s.clock())
}
