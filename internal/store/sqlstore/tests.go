package sqlstore

import (
	"context"
	"database/sql"
	"strings"
	"time"

	"verdict/internal/domain"
	"verdict/internal/store"
)

func (s *Store) Tests() store.TestRepo { return testRepo{s} }

type testRepo struct{ s *Store }

const testColumns = `id, organization_id, project_id, scope, suite, name, runs, recent, first_seen_at, last_seen_at,
	last_failed_task_id, last_failed_at, last_passed_task_id, last_passed_at,
	quarantine_reason, quarantine_until, quarantine_by, quarantine_at`

func scanTest(r scanner) (*domain.TrackedTest, error) {
	var t domain.TrackedTest
	var recent, qReason, qBy string
	var first, last, failedAt, passedAt int64
	var qUntil, qAt sql.NullInt64
	if err := r.Scan(&t.ID, &t.OrganizationID, &t.ProjectID, &t.Scope, &t.Suite, &t.Name, &t.Runs, &recent,
		&first, &last, &t.LastFailedTaskID, &failedAt, &t.LastPassedTaskID, &passedAt,
		&qReason, &qUntil, &qBy, &qAt); err != nil {
		return nil, err
	}
	if err := decodeJSON(recent, &t.Recent); err != nil {
		return nil, err
	}
	t.FirstSeenAt, t.LastSeenAt = fromMillis(first), fromMillis(last)
	if failedAt > 0 {
		t.LastFailedAt = fromMillis(failedAt)
	}
	if passedAt > 0 {
		t.LastPassedAt = fromMillis(passedAt)
	}
	if qUntil.Valid {
		t.Quarantine = &domain.Quarantine{Reason: qReason, Until: fromMillis(qUntil.Int64), By: qBy}
		if qAt.Valid {
			t.Quarantine.CreatedAt = fromMillis(qAt.Int64)
		}
	}
	return &t, nil
}

// falseLit is the literal the partial indexes' conditions are written with.
func (s *Store) falseLit() string {
	if s.d.name == "sqlite" {
		return "0"
	}
	return "FALSE"
}

// recordChunk bounds the rows of one multi-row statement on SQLite (which takes at most
// 32,766 parameters; a chunk of 1,000 rows of 18 columns binds 18,000).
const recordChunk = 1000

// Record writes a run's results in one transaction: the run is marked first (a second Record
// of it finds it marked and writes nothing), the recordings of the run's scope are
// serialised (an advisory lock of the scope on PostgreSQL, held to the end of the
// transaction: one lock, where locking each test row would write every row twice; SQLite's
// write transactions are serialised already), the run's tests are read by name a chunk at a
// time, the outcomes merged into them in memory, the new tests inserted with their
// aggregates (one write each, not an insert and then an update), the known ones updated, and
// the results inserted: on PostgreSQL one statement each (tests_pg.go), on SQLite a chunk a
// statement and a prepared UPDATE a test.
func (r testRepo) Record(ctx context.Context, rr store.RunResults) error {
	run := rr.Run
	at := run.QueuedAt
	if run.FinishedAt != nil {
		at = *run.FinishedAt
	}
	scope := domain.TestScope(run.ProjectID, run.Image)
	branch, commit := run.Labels[domain.BranchLabel], run.Labels[domain.CommitLabel]
	for i := range rr.Outcomes {
		o := &rr.Outcomes[i]
		o.TaskID, o.ExecutionID, o.Branch, o.Commit, o.CreatedAt = run.TaskID, run.ID, branch, commit, at
	}
	return r.s.inTx(ctx, func(tx *Store) error {
		res, err := tx.execRuns(ctx, run.OrganizationID, `UPDATE executions SET version = version + 1, tests_recorded = TRUE WHERE organization_id = ? AND id = ? AND tests_recorded = `+tx.falseLit(),
			run.OrganizationID, run.ID)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return err // recorded already (or the run is gone)
		}
		if len(rr.Outcomes) == 0 {
			return nil
		}
		if tx.d.name == "postgres" {
			if _, err := tx.exec(ctx, `SELECT pg_advisory_xact_lock(hashtext(?))`, run.OrganizationID+" "+scope); err != nil {
				return err
			}
		}
		byKey := tx.testsByKey
		if tx.d.name == "postgres" {
			byKey = tx.pgTestsByKey
		}
		tests, err := byKey(ctx, run.OrganizationID, scope, rr.Outcomes)
		if err != nil {
			return err
		}
		known := make([]*domain.TrackedTest, 0, len(tests))
		for _, t := range tests {
			known = append(known, t)
		}
		var fresh []*domain.TrackedTest
		for i := range rr.Outcomes {
			o := &rr.Outcomes[i]
			k := testKey(o.Suite, o.Name)
			t := tests[k]
			if t == nil {
				t = &domain.TrackedTest{ID: domain.NewID(), OrganizationID: run.OrganizationID, ProjectID: run.ProjectID,
					Scope: scope, Suite: o.Suite, Name: o.Name, FirstSeenAt: at, LastSeenAt: at}
				tests[k] = t
				fresh = append(fresh, t)
			}
			o.TestID = t.ID
			mergeOutcome(t, o)
		}
		if tx.d.name == "postgres" {
			if err := tx.pgInsertTests(ctx, run.OrganizationID, run.ProjectID, scope, fresh); err != nil {
				return err
			}
			if err := tx.pgUpdateTests(ctx, run.OrganizationID, scope, known); err != nil {
				return err
			}
			return tx.pgInsertResults(ctx, run, rr.Outcomes)
		}
		defer tx.roomyCache(ctx)()
		if err := tx.insertTests(ctx, fresh); err != nil {
			return err
		}
		if err := tx.updateTests(ctx, known); err != nil {
			return err
		}
		return tx.insertResults(ctx, run.OrganizationID, rr.Outcomes)
	})
}

