package sqlstore

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"verdict/internal/domain"
)

// TestManyRunsReadBoundedTests: the read of an image's many runs with their tests (the
// analyser's history) decodes at most maxReadTestBytes of their stored tests, the newest runs'
// first; the runs past the bound come without tests, and everything else as stored.
func TestManyRunsReadBoundedTests(t *testing.T) {
	for name, open := range map[string]func(testing.TB) *Store{"sqlite": testSQLite, "postgres": testPostgres} {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			ctx := context.Background()
			org := &domain.Organization{ID: domain.NewID(), Name: "Org", Slug: "org", Plan: domain.PlanEnterprise}
			if err := s.Organizations().Create(ctx, org); err != nil {
				t.Fatal(err)
			}
			// 40 runs of ~1 MiB of tests each: 40 MiB, of which 16 MiB may be read.
			now := time.Now().UTC().Truncate(time.Millisecond)
			var tests []domain.TestResult
			for i := range 250 {
				tests = append(tests, domain.TestResult{Name: fmt.Sprintf("t <%d>", i), Status: domain.TestFailed, Error: strings.Repeat("<", 4000)})
			}
			const runs = 40
			for i := range runs {
				queued := now.Add(time.Duration(i-runs) * time.Minute)
				fin := queued.Add(time.Second)
				e := &domain.Execution{ID: domain.NewID(), OrganizationID: org.ID, TaskID: fmt.Sprint("t", i), Image: "suite:1",
					Folder: "all", TimeoutSeconds: 60, Status: domain.ExecFailed, QueuedAt: queued, StartedAt: &queued, FinishedAt: &fin,
					Tests: tests, Summary: domain.Summarize(tests)}
				if err := s.Executions().Create(ctx, e); err != nil {
					t.Fatal(err)
				}
			}
			size := func(ts []domain.TestResult) int {
				n := 2
				for i := range ts {
					n += ts[i].JSONSize() + 1
				}
				return n
			}
			check := func(what string, n int, taskID func(int) string, testsOf func(int) []domain.TestResult) {
				t.Helper()
				if n != runs {
					t.Fatalf("%s: %d runs, want %d", what, n, runs)
				}
				read, with := 0, 0
				for i := range n {
					if want := fmt.Sprint("t", runs-1-i); taskID(i) != want {
						t.Fatalf("%s: run %d is %s, want %s (newest first)", what, i, taskID(i), want)
					}
					got := testsOf(i)
					switch {
					case len(got) == len(tests):
						if with != i {
							t.Fatalf("%s: run %d has its tests after a run without", what, i)
						}
						with++
						read += size(got)
					case len(got) != 0:
						t.Fatalf("%s: run %d has %d tests, want all or none", what, i, len(got))
					}
				}
				t.Logf("%s: tests of %d of %d runs read, %.1f MiB", what, with, n, float64(read)/(1<<20))
				if read > maxReadTestBytes || with < maxReadTestBytes/size(tests)-1 {
					t.Fatalf("%s: %d bytes of tests read in %d runs, want at most %d and all the runs that fit", what, read, with, maxReadTestBytes)
				}
			}
			finished, err := s.Executions().ListFinishedForImage(ctx, org.ID, "suite:1", 0)
			if err != nil {
				t.Fatal(err)
			}
			check("ListFinishedForImage", len(finished), func(i int) string { return finished[i].TaskID },
				func(i int) []domain.TestResult { return finished[i].Tests })
			if finished[runs-1].Summary.Total != len(tests) {
				t.Fatalf("a run read without its tests lost its summary: %+v", finished[runs-1].Summary)
			}
		})
	}
}
