package executions_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"verdict/internal/domain"
	"verdict/internal/executions"
	"verdict/internal/identity"
	"verdict/internal/store/sqlstore"
	"verdict/internal/testenv"
)

// BenchmarkOverviewAtScale reads the run-health overview (executions.Service.Overview, the
// dashboard's /overview without the page) of an organization with one project of scaleRuns
// finished runs of scaleTests tests each, all in the overview's window: scaleRuns rows of
// executions, each with its tests' JSON, and scaleRuns × scaleTests rows of test_results with
// their tests' aggregates, as the post-run chain records them. It reports the p50 and p99 of
// one read. The rows are made by set-based SQL (generate_series on PostgreSQL, a recursive CTE
// on SQLite), then ANALYZEd as autovacuum would:
//
//	eval "$(scripts/services.sh)"
//	go test -run '^$' -bench OverviewAtScale -benchtime 200x -timeout 30m ./internal/executions/
func BenchmarkOverviewAtScale(b *testing.B) {
	for _, dialect := range []string{"postgres", "sqlite"} {
		b.Run(dialect, func(b *testing.B) { benchOverviewAtScale(b, dialect) })
	}
}

const (
	scaleRuns  = 10_000
	scaleTests = 100
)

// The seeded results, a function of the run i and the test k: tests 0–2 fail in one run of
// ten each (a run fails when one of them does), test 20 fails after two retries in one run of
// fifty, tests 10–14 pass on a retry in one run of seven each; every other result passes.
const (
	scaleFailed = `(k < 3 AND (i + k) % 10 = 0) OR (k = 20 AND i % 50 = 0)`
	scaleFlaky  = `(k BETWEEN 10 AND 14 AND (i + k) % 7 = 0)`
	scaleStatus = `CASE WHEN ` + scaleFailed + ` THEN 'failed' WHEN ` + scaleFlaky + ` THEN 'flaky' ELSE 'passed' END`
	scaleRetry  = `CASE WHEN k = 20 AND i % 50 = 0 THEN 2 WHEN ` + scaleFailed + ` OR ` + scaleFlaky + ` THEN 1 ELSE 0 END`
	// A run's verdict: FAILED when a test failed, UNSTABLE when one passed on a retry.
	scaleVerdict = `CASE WHEN i % 10 IN (0, 8, 9) THEN 'FAILED' WHEN i % 7 <= 4 THEN 'UNSTABLE' ELSE 'PASSED' END`
	// A test result as json.Marshal writes a domain.TestResult (the runs' tests column).
	scaleTestJSON = `'{"name":"test ' || k || '","suite":"suite ' || (k / 10) || '","status":"' || ` + scaleStatus +
		` || '","durationMs":' || (100 + k) || CASE WHEN ` + scaleFailed + ` THEN ',"error":"expected 200, got 500"' ELSE '' END ||
		',"retries":' || ` + scaleRetry + ` || '}'`
)