// roomyCache lets the SQLite writer's page cache grow to 32 MiB (its default is 2) until the
// returned function sets it back: a run's results land on thousands of leaf pages of the
// results' indexes, more than 2 MiB, which SQLite spilled to the WAL mid-transaction and read
// back (a third of a 2,000-test recording's time). Only recordings take the room, so the
// writer's memory stays small under everything else (a run's log is written through it too).
// The pragmas write nothing, so they do not go through exec (which would end the caches).
func (s *Store) roomyCache(ctx context.Context) func() {
	if _, err := s.q.ExecContext(ctx, `PRAGMA cache_size = -32768`); err != nil {
		return func() {}
	}
	return func() { _, _ = s.q.ExecContext(context.WithoutCancel(ctx), `PRAGMA cache_size = -2000`) }
}

func testKey(suite, name string) string { return suite + "\x00" + name }

// mergeOutcome adds o to t's aggregates; merged in any order, results give the same ones.
func mergeOutcome(t *domain.TrackedTest, o *domain.TestOutcome) {
	t.Runs++
	t.Merge(domain.TestPoint{TaskID: o.TaskID, Status: o.Status, Branch: o.Branch, Commit: o.Commit, At: o.CreatedAt})
	if o.CreatedAt.Before(t.FirstSeenAt) {
		t.FirstSeenAt = o.CreatedAt
	}
	if o.CreatedAt.After(t.LastSeenAt) {
		t.LastSeenAt = o.CreatedAt
	}
	switch o.Status {
	case domain.TestFailed:
		if !o.CreatedAt.Before(t.LastFailedAt) {
			t.LastFailedTaskID, t.LastFailedAt = o.TaskID, o.CreatedAt
		}
	case domain.TestPassed, domain.TestFlaky:
		if !o.CreatedAt.Before(t.LastPassedAt) {
			t.LastPassedTaskID, t.LastPassedAt = o.TaskID, o.CreatedAt
		}
	}
}

