package sqlstore

import (
	"context"
	"strings"
	"testing"
)

// TestOverviewReadsUseTheirIndexes: the reads of tests' histories that the run-health overview
// and an image's insights make find their rows through an index on both databases, never by
// reading the organization's tests or the results whole: Flaking through the partial index of
// tests with a flake event (its condition implies the index's), ResultsFrom through each
// test's range of test_results_by_test, FirstFailed and FlakyInRuns through the runs' entries
// of test_results_by_run. On PostgreSQL the planner is told to avoid sequential scans, which
// an empty table would otherwise get: what is checked is that the index can serve the query.
func TestOverviewReadsUseTheirIndexes(t *testing.T) {
	for name, open := range map[string]func(testing.TB) *Store{"sqlite": testSQLite, "postgres": testPostgres} {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			ctx := context.Background()
			conn, err := s.db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			explain := "EXPLAIN QUERY PLAN "
			if name == "postgres" {
				explain = "EXPLAIN "
				if _, err := conn.ExecContext(ctx, "SET enable_seqscan = off"); err != nil {
					t.Fatal(err)
				}
			}
			ids := func(n int) []any {
				out := make([]any, n)
				for i := range out {
					out[i] = "x"
				}
				return out
			}
			ranges := []any{"o"}
			for range readChunk {
				ranges = append(ranges, "t", int64(0))
			}
			for _, c := range []struct {
				what, query string
				args        []any
				index       string
			}{
				{"Flaking", flakingQuery, []any{"o", int64(0), 10}, "tests_flaking"},
				{"ResultsFrom", resultsFromQuery, ranges, "test_results_by_test"},
				{"FirstFailed", firstFailedQuery[name], ids(2 + readChunk), "test_results_by_run"},
				{"FlakyInRuns", flakyInRunsQuery, ids(2 + readChunk), "test_results_by_run"},
			} {
				rows, err := conn.QueryContext(ctx, explain+s.d.rebind(c.query), c.args...)
				if err != nil {
					t.Fatalf("%s: %v", c.what, err)
				}
				var plan []string
				cols, _ := rows.Columns()
				for rows.Next() {
					dst := make([]any, len(cols))
					var line string
					for i := range dst {
						dst[i] = new(any)
					}
					dst[len(dst)-1] = &line
					if err := rows.Scan(dst...); err != nil {
						t.Fatal(err)
					}
					plan = append(plan, line)
				}
				rows.Close()
				text := strings.Join(plan, "\n")
				t.Logf("%s:\n%s", c.what, text)
				if !strings.Contains(text, c.index) {
					t.Errorf("%s does not use %s:\n%s", c.what, c.index, text)
				}
				for _, full := range []string{"SCAN tests", "SCAN test_results", "Seq Scan"} {
					if strings.Contains(text, full+"\n") || strings.HasSuffix(text, full) || strings.Contains(text, full+" ") {
						t.Errorf("%s reads a table whole:\n%s", c.what, text)
					}
				}
			}
		})
	}
}