func benchOverviewAtScale(b *testing.B, dialect string) {
	ctx := context.Background()
	now := time.Date(2026, 3, 31, 12, 0, 0, 0, time.UTC)
	var (
		st          *sqlstore.Store
		err         error
		driver, dsn string
	)
	if dialect == "postgres" {
		dsn, driver = testenv.PostgresDB(b), "pgx"
		st, err = sqlstore.Open(ctx, dsn, "")
	} else {
		dir := b.TempDir()
		dsn, driver = filepath.Join(dir, "verdict.db")+"?_pragma=busy_timeout(10000)", "sqlite"
		st, err = sqlstore.Open(ctx, "", dir)
	}
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	if err := st.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	org := &domain.Organization{ID: domain.NewID(), Name: "Scale Co", Slug: "scale-co", Plan: domain.PlanEnterprise, CreatedAt: now}
	if err := st.Organizations().Create(ctx, org); err != nil {
		b.Fatal(err)
	}
	project := &domain.Project{ID: domain.NewID(), OrganizationID: org.ID, Name: "Shop", CreatedAt: now, UpdatedAt: now}
	if err := st.Projects().Create(ctx, project); err != nil {
		b.Fatal(err)
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	started := time.Now()
	seedOverviewScale(b, db, dialect, org.ID, project.ID, now)
	b.Logf("%s: seeded %d runs and %d results in %s", dialect, scaleRuns, scaleRuns*scaleTests, time.Since(started).Round(time.Millisecond))
	db.Close()

	svc := executions.New(executions.Deps{Store: st, Clock: func() time.Time { return now }})
	p := &identity.Principal{OrgID: org.ID, Role: domain.RoleViewer}
	o, err := svc.Overview(ctx, p)
	if err != nil {
		b.Fatal(err)
	}
	// What the overview must find in these runs, whichever way it reads them.
	if o.Runs != executions.OverviewMaxRuns || !o.Capped || len(o.Projects) != 1 || len(o.Flaky) == 0 ||
		len(o.RecentFailures) != 10 || o.RecentFailures[0].Test == "" {
		b.Fatalf("overview: runs %d capped %v projects %d flaky %d failures %+v", o.Runs, o.Capped, len(o.Projects),
			len(o.Flaky), o.RecentFailures)
	}
	var flaky []string
	for _, f := range o.Flaky {
		flaky = append(flaky, fmt.Sprintf("%s › %s (%d passed, %d failed, %d flaky, %d retried)", f.Suite, f.Name, f.Passed, f.Failed, f.Flaky, f.Retried))
	}
	b.Logf("flaky: %s", strings.Join(flaky, "; "))

	durations := make([]time.Duration, 0, 256)
	for b.Loop() {
		t0 := time.Now()
		if _, err := svc.Overview(ctx, p); err != nil {
			b.Fatal(err)
		}
		durations = append(durations, time.Since(t0))
	}
	slices.Sort(durations)
	at := func(q int) float64 {
		return float64(durations[min(len(durations)-1, (q*len(durations)+99)/100-1)]) / float64(time.Millisecond)
	}
	b.ReportMetric(at(50), "p50-ms")
	b.ReportMetric(at(99), "p99-ms")
}

// seedOverviewScale writes the runs, the tests, their results and aggregates, with a statement
// a table (the aggregates: a statement a test), and analyzes the tables.
func seedOverviewScale(b *testing.B, db *sql.DB, dialect, orgID, projectID string, now time.Time) {
	ctx := context.Background()
	step := int64(29 * 24 * time.Hour / time.Millisecond / scaleRuns)
	first := now.UnixMilli() - scaleRuns*step
	runs, tests := fmt.Sprintf("generate_series(0::bigint, %d) AS g(i)", scaleRuns-1), fmt.Sprintf("generate_series(0::bigint, %d) AS h(k)", scaleTests-1)
	with, agg := "", "string_agg"
	if dialect == "sqlite" {
		agg = "group_concat"
		with = fmt.Sprintf(`WITH RECURSIVE g(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM g WHERE i < %d),
			h(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM h WHERE k < %d) `, scaleRuns-1, scaleTests-1)
		runs, tests = "g", "h"
	}
	queued := fmt.Sprintf("(%d + i * %d)", first, step)
	finished := fmt.Sprintf("(%s + 32000 + (i %% 90) * 1000)", queued)
	exec := func(what, q string) {
		b.Helper()
		t0 := time.Now()
		if _, err := db.ExecContext(ctx, q); err != nil {
			b.Fatalf("%s: %v\n%s", what, err, q)
		}
		b.Logf("%s: %s", what, time.Since(t0).Round(time.Millisecond))
	}
	exec("runs", with+fmt.Sprintf(`INSERT INTO executions (id, organization_id, task_id, project_id, image, status, queued_at,
		started_at, finished_at, summary, tests, tests_recorded)
		SELECT 'run-' || i, '%s', 'task-' || i, '%s', 'registry.example.com/shop:1', %s, %s, %s + 2000, %s, '{}',
			(SELECT '[' || %s(%s, ',' ORDER BY k) || ']' FROM %s), TRUE
		FROM %s`, orgID, projectID, scaleVerdict, queued, queued, finished, agg, scaleTestJSON, tests, runs))
	exec("tests", with+fmt.Sprintf(`INSERT INTO tests (id, organization_id, project_id, scope, suite, name, first_seen_at, last_seen_at)
		SELECT 'test-' || k, '%s', '%s', '%s', 'suite ' || (k / 10), 'test ' || k, %d, %d FROM %s`,
		orgID, projectID, domain.TestScope(projectID, ""), first, now.UnixMilli(), tests))
	exec("results", with+fmt.Sprintf(`INSERT INTO test_results (test_id, execution_id, organization_id, task_id, status,
		duration_ms, retries, message, created_at)
		SELECT 'test-' || k, 'run-' || i, '%s', 'task-' || i, %s, 100 + k, %s,
			CASE WHEN %s THEN 'expected 200, got 500' ELSE '' END, %s
		FROM %s, %s`, orgID, scaleStatus, scaleRetry, scaleFailed, finished, runs, tests))

	// The aggregates, as recording the runs one by one leaves them.
	t0 := time.Now()
	for k := range scaleTests {
		id := fmt.Sprint("test-", k)
		rows, err := db.QueryContext(ctx, fmt.Sprintf(`SELECT task_id, status, created_at FROM test_results
			WHERE test_id = '%s' ORDER BY created_at DESC LIMIT %d`, id, domain.FlakeWindow))
		if err != nil {
			b.Fatal(err)
		}
		t := domain.TrackedTest{ID: id}
		for rows.Next() {
			var p domain.TestPoint
			var at int64
			if err := rows.Scan(&p.TaskID, &p.Status, &at); err != nil {
				b.Fatal(err)
			}
			p.At = time.UnixMilli(at).UTC()
			t.Recent = append(t.Recent, p)
		}
		rows.Close()
		last := func(cond string) (task string, at int64) {
			_ = db.QueryRowContext(ctx, fmt.Sprintf(`SELECT task_id, created_at FROM test_results WHERE test_id = '%s' AND %s
				ORDER BY created_at DESC LIMIT 1`, id, cond)).Scan(&task, &at)
			return task, at
		}
		failedTask, failedAt := last("status = 'failed'")
		passedTask, passedAt := last("status IN ('passed', 'flaky')")
		recent, err := json.Marshal(t.Recent)
		if err != nil {
			b.Fatal(err)
		}
		r := domain.Rates(t.Recent)
		flaky := "FALSE"
		if r.Flaky {
			flaky = "TRUE"
		}
		if _, err := db.ExecContext(ctx, fmt.Sprintf(`UPDATE tests SET runs = %d, recent = '%s', last_status = '%s',
			pass_rate = %g, flake_rate = %g, flaky = %s, last_failed_task_id = '%s', last_failed_at = %d,
			last_passed_task_id = '%s', last_passed_at = %d WHERE id = '%s'`, scaleRuns, recent, t.LastStatus(),
			r.PassRate, r.FlakeRate, flaky, failedTask, failedAt, passedTask, passedAt, id)); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("aggregates: %s", time.Since(t0).Round(time.Millisecond))
	exec("analyze", "ANALYZE")
}