// testsByKey reads the scope's tests named by outcomes, by suite and name: a row-value IN
// whose every pair is one probe of the unique index (organization, scope, suite, name). By name
// alone, SQLite read every test of the scope (60,000 tests: 40 ms a recording).
func (s *Store) testsByKey(ctx context.Context, orgID, scope string, outcomes []domain.TestOutcome) (map[string]*domain.TrackedTest, error) {
	out := make(map[string]*domain.TrackedTest, len(outcomes))
	keys := make([]domain.TestOutcome, 0, len(outcomes))
	seen := make(map[string]bool, len(outcomes))
	for _, o := range outcomes {
		if k := testKey(o.Suite, o.Name); !seen[k] {
			seen[k] = true
			keys = append(keys, o)
		}
	}
	for start := 0; start < len(keys); start += recordChunk {
		chunk := keys[start:min(start+recordChunk, len(keys))]
		args := make([]any, 0, 2*len(chunk)+2)
		args = append(args, orgID, scope)
		var pairs strings.Builder
		for i, k := range chunk {
			if i > 0 {
				pairs.WriteString(", ")
			}
			pairs.WriteString("(?, ?)")
			args = append(args, k.Suite, k.Name)
		}
		rows, err := list(ctx, s, scanTest, `SELECT `+testColumns+` FROM tests WHERE organization_id = ? AND scope = ?
			AND (suite, name) IN (VALUES `+pairs.String()+`)`, args...)
		if err != nil {
			return nil, err
		}
		for i := range rows {
			out[testKey(rows[i].Suite, rows[i].Name)] = &rows[i]
		}
	}
	return out, nil
}

// aggregates are the columns a recording writes of a test, in the order of aggregateValues.
const aggregates = `runs, recent, last_status, pass_rate, flake_rate, flaky, first_seen_at, last_seen_at,
	last_failed_task_id, last_failed_at, last_passed_task_id, last_passed_at`

func aggregateValues(t *domain.TrackedTest) ([]any, error) {
	recent, err := encodePoints(t.Recent)
	if err != nil {
		return nil, err
	}
	rates := domain.Rates(t.Recent)
	return []any{t.Runs, recent, string(t.LastStatus()), rates.PassRate, rates.FlakeRate, rates.Flaky,
		millis(t.FirstSeenAt), millis(t.LastSeenAt), t.LastFailedTaskID, zeroMillis(t.LastFailedAt),
		t.LastPassedTaskID, zeroMillis(t.LastPassedAt)}, nil
}

// insertTests inserts new tests with their aggregates on SQLite, a chunk a statement. The scope's lock
// (or SQLite's one writer) means no other recording inserts them meanwhile; should anything
// else, the unique index fails this transaction and the recorder's catch-up records the run
// again.
func (s *Store) insertTests(ctx context.Context, tests []*domain.TrackedTest) error {
	for start := 0; start < len(tests); start += recordChunk {
		chunk := tests[start:min(start+recordChunk, len(tests))]
		var q strings.Builder
		q.WriteString(`INSERT INTO tests (id, organization_id, project_id, scope, suite, name, ` + aggregates + `) VALUES `)
		args := make([]any, 0, 18*len(chunk))
		for i, t := range chunk {
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteString("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
			v, err := aggregateValues(t)
			if err != nil {
				return err
			}
			args = append(args, t.ID, t.OrganizationID, t.ProjectID, t.Scope, t.Suite, t.Name)
			args = append(args, v...)
		}
		if _, err := s.exec(ctx, q.String(), args...); err != nil {
			return err
		}
	}
	return nil
}

// updateTests writes the aggregates of tests on SQLite: one prepared UPDATE a test, which in
// process costs microseconds (its planner may loop over a VALUES list for every row).
func (s *Store) updateTests(ctx context.Context, tests []*domain.TrackedTest) error {
	const q = `UPDATE tests SET runs = ?, recent = ?, last_status = ?, pass_rate = ?, flake_rate = ?, flaky = ?,
		first_seen_at = ?, last_seen_at = ?, last_failed_task_id = ?, last_failed_at = ?, last_passed_task_id = ?,
		last_passed_at = ? WHERE id = ?`
	stmt, err := s.tx.PrepareContext(ctx, q)
	if err != nil {
		return s.mapErr(err)
	}
	defer stmt.Close()
	s.wrote(q)
	for _, t := range tests {
		args, err := aggregateValues(t)
		if err != nil {
			return err
		}
		if _, err := stmt.ExecContext(ctx, append(args, t.ID)...); err != nil {
			return s.mapErr(err)
		}
	}
	return nil
}

func zeroMillis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return millis(t)
}

