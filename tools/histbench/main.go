// Command histbench measures tests' histories at scale, through the store Verdict uses: it
// seeds organizations, each with a project of tests and finished runs whose every test has a
// result (set-based SQL, not a row at a time), then, while another goroutine keeps recording
// new runs of other organizations (writes happening, as in production), samples:
//
//   - a test's history (its 100 newest results), target p99 < 20 ms;
//   - the test search page of a project (a name fragment, 50 a page, with its total), p99 < 50 ms;
//   - recording a finished run of 2,000 tests (results, tests' aggregates), p99 < 200 ms.
//
// It prints each figure beside its target. scripts/bench-history.sh runs it on PostgreSQL
// (10 million results by default) and SQLite (1 million).
//
//	histbench -db postgres://… -orgs 200 -runs 500 -tests 100
//	histbench -data /tmp/dir -orgs 20 -runs 500 -tests 100
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"verdict/internal/domain"
	"verdict/internal/store"
	"verdict/internal/store/sqlstore"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "histbench:", err)
		os.Exit(1)
	}
}

func run() error {
	dbURL := flag.String("db", "", "DATABASE_URL (empty: SQLite in -data)")
	dataDir := flag.String("data", "", "data folder for SQLite")
	orgs := flag.Int("orgs", 200, "organizations")
	runs := flag.Int("runs", 500, "finished runs per organization")
	tests := flag.Int("tests", 100, "tests per run")
	samples := flag.Int("samples", 2000, "reads per figure")
	records := flag.Int("records", 100, "runs of 2,000 tests recorded per figure (p99 is the largest below 100)")
	seeded := flag.Bool("seeded", false, "reuse the organizations a previous run seeded in -db or -data (kept by it)")
	flag.Parse()
	ctx := context.Background()
	if *dataDir == "" {
		d, err := os.MkdirTemp("", "histbench")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		*dataDir = d
	}
	st, err := sqlstore.Open(ctx, *dbURL, *dataDir)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		return err
	}
	raw, err := rawDB(*dbURL, *dataDir)
	if err != nil {
		return err
	}
	defer raw.Close()

	start := time.Now()
	var orgIDs []string
	if *seeded {
		orgIDs, err = seededOrgs(ctx, raw)
	} else {
		orgIDs, err = seed(ctx, st, raw, *orgs, *runs, *tests)
	}
	if err != nil {
		return err
	}
	*orgs = len(orgIDs)
	var results int
	if err := raw.QueryRowContext(ctx, `SELECT COUNT(*) FROM test_results`).Scan(&results); err != nil {
		return err
	}
	fmt.Printf("seeded %d organizations, %d runs, %d test results on %s in %s\n",
		*orgs, *orgs**runs, results, st.Dialect(), time.Since(start).Round(time.Second))

	// Writes happening: runs of 100 tests of the last organizations recorded without pause.
	stop := make(chan struct{})
	var writes atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			org := orgIDs[len(orgIDs)-1-i%min(10, len(orgIDs))]
			if err := recordRun(ctx, st, org, fmt.Sprintf("w%d", i), 100, "bg"); err != nil {
				fmt.Fprintln(os.Stderr, "background write:", err)
				return
			}
			writes.Add(1)
		}
	}()

	rng := rand.New(rand.NewPCG(1, 2))
	history := sample(*samples, func() error {
		o := rng.IntN(len(orgIDs))
		_, err := st.Tests().History(ctx, orgIDs[o], testID(orgIDs[o], 1+rng.IntN(*tests)), 100)
		return err
	})
	search := sample(*samples, func() error {
		o := rng.IntN(len(orgIDs))
		_, _, err := st.Tests().List(ctx, orgIDs[o], store.TestFilter{ProjectID: projectID(orgIDs[o]),
			Query: fmt.Sprintf("case %d", 1+rng.IntN(9)), Limit: 50})
		return err
	})
	// Each of -records organizations records a run of 2,000 tests it has never run (the tests
	// are made; their names are this invocation's, so a reused database has not seen them),
	// then a second run of the same tests (their aggregates are updated).
	var recordNew, recordKnown []time.Duration
	prefix := "big-" + domain.RandomHex(4)
	for i := range 2 * *records {
		t0 := time.Now()
		if err := recordRun(ctx, st, orgIDs[(i/2)%len(orgIDs)], fmt.Sprintf("big%d", i), 2000, prefix); err != nil {
			return err
		}
		if i%2 == 0 {
			recordNew = append(recordNew, time.Since(t0))
		} else {
			recordKnown = append(recordKnown, time.Since(t0))
		}
	}
	close(stop)
	wg.Wait()
	report("a test's history (100 newest results)", history, 20*time.Millisecond)
	report("test search page (50, with total)", search, 50*time.Millisecond)
	report("recording a run of 2,000 new tests", recordNew, 200*time.Millisecond)
	report("recording a run of 2,000 known tests", recordKnown, 200*time.Millisecond)
	fmt.Printf("background: %d runs of 100 tests recorded meanwhile\n", writes.Load())
	return nil
}

