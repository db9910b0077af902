package sqlstore

import (
	"context"
	"strings"
	"time"

	"verdict/internal/domain"
	"verdict/internal/store"
)

// The reads of tests' histories that the run-health overview and an image's insights make
// (store.TestOverviewRepo).

// Flaking reads the organization's tests with a flake event in their window through the
// partial index of them (tests_flaking, by organization), keeps those seen since, and sorts
// them newest seen first in memory: the index leaves out last_seen_at, which every recording
// changes (see the migration). Its condition is written as the index's (the literal 0), which
// SQLite needs to use it.
func (r testRepo) Flaking(ctx context.Context, orgID string, since time.Time, limit int) ([]domain.TrackedTest, error) {
	if limit <= 0 {
		return []domain.TrackedTest{}, nil
	}
	return list(ctx, r.s, scanTest, flakingQuery, orgID, millis(since), limit)
}

const flakingQuery = `SELECT ` + testColumns + ` FROM tests
	WHERE organization_id = ? AND flake_rate > 0 AND last_seen_at >= ?
	ORDER BY last_seen_at DESC, id DESC LIMIT ?`

// readChunk is how many names one statement of the reads by a list of tests or runs takes:
// the last chunk is filled up by repeating its last name, so that each read has one shape
// of statement (the read pool keeps a prepared statement per shape, a bounded number).
const readChunk = 25

// inChunks calls fn with each chunk of n names, readChunk a chunk: the indexes of the chunk's
// names in order, the last repeated to fill it.
func inChunks(n int, fn func(idx []int) error) error {
	idx := make([]int, readChunk)
	for start := 0; start < n; start += readChunk {
		for i := range idx {
			idx[i] = min(start+i, n-1)
		}
		if err := fn(idx); err != nil {
			return err
		}
	}
	return nil
}

// ResultsFrom reads each test's results from its time on through test_results_by_test (test,
// created_at): one range of the index a test, readChunk tests a statement.
func (r testRepo) ResultsFrom(ctx context.Context, orgID string, from []store.TestFrom) ([]domain.TestOutcome, error) {
	out := []domain.TestOutcome{}
	err := inChunks(len(from), func(idx []int) error {
		args := make([]any, 0, 1+2*readChunk)
		args = append(args, orgID)
		for _, i := range idx {
			args = append(args, from[i].TestID, millis(from[i].From))
		}
		// The filling repeats a condition of the same statement, which matches a row once.
		rows, err := list(ctx, r.s, scanOutcome, resultsFromQuery, args...)
		out = append(out, rows...)
		return err
	})
	return out, err
}

var resultsFromQuery = `SELECT ` + outcomeColumns + ` FROM test_results WHERE organization_id = ? AND (` +
	strings.TrimSuffix(strings.Repeat("(test_id = ? AND created_at >= ?) OR ", readChunk), " OR ") + `)`

// FirstFailed reads the runs' failed results through test_results_by_run, with their tests,
// and keeps each run's first by suite and name, compared bytewise on both databases (SQLite's
// BINARY; PostgreSQL's "C" collation, not the database's).
func (r testRepo) FirstFailed(ctx context.Context, orgID string, executionIDs []string) ([]domain.TestOutcome, error) {
	q := firstFailedQuery[r.s.d.name]
	out := []domain.TestOutcome{}
	err := inChunks(len(executionIDs), func(idx []int) error {
		args := make([]any, 0, 2+readChunk)
		args = append(args, orgID, domain.TestFailed)
		for _, i := range idx {
			args = append(args, executionIDs[i])
		}
		rows, err := list(ctx, r.s, scanNamedOutcome, q, args...)
		out = append(out, rows...)
		return err
	})
	return out, err
}

// firstFailedQuery is FirstFailed's statement, by dialect.
var firstFailedQuery = map[string]string{"sqlite": firstFailedIn(""), "postgres": firstFailedIn(` COLLATE "C"`)}

func firstFailedIn(collate string) string {
	return `SELECT ` + outcomeColumns + `, suite, name FROM (
		SELECT r.test_id, r.execution_id, r.task_id, r.status, r.duration_ms, r.retries, r.signature, r.message,
			r.branch, r.commit_sha, r.created_at, t.suite, t.name,
			ROW_NUMBER() OVER (PARTITION BY r.execution_id ORDER BY t.suite` + collate + `, t.name` + collate + `, r.test_id) AS n
		FROM test_results r JOIN tests t ON t.id = r.test_id
		WHERE r.organization_id = ? AND r.status = ? AND r.execution_id IN (` + placeholders(readChunk) + `)) AS f
		WHERE n = 1`
}

// scanNamedOutcome scans outcomeColumns followed by the test's suite and name.
func scanNamedOutcome(sc scanner) (*domain.TestOutcome, error) {
	var o domain.TestOutcome
	var at int64
	if err := sc.Scan(&o.TestID, &o.ExecutionID, &o.TaskID, &o.Status, &o.DurationMs, &o.Retries, &o.Signature,
		&o.Message, &o.Branch, &o.Commit, &at, &o.Suite, &o.Name); err != nil {
		return nil, err
	}
	o.CreatedAt = fromMillis(at)
	return &o, nil
}

// FlakyInRuns reads the runs' results through test_results_by_run, with their tests by
// primary key, and keeps the tests flaky by their window or FLAKY in one of the runs.
func (r testRepo) FlakyInRuns(ctx context.Context, orgID string, executionIDs []string) ([]domain.TrackedTest, error) {
	out := []domain.TrackedTest{}
	seen := map[string]bool{}
	err := inChunks(len(executionIDs), func(idx []int) error {
		args := make([]any, 0, 2+readChunk)
		args = append(args, orgID)
		for _, i := range idx {
			args = append(args, executionIDs[i])
		}
		rows, err := list(ctx, r.s, scanTest, flakyInRunsQuery, append(args, domain.TestFlaky)...)
		for _, t := range rows {
			if !seen[t.ID] { // a test of runs of two chunks
				seen[t.ID] = true
				out = append(out, t)
			}
		}
		return err
	})
	return out, err
}

// flakyInRunsQuery finds the tests from the runs' results, then reads them by primary key.
// The organization is the results' (a result is of a test of its own organization): a
// condition on the tests' organization would let the planners read all of the organization's
// tests instead.
var flakyInRunsQuery = `SELECT ` + testColumns + ` FROM tests WHERE id IN (
	SELECT r.test_id FROM test_results r JOIN tests t ON t.id = r.test_id
	WHERE r.organization_id = ? AND r.execution_id IN (` + placeholders(readChunk) + `)
		AND (r.status = ? OR t.flaky = TRUE))`