// insertResults inserts outcomes on SQLite: one prepared INSERT a result, which in process
// costs microseconds, where parsing multi-row statements of 12,000 parameters took longer than
// running them.
func (s *Store) insertResults(ctx context.Context, orgID string, outcomes []domain.TestOutcome) error {
	const q = `INSERT INTO test_results (test_id, execution_id, organization_id, task_id, status, duration_ms,
		retries, signature, message, branch, commit_sha, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	stmt, err := s.tx.PrepareContext(ctx, q)
	if err != nil {
		return s.mapErr(err)
	}
	defer stmt.Close()
	s.wrote(q)
	for _, o := range outcomes {
		if _, err := stmt.ExecContext(ctx, o.TestID, o.ExecutionID, orgID, o.TaskID, string(o.Status), o.DurationMs, o.Retries,
			o.Signature, o.Message, o.Branch, o.Commit, millis(o.CreatedAt)); err != nil {
			return s.mapErr(err)
		}
	}
	return nil
}

// Unrecorded reads finished runs not recorded yet through the partial index of them.
func (r testRepo) Unrecorded(ctx context.Context, limit int) ([]domain.Execution, error) {
	return list(ctx, r.s, scanExecution, `SELECT `+executionColumns+` FROM executions
		WHERE tests_recorded = `+r.s.falseLit()+` AND finished_at IS NOT NULL AND status IN (?, ?, ?, ?, ?)
		ORDER BY finished_at, id LIMIT ?`,
		domain.ExecPassed, domain.ExecFailed, domain.ExecUnstable, domain.ExecError, domain.ExecCancelled, limit)
}

func (r testRepo) List(ctx context.Context, orgID string, f store.TestFilter) ([]domain.TrackedTest, int, error) {
	cond := `organization_id = ?`
	args := []any{orgID}
	switch {
	case f.Scope != "":
		cond += ` AND scope = ?`
		args = append(args, f.Scope)
	case f.ProjectID != "":
		cond += ` AND scope = ?`
		args = append(args, domain.TestScope(f.ProjectID, ""))
	}
	if f.Query != "" {
		like := "%" + escapeLike(strings.ToLower(f.Query)) + "%"
		cond += ` AND (LOWER(name) LIKE ? ESCAPE '\' OR LOWER(suite) LIKE ? ESCAPE '\')`
		args = append(args, like, like)
	}
	if f.Status != "" {
		cond += ` AND last_status = ?`
		args = append(args, string(f.Status))
	}
	if f.Flaky {
		cond += ` AND flaky = TRUE`
	}
	if f.Quarantined {
		cond += ` AND quarantine_until > ?`
		args = append(args, millis(f.Now))
	}
	total, err := r.s.count(ctx, `SELECT COUNT(*) FROM tests WHERE `+cond, args...)
	if err != nil || total == 0 {
		return []domain.TrackedTest{}, total, err
	}
	page, err := list(ctx, r.s, scanTest, `SELECT `+testColumns+` FROM tests WHERE `+cond+`
		ORDER BY last_seen_at DESC, id LIMIT ? OFFSET ?`, append(args, f.Limit, f.Offset)...)
	return page, total, err
}

