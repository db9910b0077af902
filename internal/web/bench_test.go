package web

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"verdict/internal/auth"
	"verdict/internal/crypto/secretbox"
	"verdict/internal/domain"
	"verdict/internal/executions"
	"verdict/internal/identity"
	"verdict/internal/report"
	"verdict/internal/store"
	"verdict/internal/store/sqlstore"
)

// The benchmarks render pages through the whole web.Server (session, the user re-read, the
// services, the store, the template) with the real identity and executions services over a
// real SQLite store in a temporary directory, as internal/app wires them; only e-mail, the
// login lockout and the run plane's events are left out (the pages reach none of them).

type noMail struct{}

func (noMail) Invitation(context.Context, store.OutboxRepo, *domain.Invitation, *domain.Organization, string) error {
	return nil
}
func (noMail) Welcome(context.Context, store.OutboxRepo, *domain.User, *domain.Organization) error {
	return nil
}
func (noMail) Sent() {}

type noLockout struct{}

func (noLockout) Check(context.Context, string) (bool, time.Duration, error) { return false, 0, nil }
func (noLockout) Fail(context.Context, string) (int, bool, time.Duration, error) {
	return 5, false, 0, nil
}
func (noLockout) Succeed(context.Context, string) error { return nil }

type noEvents struct{}

func (noEvents) ExecutionUpdated(*domain.Execution)         {}
func (noEvents) ExecutionLog(string, string, string, int64) {}

// benchRuns is how many runs the benchmark's organization has: spread evenly over the last
// benchDays days, so that the overview's 30-day window holds about half (more than it reads).
const (
	benchRuns = 10_000
	benchDays = 60
)

// benchServer is the dashboard over a SQLite store holding benchRuns finished runs of one
// organization (and a few of another), and the session cookie of its admin.
func benchServer(b *testing.B) (*Server, *http.Cookie) {
	b.Helper()
	ctx := context.Background()
	now := time.Date(2026, 3, 31, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	st, err := sqlstore.Open(ctx, "", b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	if err := st.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	tokens, err := auth.NewTokens([]byte(strings.Repeat("s", 32)), time.Hour, clock)
	if err != nil {
		b.Fatal(err)
	}
	box, err := secretbox.New([]byte(strings.Repeat("k", 32)))
	if err != nil {
		b.Fatal(err)
	}
	reports, err := report.NewFSStore(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	execs := executions.New(executions.Deps{Store: st, Box: box, Reports: reports, Events: noEvents{}, Clock: clock, Log: log})
	ids := identity.New(identity.Deps{Store: st, Tokens: tokens, Lockout: noLockout{}, Mailer: noMail{}, Runs: execs,
		Clock: clock, Log: log})
	sess, err := ids.Signup(ctx, identity.SignupInput{Email: "bench@example.com", Password: "Bench-passw0rd!", Name: "Bench",
		OrganizationName: "Bench Co"})
	if err != nil {
		b.Fatal(err)
	}
	other, err := ids.Signup(ctx, identity.SignupInput{Email: "other@example.com", Password: "Bench-passw0rd!", Name: "Other",
		OrganizationName: "Other Co"})
	if err != nil {
		b.Fatal(err)
	}
	orgID := sess.Org.ID
	var projects []string
	for i := range 4 {
		p := &domain.Project{ID: domain.NewID(), OrganizationID: orgID, Name: fmt.Sprintf("Suite %d", i+1),
			CreatedAt: now, UpdatedAt: now}
		if err := st.Projects().Create(ctx, p); err != nil {
			b.Fatal(err)
		}
		projects = append(projects, p.ID)
	}
	projects = append(projects, "") // runs without a project
	step := benchDays * 24 * time.Hour / benchRuns
	err = st.InTx(ctx, func(tx store.Store) error {
		for i := range benchRuns {
			if err := tx.Executions().Create(ctx, benchRun(orgID, projects[i%len(projects)], i, now.Add(-time.Duration(benchRuns-i)*step))); err != nil {
				return err
			}
		}
		for i := range 50 {
			if err := tx.Executions().Create(ctx, benchRun(other.Org.ID, "", i, now.Add(-time.Duration(i)*time.Hour))); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	s := New(Deps{Identity: ids, Executions: execs, JWT: tokens, CSRFKey: []byte("bench csrf key"), Log: log, Clock: clock})
	return s, &http.Cookie{Name: SessionCookie, Value: sess.Token}
}

// benchRun is a finished run with ten tests: mostly PASSED, every tenth FAILED with one failed
// test (a test that also passes elsewhere: flaky), some UNSTABLE and ERROR.
func benchRun(orgID, projectID string, i int, queued time.Time) *domain.Execution {
	start := queued.Add(2 * time.Second)
	end := start.Add(time.Duration(30+i%90) * time.Second)
	tests := make([]domain.TestResult, 10)
	for t := range tests {
		tests[t] = domain.TestResult{Suite: fmt.Sprintf("suite %d", t/4), Name: fmt.Sprintf("test %d", t),
			Status: domain.TestPassed, DurationMs: int64(100 * t)}
	}
	status := domain.ExecPassed
	switch {
	case i%10 == 3:
		status = domain.ExecFailed
		tests[i%7].Status, tests[i%7].Error = domain.TestFailed, "expected 200, got 500\n    at checkout.spec.ts:42"
	case i%20 == 7:
		status = domain.ExecUnstable
		tests[2].Status, tests[2].Retries = domain.TestFlaky, 1
	case i%50 == 11:
		status = domain.ExecError
		tests = nil
	}
	return &domain.Execution{ID: domain.NewID(), OrganizationID: orgID, TaskID: fmt.Sprintf("run-%05d", i), ProjectID: projectID,
		Image: "registry.example.com/shop/tests:1", Status: status, QueuedAt: queued, StartedAt: &start, FinishedAt: &end,
		ExitCode: new(int), Tests: tests, Summary: domain.Summarize(tests)}
}

func benchPage(b *testing.B, path, want string) {
	s, cookie := benchServer(b)
	req := httptest.NewRequest("GET", path, nil)
	req.AddCookie(cookie)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), want) {
			b.Fatalf("GET %s: %d %s", path, w.Code, w.Body)
		}
	}
}

// BenchmarkRunsPage renders the first page of /runs of an organization with 10,000 runs.
func BenchmarkRunsPage(b *testing.B) { benchPage(b, "/runs", "Runs 1–25 of 10000") }

// BenchmarkOverviewPage renders /overview of an organization with 10,000 runs, about 5,000 of
// them in the window (of which it reads the newest 2,000).
func BenchmarkOverviewPage(b *testing.B) {
	benchPage(b, "/overview", "Only the newest 2000 finished runs")
}