// seededOrgs are the organizations an earlier run seeded, in the order it made them.
func seededOrgs(ctx context.Context, raw *sql.DB) ([]string, error) {
	rows, err := raw.QueryContext(ctx, `SELECT id FROM organizations WHERE slug LIKE 'hist-org-%' ORDER BY slug`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	if len(ids) == 0 && rows.Err() == nil {
		return nil, fmt.Errorf("-seeded: no seeded organizations in this database")
	}
	return ids, rows.Err()
}

func rawDB(dbURL, dataDir string) (*sql.DB, error) {
	if dbURL != "" {
		return sql.Open("pgx", dbURL)
	}
	return sql.Open("sqlite", filepath.Join(dataDir, "verdict.db"))
}

func projectID(org string) string     { return org + "p" }
func testID(org string, i int) string { return fmt.Sprintf("%st%d", org, i) }

// seed makes the organizations and their projects through the store, then their tests, runs
// and results with one INSERT … SELECT over a counting CTE each per organization.
func seed(ctx context.Context, st *sqlstore.Store, raw *sql.DB, orgs, runs, tests int) ([]string, error) {
	now := time.Now().UTC().Truncate(time.Millisecond)
	base := now.Add(-time.Duration(runs+10) * time.Hour).UnixMilli()
	var ids []string
	recent := `[{"t":"r1","s":"passed","b":"main","c":"c1","a":"2026-01-01T00:00:00Z"}]`
	for o := range orgs {
		org := &domain.Organization{Name: fmt.Sprintf("Hist Org %03d", o), Slug: fmt.Sprintf("hist-org-%03d", o),
			Plan: domain.PlanEnterprise, CreatedAt: now}
		if err := st.Organizations().Create(ctx, org); err != nil {
			return nil, err
		}
		p := &domain.Project{ID: projectID(org.ID), OrganizationID: org.ID, Name: "Web", Image: "e2e", CreatedAt: now, UpdatedAt: now}
		if err := st.Projects().Create(ctx, p); err != nil {
			return nil, err
		}
		ids = append(ids, org.ID)
		scope := domain.TestScope(p.ID, "")
		stmts := []string{
			fmt.Sprintf(`INSERT INTO tests (id, organization_id, project_id, scope, suite, name, runs, recent, last_status,
				pass_rate, first_seen_at, last_seen_at)
				WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %[4]d)
				SELECT '%[1]st' || i, '%[1]s', '%[2]s', '%[3]s', 'suite ' || (i %% 10), 'case ' || i || ' renders the page', %[5]d,
					'%[6]s', 'passed', 1, %[7]d, %[7]d FROM n`, org.ID, p.ID, scope, tests, runs, recent, base),
			fmt.Sprintf(`INSERT INTO executions (id, organization_id, task_id, project_id, image, status, queued_at,
				started_at, finished_at, tests_recorded)
				WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %[3]d)
				SELECT '%[1]sr' || i, '%[1]s', 'run-' || i, '%[2]s', 'e2e', 'PASSED', %[4]d + i * 3600000,
					%[4]d + i * 3600000, %[4]d + i * 3600000 + 60000, TRUE FROM n`, org.ID, p.ID, runs, base),
			fmt.Sprintf(`INSERT INTO test_results (test_id, execution_id, organization_id, task_id, status, duration_ms,
				retries, created_at)
				SELECT t.id, e.id, '%[1]s', e.task_id, CASE WHEN (e.queued_at / 3600000 + LENGTH(t.id)) %% 17 = 0 THEN 'failed' ELSE 'passed' END,
					100 + LENGTH(e.id) * 7, 0, e.finished_at
				FROM executions e JOIN tests t ON t.organization_id = e.organization_id WHERE e.organization_id = '%[1]s'`, org.ID),
		}
		for _, q := range stmts {
			if _, err := raw.ExecContext(ctx, q); err != nil {
				return nil, fmt.Errorf("seeding organization %d: %w", o, err)
			}
		}
		if (o+1)%20 == 0 {
			fmt.Printf("  seeded %d of %d organizations\n", o+1, orgs)
		}
	}
	if _, err := raw.ExecContext(ctx, `ANALYZE`); err != nil {
		return nil, err
	}
	return ids, nil
}

// recordRun records a finished run of n tests of the organization's project (the same names
// every time for a prefix, so later runs update tests rather than make them).
func recordRun(ctx context.Context, st *sqlstore.Store, org, name string, n int, prefix string) error {
	now := time.Now().UTC().Truncate(time.Millisecond)
	e := &domain.Execution{OrganizationID: org, TaskID: name + "-" + domain.RandomHex(4), ProjectID: projectID(org), Image: "e2e",
		Status: domain.ExecPending, QueuedAt: now}
	if err := st.Executions().Create(ctx, e); err != nil {
		return err
	}
	e.Status, e.FinishedAt = domain.ExecPassed, &now
	outs := make([]domain.TestOutcome, n)
	for i := range outs {
		outs[i] = domain.TestOutcome{Suite: "big", Name: fmt.Sprintf("%s case %d", prefix, i), Status: domain.TestPassed, DurationMs: 120}
	}
	// The run is not RUNNING (it was never claimed): mark it finished as the final write would.
	return st.Tests().Record(ctx, store.RunResults{Run: e, Outcomes: outs})
}

func sample(n int, f func() error) []time.Duration {
	out := make([]time.Duration, 0, n)
	for range n {
		t0 := time.Now()
		if err := f(); err != nil {
			fmt.Fprintln(os.Stderr, "read:", err)
			continue
		}
		out = append(out, time.Since(t0))
	}
	return out
}

func report(what string, d []time.Duration, target time.Duration) {
	if len(d) == 0 {
		fmt.Printf("%-42s no samples\n", what)
		return
	}
	slices.Sort(d)
	p := func(q float64) time.Duration { return d[min(int(q*float64(len(d))), len(d)-1)] }
	verdict := "meets"
	if p(0.99) > target {
		verdict = "MISSES"
	}
	fmt.Printf("%-42s n=%-5d p50 %-9s p99 %-9s (target p99 < %s: %s)\n", what, len(d),
		p(0.5).Round(10*time.Microsecond), p(0.99).Round(10*time.Microsecond), target, verdict)
}
