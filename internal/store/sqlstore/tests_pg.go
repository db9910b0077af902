package sqlstore

import (
	"context"

	"verdict/internal/domain"
)

// A recording on PostgreSQL passes each column of its rows as one array and turns them back
// into rows with unnest: a statement of a dozen parameters, which plans in microseconds
// whatever the run's size, where a VALUES list of thousands of rows binds and plans tens of
// thousands of parameters. Every statement is also bounded to the run's scope (organization
// and scope, the unique index's prefix), so that no plan can fall back to reading the whole
// tests table.

// pgTestsByKey reads the scope's tests named by outcomes, each by the unique index.
func (s *Store) pgTestsByKey(ctx context.Context, orgID, scope string, outcomes []domain.TestOutcome) (map[string]*domain.TrackedTest, error) {
	seen := make(map[string]bool, len(outcomes))
	suites := make([]string, 0, len(outcomes))
	names := make([]string, 0, len(outcomes))
	for _, o := range outcomes {
		if k := testKey(o.Suite, o.Name); !seen[k] {
			seen[k] = true
			suites, names = append(suites, o.Suite), append(names, o.Name)
		}
	}
	// Each name looked up by the unique index, whatever the planner thinks of the scope's size:
	// a scope inserted a moment ago has no statistics yet, and a plain join of it with the
	// names was planned as a loop over every pair (2,100 × 2,000 comparisons, 700 ms). The
	// LATERAL subquery's OFFSET 0 keeps the planner from flattening it into such a join.
	rows, err := list(ctx, s, scanTest, `SELECT t.* FROM unnest(CAST(? AS TEXT[]), CAST(? AS TEXT[])) AS k (suite, name)
		CROSS JOIN LATERAL (SELECT `+testColumns+` FROM tests WHERE organization_id = ? AND scope = ? AND suite = k.suite
			AND name = k.name OFFSET 0) t`, suites, names, orgID, scope)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*domain.TrackedTest, len(rows))
	for i := range rows {
		out[testKey(rows[i].Suite, rows[i].Name)] = &rows[i]
	}
	return out, nil
}

// aggregateArrays are tests' aggregates, a column an array.
type aggregateArrays struct {
	id, suite, name, recent, status, failedTask, passedTask []string
	runs, first, last, failedAt, passedAt                   []int64
	pass, flake                                             []float64
	flaky                                                   []bool
}

func newAggregateArrays(tests []*domain.TrackedTest) (*aggregateArrays, error) {
	a := &aggregateArrays{}
	for _, t := range tests {
		recent, err := encodePoints(t.Recent)
		if err != nil {
			return nil, err
		}
		rates := domain.Rates(t.Recent)
		a.id, a.suite, a.name = append(a.id, t.ID), append(a.suite, t.Suite), append(a.name, t.Name)
		a.recent, a.status = append(a.recent, recent), append(a.status, string(t.LastStatus()))
		a.runs = append(a.runs, int64(t.Runs))
		a.pass, a.flake, a.flaky = append(a.pass, rates.PassRate), append(a.flake, rates.FlakeRate), append(a.flaky, rates.Flaky)
		a.first, a.last = append(a.first, millis(t.FirstSeenAt)), append(a.last, millis(t.LastSeenAt))
		a.failedTask, a.failedAt = append(a.failedTask, t.LastFailedTaskID), append(a.failedAt, zeroMillis(t.LastFailedAt))
		a.passedTask, a.passedAt = append(a.passedTask, t.LastPassedTaskID), append(a.passedAt, zeroMillis(t.LastPassedAt))
	}
	return a, nil
}

// aggregatesUnnest is the unnest of aggregateArrays.args, named as the columns.
const aggregatesUnnest = `unnest(CAST(? AS TEXT[]), CAST(? AS TEXT[]), CAST(? AS TEXT[]), CAST(? AS INTEGER[]),
	CAST(? AS TEXT[]), CAST(? AS TEXT[]), CAST(? AS DOUBLE PRECISION[]), CAST(? AS DOUBLE PRECISION[]),
	CAST(? AS BOOLEAN[]), CAST(? AS BIGINT[]), CAST(? AS BIGINT[]), CAST(? AS TEXT[]), CAST(? AS BIGINT[]),
	CAST(? AS TEXT[]), CAST(? AS BIGINT[])) AS v (id, suite, name, ` + aggregates + `)`

func (a *aggregateArrays) args() []any {
	return []any{a.id, a.suite, a.name, a.runs, a.recent, a.status, a.pass, a.flake, a.flaky, a.first, a.last,
		a.failedTask, a.failedAt, a.passedTask, a.passedAt}
}

// pgInsertTests inserts the scope's new tests with their aggregates, in one statement.
func (s *Store) pgInsertTests(ctx context.Context, orgID, projectID, scope string, tests []*domain.TrackedTest) error {
	if len(tests) == 0 {
		return nil
	}
	a, err := newAggregateArrays(tests)
	if err != nil {
		return err
	}
	_, err = s.exec(ctx, `INSERT INTO tests (organization_id, project_id, scope, id, suite, name, `+aggregates+`)
		SELECT ?, ?, ?, v.* FROM `+aggregatesUnnest, append([]any{orgID, projectID, scope}, a.args()...)...)
	return err
}

// pgUpdateTests writes the aggregates of the scope's known tests, in one statement.
func (s *Store) pgUpdateTests(ctx context.Context, orgID, scope string, tests []*domain.TrackedTest) error {
	if len(tests) == 0 {
		return nil
	}
	a, err := newAggregateArrays(tests)
	if err != nil {
		return err
	}
	_, err = s.exec(ctx, `UPDATE tests SET runs = v.runs, recent = v.recent, last_status = v.last_status,
		pass_rate = v.pass_rate, flake_rate = v.flake_rate, flaky = v.flaky, first_seen_at = v.first_seen_at,
		last_seen_at = v.last_seen_at, last_failed_task_id = v.last_failed_task_id, last_failed_at = v.last_failed_at,
		last_passed_task_id = v.last_passed_task_id, last_passed_at = v.last_passed_at
		FROM `+aggregatesUnnest+` WHERE tests.id = v.id AND tests.organization_id = ? AND tests.scope = ?`,
		append(a.args(), orgID, scope)...)
	return err
}

// pgInsertResults inserts a run's outcomes, in one statement; what every result of the run
// shares is bound once.
func (s *Store) pgInsertResults(ctx context.Context, run *domain.Execution, outcomes []domain.TestOutcome) error {
	n := len(outcomes)
	testIDs, statuses, signatures, messages := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	durations, retries := make([]int64, n), make([]int64, n)
	for i, o := range outcomes {
		testIDs[i], statuses[i], signatures[i], messages[i] = o.TestID, string(o.Status), o.Signature, o.Message
		durations[i], retries[i] = o.DurationMs, int64(o.Retries)
	}
	o := outcomes[0]
	_, err := s.exec(ctx, `INSERT INTO test_results (execution_id, organization_id, task_id, branch, commit_sha, created_at,
		test_id, status, duration_ms, retries, signature, message)
		SELECT ?, ?, ?, ?, ?, CAST(? AS BIGINT), v.* FROM unnest(CAST(? AS TEXT[]), CAST(? AS TEXT[]), CAST(? AS BIGINT[]),
			CAST(? AS INTEGER[]), CAST(? AS TEXT[]), CAST(? AS TEXT[])) AS v`,
		o.ExecutionID, run.OrganizationID, o.TaskID, o.Branch, o.Commit, millis(o.CreatedAt),
		testIDs, statuses, durations, retries, signatures, messages)
	return err
}
