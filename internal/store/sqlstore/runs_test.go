package sqlstore

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"verdict/internal/domain"
	"verdict/internal/store"
)

// The execution repositories' contract tests (storetest.RunExecutions) run inside storetest.Run, that is
// in TestSQLite/Executions and TestPostgres/Executions.

// TestClaimQueryHasNoPlanNumbers: the claim query's plan-limit CASE is all parameters, so no
// plan's number is written into SQL.
func TestClaimQueryHasNoPlanNumbers(t *testing.T) {
	for _, d := range []string{"0", "1", "5", "20", "-1"} {
		if strings.Contains(claimCandidate, " THEN "+d) || strings.Contains(claimCandidate, " ELSE "+d) {
			t.Errorf("claim query holds the literal limit %s:\n%s", d, claimCandidate)
		}
	}
}

// TestPostgresClaimsAreSerialised: a claim waits while another transaction holds the claim
// lock, so no two claims ever count the slots in use at the same time. (Without the lock, FIFO
// order and the conditional UPDATE stop most races, but not one where a run with an older
// queued_at commits between two claimers' reads; the contract test
// Claim/ConcurrentClaimsWithLateOlderRuns provokes that one, this test pins the mechanism.)
func TestPostgresClaimsAreSerialised(t *testing.T) {
	s := testPostgres(t)
	ctx := t.Context()
	o := &domain.Organization{ID: domain.NewID(), Name: "Org", Slug: "org", Plan: domain.PlanFree}
	if err := s.Organizations().Create(ctx, o); err != nil {
		t.Fatal(err)
	}
	e := &domain.Execution{OrganizationID: o.ID, TaskID: "t", Image: "i", Status: domain.ExecPending, QueuedAt: base0}
	if err := s.Executions().Create(ctx, e); err != nil {
		t.Fatal(err)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, claimLockKey); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		got, err := s.Executions().Claim(ctx, "r", "", "", base0, base0.Add(time.Minute),
			func(domain.Plan) int { return 1 })
		if err == nil && (got == nil || got.ID != e.ID) {
			err = fmt.Errorf("claimed %+v", got)
		}
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("Claim returned while another transaction held the claim lock: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Claim still waiting after the lock was released")
	}
}

// runStores runs bench on a fresh, migrated SQLite and PostgreSQL store.
func runStores(b *testing.B, bench func(b *testing.B, s *Store)) {
	for _, db := range []struct {
		name string
		open func(testing.TB) *Store
	}{{"sqlite", testSQLite}, {"postgres", testPostgres}} {
		b.Run(db.name, func(b *testing.B) { bench(b, db.open(b)) })
	}
}

// BenchmarkExecutionsClaim claims from a queue of 1,000 PENDING runs of 50 organizations. Each
// iteration is one Claim; outside the timer the claimed run finishes and a new run of the same
// organization is queued, so the queue stays at 1,000. In "half-at-limit" the 25 organizations
// whose runs are oldest each have a run holding their one slot, so every claim passes over
// their ~500 queued runs first.
func BenchmarkExecutionsClaim(b *testing.B) {
	for _, blocked := range []bool{false, true} {
		name := "all-free"
		if blocked {
			name = "half-at-limit"
		}
		b.Run(name, func(b *testing.B) {
			runStores(b, func(b *testing.B, s *Store) { benchClaim(b, s, blocked) })
		})
	}
}

func benchClaim(b *testing.B, s *Store, halfBlocked bool) {
	ctx := context.Background()
	limitFor := func(p domain.Plan) int { return domain.LimitsFor(p).MaxConcurrentRuns }
	const orgs, pending = 50, 1000
	var orgIDs []string
	seq := 0
	queued := base0
	queue := func(tx store.Store, orgID string, status domain.ExecStatus) error {
		seq++
		queued = queued.Add(time.Millisecond)
		return tx.Executions().Create(ctx, &domain.Execution{ID: domain.NewID(), OrganizationID: orgID,
			TaskID: fmt.Sprintf("t%d", seq), Image: "suite:pass", Status: status, QueuedAt: queued,
			RunnerID: "busy", LeaseUntil: &queued})
	}
	err := s.InTx(ctx, func(tx store.Store) error {
		for i := range orgs {
			o := &domain.Organization{ID: domain.NewID(), Name: "Org", Slug: "org", Plan: domain.PlanFree}
			if err := tx.Organizations().Create(ctx, o); err != nil {
				return err
			}
			orgIDs = append(orgIDs, o.ID)
			if halfBlocked && i < orgs/2 {
				if err := queue(tx, o.ID, domain.ExecRunning); err != nil {
					return err
				}
			}
		}
		// Organization i%50's runs: in half-at-limit, the blocked organizations' runs are all
		// older than the free ones'.
		for i := range pending {
			org := orgIDs[i%orgs]
			if halfBlocked {
				org = orgIDs[i*orgs/pending]
			}
			if err := queue(tx, org, domain.ExecPending); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	now := queued.Add(time.Hour)
	for b.Loop() {
		e, err := s.Executions().Claim(ctx, "runner", "", "", now, now.Add(time.Minute), limitFor)
		if err != nil {
			b.Fatal(err)
		}
		if e == nil {
			b.Fatal("nothing claimable")
		}
		b.StopTimer()
		if err := s.Executions().Finish(ctx, e.ID, "runner", store.Finish{Status: domain.ExecPassed, FinishedAt: now}); err != nil {
			b.Fatal(err)
		}
		if err := queue(s, e.OrganizationID, domain.ExecPending); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

// BenchmarkLogsAppend appends 4 KiB chunks to one run's log.
func BenchmarkLogsAppend(b *testing.B) {
	runStores(b, func(b *testing.B, s *Store) {
		ctx := context.Background()
		o := &domain.Organization{ID: domain.NewID(), Name: "Org", Slug: "org", Plan: domain.PlanFree}
		if err := s.Organizations().Create(ctx, o); err != nil {
			b.Fatal(err)
		}
		e := &domain.Execution{OrganizationID: o.ID, TaskID: "t", Image: "suite:pass", Status: domain.ExecRunning,
			QueuedAt: base0}
		if err := s.Executions().Create(ctx, e); err != nil {
			b.Fatal(err)
		}
		chunk := strings.Repeat(strings.Repeat("x", 127)+"\n", 32) // 4 KiB of whole lines
		b.SetBytes(int64(len(chunk)))
		seq := 0
		for b.Loop() {
			if err := s.Logs().Append(ctx, e.ID, seq, chunk); err != nil {
				b.Fatal(err)
			}
			seq++
		}
	})
}

var base0 = time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)