// escapeLike escapes LIKE's wildcards and its escape character.
func escapeLike(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

func (r testRepo) Get(ctx context.Context, orgID, testID string) (*domain.TrackedTest, error) {
	return get(ctx, r.s, scanTest, `SELECT `+testColumns+` FROM tests WHERE organization_id = ? AND id = ?`, orgID, testID)
}

const outcomeColumns = `test_id, execution_id, task_id, status, duration_ms, retries, signature, message, branch, commit_sha, created_at`

func scanOutcome(r scanner) (*domain.TestOutcome, error) {
	var o domain.TestOutcome
	var at int64
	if err := r.Scan(&o.TestID, &o.ExecutionID, &o.TaskID, &o.Status, &o.DurationMs, &o.Retries, &o.Signature,
		&o.Message, &o.Branch, &o.Commit, &at); err != nil {
		return nil, err
	}
	o.CreatedAt = fromMillis(at)
	return &o, nil
}

func (r testRepo) History(ctx context.Context, orgID, testID string, limit int) ([]domain.TestOutcome, error) {
	return list(ctx, r.s, scanOutcome, `SELECT `+outcomeColumns+` FROM test_results
		WHERE test_id = ? AND organization_id = ? ORDER BY created_at DESC, execution_id DESC LIMIT ?`, testID, orgID, limit)
}

func (r testRepo) ForRun(ctx context.Context, orgID, executionID string) ([]domain.TestOutcome, error) {
	return list(ctx, r.s, func(sc scanner) (*domain.TestOutcome, error) {
		var o domain.TestOutcome
		var at int64
		if err := sc.Scan(&o.TestID, &o.ExecutionID, &o.TaskID, &o.Status, &o.DurationMs, &o.Retries, &o.Signature,
			&o.Message, &o.Branch, &o.Commit, &at, &o.Suite, &o.Name); err != nil {
			return nil, err
		}
		o.CreatedAt = fromMillis(at)
		return &o, nil
	}, `SELECT r.test_id, r.execution_id, r.task_id, r.status, r.duration_ms, r.retries, r.signature, r.message,
		r.branch, r.commit_sha, r.created_at, t.suite, t.name
		FROM test_results r JOIN tests t ON t.id = r.test_id
		WHERE r.execution_id = ? AND r.organization_id = ?`, executionID, orgID)
}

// IDs reads the tests by name a chunk at a time through the (organization, scope, suite, name)
// index, only their IDs and names.
func (r testRepo) IDs(ctx context.Context, orgID, scope string, names []store.TestName) (map[store.TestName]string, error) {
	out := make(map[store.TestName]string, len(names))
	wanted := make(map[store.TestName]bool, len(names))
	seen := make(map[string]bool, len(names))
	var unique []string
	for _, n := range names {
		wanted[n] = true
		if !seen[n.Name] {
			seen[n.Name] = true
			unique = append(unique, n.Name)
		}
	}
	for start := 0; start < len(unique); start += recordChunk {
		chunk := unique[start:min(start+recordChunk, len(unique))]
		args := make([]any, 0, len(chunk)+2)
		args = append(args, orgID, scope)
		for _, n := range chunk {
			args = append(args, n)
		}
		rows, err := list(ctx, r.s, func(sc scanner) (*[3]string, error) {
			var v [3]string
			return &v, sc.Scan(&v[0], &v[1], &v[2])
		}, `SELECT id, suite, name FROM tests WHERE organization_id = ? AND scope = ? AND name IN (`+placeholders(len(chunk))+`)`, args...)
		if err != nil {
			return nil, err
		}
		for _, v := range rows {
			if k := (store.TestName{Suite: v[1], Name: v[2]}); wanted[k] { // not the same name in another suite
				out[k] = v[0]
			}
		}
	}
	return out, nil
}

func (r testRepo) Quarantined(ctx context.Context, orgID, scope string, now time.Time) ([]domain.TrackedTest, error) {
	return list(ctx, r.s, scanTest, `SELECT `+testColumns+` FROM tests
		WHERE organization_id = ? AND scope = ? AND quarantine_until > ?`, orgID, scope, millis(now))
}

func (r testRepo) SetQuarantine(ctx context.Context, orgID, testID string, q *domain.Quarantine) error {
	if q == nil {
		return r.s.execOne(ctx, `UPDATE tests SET quarantine_reason = '', quarantine_until = NULL, quarantine_by = '',
			quarantine_at = NULL WHERE organization_id = ? AND id = ?`, orgID, testID)
	}
	return r.s.execOne(ctx, `UPDATE tests SET quarantine_reason = ?, quarantine_until = ?, quarantine_by = ?,
		quarantine_at = ? WHERE organization_id = ? AND id = ?`,
		q.Reason, millis(q.Until), q.By, millis(q.CreatedAt), orgID, testID)
}

func (r testRepo) AutoQuarantineRate(ctx context.Context, orgID, projectID string) (*float64, error) {
	var rate sql.NullFloat64
	q := `SELECT auto_quarantine_rate FROM projects WHERE organization_id = ? AND id = ?`
	if err := r.s.on(q).QueryRowContext(ctx, r.s.d.rebind(q), orgID, projectID).Scan(&rate); err != nil {
		return nil, r.s.mapErr(err)
	}
	if !rate.Valid {
		return nil, nil
	}
	return &rate.Float64, nil
}

func (r testRepo) SetAutoQuarantineRate(ctx context.Context, orgID, projectID string, rate *float64) error {
	var v any
	if rate != nil {
		v = *rate
	}
	return r.s.execOne(ctx, `UPDATE projects SET auto_quarantine_rate = ? WHERE organization_id = ? AND id = ?`, v, orgID, projectID)
}
