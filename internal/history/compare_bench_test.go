package history_test

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"testing"
	"time"

	"verdict/internal/domain"
	"verdict/internal/history"
	"verdict/internal/store"
	"verdict/internal/store/sqlstore"
	"verdict/internal/store/sqlstore/sqlitetest"
	"verdict/internal/testenv"

	_ "github.com/jackc/pgx/v5/stdlib" // VACUUM ANALYZE
)

// BenchmarkComparePostgres times GET /api/executions/{taskId}/compare's work on PostgreSQL
// (the baseline's query, both runs' results, the project's flaky tests, the comparison) for a
// project of 30 recorded runs of n tests each, a few of them failing or flaky each run, and
// reports its median and p99 (target: p99 under 50 ms at 2,000 tests), before and after the
// tables are vacuumed.
//
//	go test -run '^$' -bench ComparePostgres -benchtime 200x ./internal/history/
func BenchmarkComparePostgres(b *testing.B) {
	testenv.SkipShort(b, "PostgreSQL")
	for _, n := range []int{100, 500, 2000} {
		b.Run(fmt.Sprintf("tests=%d", n), func(b *testing.B) {
			ctx := context.Background()
			dbURL := testenv.PostgresDB(b)
			st, err := sqlstore.Open(ctx, dbURL, "")
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { st.Close() })
			if err := st.Migrate(ctx); err != nil {
				b.Fatal(err)
			}
			org := sqlitetest.Org(b, st, "Bench Co", domain.PlanEnterprise, t0)
			p := sqlitetest.As(sqlitetest.Member(b, st, org, "admin@bench.test", domain.RoleAdmin))
			project := &domain.Project{ID: domain.NewID(), OrganizationID: org.ID, Name: "Web", Image: "suite", CreatedAt: t0, UpdatedAt: t0}
			if err := st.Projects().Create(ctx, project); err != nil {
				b.Fatal(err)
			}
			svc := history.New(history.Deps{Store: st, Clock: func() time.Time { return t0.Add(48 * time.Hour) }})
			if _, err := svc.SetGateRules(ctx, p, project.ID, domain.GateRules{NoNewFailures: ptr(true), NoNewFlaky: ptr(true)}); err != nil {
				b.Fatal(err)
			}
			const runs = 30
			var last string
			for r := range runs {
				tests := make([]domain.TestResult, n)
				for i := range tests {
					s := domain.TestPassed
					switch {
					case (i+r)%97 == 0:
						s = domain.TestFailed
					case (i*7+r)%89 == 0, i%150 == 0 && r%2 == 0:
						s = domain.TestFlaky
					case i%50 == 0:
						s = domain.TestSkipped
					}
					tests[i] = domain.TestResult{Suite: fmt.Sprintf("suite-%d", i/40), Name: fmt.Sprintf("test %d does a thing", i),
						Status: s, DurationMs: int64(100 + (i*13+r*7)%900)}
				}
				start := t0.Add(time.Duration(r) * time.Hour)
				end := start.Add(5 * time.Minute)
				e := &domain.Execution{ID: domain.NewID(), OrganizationID: org.ID, TaskID: fmt.Sprintf("run-%d", r), ProjectID: project.ID,
					Image: "suite", Status: domain.ExecRunning, RunnerID: "r1", QueuedAt: start, StartedAt: &start,
					Labels: map[string]string{"branch": "main", "commit": fmt.Sprint(r)}}
				if err := st.Executions().Create(ctx, e); err != nil {
					b.Fatal(err)
				}
				if err := st.Executions().Finish(ctx, e.ID, "r1", store.Finish{Status: domain.ExecFailed, FinishedAt: end,
					Tests: tests, Summary: domain.Summarize(tests)}); err != nil {
					b.Fatal(err)
				}
				run, err := st.Executions().GetByID(ctx, e.ID)
				if err != nil {
					b.Fatal(err)
				}
				if err := svc.Record(ctx, run); err != nil {
					b.Fatal(err)
				}
				last = e.TaskID
			}
			c, err := svc.Compare(ctx, p, last, "")
			if err != nil || c.Base == nil || len(c.NewFailures) == 0 {
				b.Fatalf("compare: %+v, %v", c, err)
			}
			// Measured twice: right after the runs were recorded back to back (every test's row
			// rewritten 30 times, nothing vacuumed yet), then after VACUUM ANALYZE (autovacuum's
			// work, the steady state of a project whose runs are minutes apart).
			measure := func(suffix string) {
				times := make([]time.Duration, 0, b.N)
				for range b.N {
					start := time.Now()
					if _, err := svc.Compare(ctx, p, last, ""); err != nil {
						b.Fatal(err)
					}
					times = append(times, time.Since(start))
				}
				slices.Sort(times)
				at := func(pct int) float64 {
					return float64(times[min((pct*len(times)+99)/100, len(times))-1].Microseconds()) / 1000
				}
				b.ReportMetric(at(50), "median-ms"+suffix)
				b.ReportMetric(at(99), "p99-ms"+suffix)
			}
			b.ResetTimer()
			measure("")
			b.StopTimer()
			db, err := sql.Open("pgx", dbURL)
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			if _, err := db.ExecContext(ctx, "VACUUM ANALYZE"); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			measure("-vacuumed")
		})
	}
}
