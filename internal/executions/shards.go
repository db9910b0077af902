package executions

import (
	"context"
	"fmt"
	"time"

	"verdict/internal/domain"
	"verdict/internal/store"
)

// maxShardsAny bounds shards whatever the plan: the server's own cap per plan (MaxShards) is
// applied when the run is queued.
const maxShardsAny = 256

// checkShards checks a requested number of shards: at least 1, at most limit (0: the bound of
// any plan).
func checkShards(n, limit int) error {
	if limit <= 0 {
		limit = maxShardsAny
	}
	if n < 1 || n > limit {
		return domain.BadRequest("Validation error", fmt.Sprintf("shards must be between 1 and %d", limit))
	}
	return nil
}

// checkRetries checks a requested number of retries of the failed tests.
func checkRetries(n int) error {
	if n < 0 || n > domain.MaxRetries {
		return domain.BadRequest("Validation error", fmt.Sprintf("retries must be between 0 and %d", domain.MaxRetries))
	}
	return nil
}

// shardDraft sets e's shards and retries: the request's, else the project's (set by
// applyProject). A run of one container without retries is an ordinary run (Shards 0).
func (s *Service) shardDraft(e *domain.Execution, in QueueInput) {
	if in.Shards > 0 {
		e.Shards = in.Shards
	}
	if in.Retries != nil {
		e.Retries = *in.Retries
	}
	if e.Shards < 1 {
		e.Shards = 1
	}
	if e.Shards == 1 && e.Retries == 0 {
		e.Shards = 0
	}
}

// planShards caps a sharded run's shards by its organization's plan (requested: the request's
// own number, refused past the cap; a project's is brought within it) and balances its tests
// over them by the durations of its scope's newest finished run (domain.Balance): e.Assigned
// lists them all, and each shard's part is returned. Without such a run (no history) nothing
// is assigned, and each shard splits by SHARD_INDEX/SHARD_TOTAL itself.
func (s *Service) planShards(ctx context.Context, e *domain.Execution, requested int) ([][]string, error) {
	if !e.Sharded() {
		return nil, nil
	}
	org, err := s.store.Organizations().Get(ctx, e.OrganizationID)
	if err != nil {
		return nil, err
	}
	limit := max(s.maxShards[org.Plan], 1)
	if requested > limit {
		return nil, domain.BadRequest("Validation error", fmt.Sprintf("shards must be at most %d on the %s plan", limit, org.Plan))
	}
	e.Shards = min(e.Shards, limit)
	if slots := org.Limits().MaxConcurrentRuns; slots != domain.Unlimited && slots < e.Shards {
		e.Notes = append(e.Notes, fmt.Sprintf("its %d shards take %d run slot(s) of the %s plan at a time, so they run in turn",
			e.Shards, slots, org.Plan))
	}
	base, err := s.store.Executions().Baseline(ctx, e.OrganizationID, store.BaselineQuery{ProjectID: e.ProjectID,
		Image: e.Image, Before: e.QueuedAt.Add(time.Millisecond),
		Statuses: []domain.ExecStatus{domain.ExecPassed, domain.ExecFailed, domain.ExecUnstable}})
	if err != nil || base == nil || len(base.Tests) == 0 {
		return nil, err
	}
	units := domain.BalanceUnits(base.Tests)
	e.Assigned = make([]string, 0, len(units))
	for _, u := range units {
		e.Assigned = append(e.Assigned, u.Name)
	}
	return domain.Balance(units, e.Shards), nil
}

// createShards stores a record per shard of the sharded run e, each with its part of the run's
// assigned tests, in tx after the run itself.
func (s *Service) createShards(ctx context.Context, tx store.Store, e *domain.Execution, parts [][]string) error {
	if !e.Sharded() {
		return nil
	}
	for i := 1; i <= e.Shards; i++ {
		c := shardOf(e, i, 0)
		if parts != nil {
			c.Assigned = parts[i-1]
			if c.Assigned == nil {
				c.Assigned = []string{}
			}
		}
		if err := tx.Executions().Create(ctx, c); err != nil {
			return err
		}
	}
	if len(e.Notes) > 0 {
		e.QueueReason += "; " + e.Notes[0]
		return tx.Executions().SetQueueReason(ctx, e.ID, e.QueueReason)
	}
	return nil
}

// shardOf is the record of shard index of the sharded run e, queued with it.
func shardOf(e *domain.Execution, index, retry int) *domain.Execution {
	return domain.ShardRecord(e, index, retry)
}
