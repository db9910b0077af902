package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"verdict/internal/domain"
	"verdict/internal/store"
)

func TestWrittenTable(t *testing.T) {
	for q, want := range map[string]string{
		"SELECT id FROM users":                           "",
		"\n\t\tSELECT COUNT(*) FROM executions":          "",
		"INSERT INTO users (id, email) VALUES (?, ?)":    "users",
		"INSERT INTO executions(id) VALUES (?)":          "executions",
		"insert into Users (id) values (?)":              "users",
		"UPDATE executions SET lease_until = ?":          "executions",
		"\n  UPDATE users SET role = ?":                  "users",
		"UPDATE organizations SET plan = ?":              "organizations",
		"INSERT INTO execution_logs (execution_id) ...":  "execution_logs",
		"DELETE FROM projects WHERE id = ?":              "*",
		"DELETE FROM executions WHERE id = ?":            "*",
		"DELETE FROM execution_logs WHERE id = ?":        "execution_logs",
		"WITH x AS (SELECT 1) UPDATE users SET role = ?": "*",
		"":               "*",
		"INSERT users":   "*",
		"UPDATE":         "*",
		"REPLACE INTO x": "*",
	} {
		if got := writtenTable(q); got != want {
			t.Errorf("writtenTable(%q) = %q, want %q", q, got, want)
		}
	}
}

// uncached is s without its read caches (the page cache and the kept run rows): what the
// database itself answers.
func uncached(s *Store) *Store {
	u := *s
	u.users, u.pages, u.runRows = nil, nil, nil
	return &u
}

// TestReadCachesFollowWrites drives every write of the users and executions repositories (and
// transactions, committed and rolled back) and checks after each that the cached reads answer
// what the database does.
func TestReadCachesFollowWrites(t *testing.T) {
	s := testSQLite(t)
	if s.users == nil || s.pages == nil {
		t.Fatal("the SQLite store has no read caches")
	}
	db := uncached(s)
	ctx := context.Background()
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	var orgs []*domain.Organization
	for i := range 2 {
		o := &domain.Organization{ID: domain.NewID(), Name: fmt.Sprint("Org ", i), Slug: fmt.Sprint("org-", i), Plan: domain.PlanEnterprise}
		must("create org", s.Organizations().Create(ctx, o))
		orgs = append(orgs, o)
	}
	a := orgs[0]
	var users []*domain.User
	newUser := func(org *domain.Organization) *domain.User {
		u := &domain.User{ID: domain.NewID(), OrganizationID: org.ID, Email: domain.NewID() + "@example.com",
			Name: "U", Role: domain.RoleDeveloper, Status: domain.UserActive, CreatedAt: now}
		must("create user", s.Users().Create(ctx, u))
		users = append(users, u)
		return u
	}
	for range 3 {
		newUser(a)
	}
	n := 0
	newRunOf := func(org *domain.Organization, st domain.ExecStatus) *domain.Execution {
		n++
		e := &domain.Execution{ID: domain.NewID(), OrganizationID: org.ID, TaskID: fmt.Sprint("t", n), Image: "suite:1",
			Folder: "all", TimeoutSeconds: 60, Status: st, QueuedAt: now.Add(time.Duration(n) * time.Second)}
		if st.Final() {
			fin := e.QueuedAt.Add(time.Second)
			e.StartedAt, e.FinishedAt = &e.QueuedAt, &fin
		}
		must("create run", s.Executions().Create(ctx, e))
		return e
	}
	newRun := func(st domain.ExecStatus) *domain.Execution { return newRunOf(a, st) }
	for range 3 {
		newRun(domain.ExecPassed)
	}
	for range 2 {
		newRun(domain.ExecPending)
	}
	// The other organization's runs: a write to one organization's runs ends the pages of its
	// own list alone, so the other's are checked after every write too.
	newRunOf(orgs[1], domain.ExecPassed)
	newRunOf(orgs[1], domain.ExecPending)
	filters := []store.ExecutionFilter{
		{Limit: 25}, {Limit: 2}, {Limit: 2, Offset: 2}, {Limit: 2, Offset: 40},
		{Limit: 25, Statuses: []domain.ExecStatus{domain.ExecPending}},
		{Limit: 25, Statuses: []domain.ExecStatus{domain.ExecRunning}},
		{Limit: 25, Statuses: []domain.ExecStatus{domain.ExecPassed, domain.ExecFailed, domain.ExecCancelled, domain.ExecError}},
		{Limit: 25, Image: "suite:1"},
	}
	step := 0
	check := func(after string) {
		t.Helper()
		step++
		for round := range 2 { // the first may fill the caches, the second reads them
			for _, u := range users {
				got, gerr := s.Users().Get(ctx, u.OrganizationID, u.ID)
				want, werr := db.Users().Get(ctx, u.OrganizationID, u.ID)
				if !errors.Is(gerr, werr) && (gerr == nil || werr == nil) || !reflect.DeepEqual(got, want) {
					t.Fatalf("after %s (round %d): Get user %s = %+v, %v; the database has %+v, %v", after, round, u.ID, got, gerr, want, werr)
				}
			}
			for _, org := range orgs {
				for _, f := range filters {
					got, gotTotal, err := s.Executions().List(ctx, org.ID, f)
					must("List", err)
					want, wantTotal, err := db.Executions().List(ctx, org.ID, f)
					must("List", err)
					if gotTotal != wantTotal || !reflect.DeepEqual(got, want) {
						t.Fatalf("after %s (round %d): List of %s %+v = %d runs of %d; the database has %d of %d",
							after, round, org.Slug, f, len(got), gotTotal, len(want), wantTotal)
					}
				}
			}
		}
	}
	check("setup")

	runs := s.Executions()
	newRun(domain.ExecPending)
	check("Create")
	pending, err := runs.ListPending(ctx, 1)
	must("ListPending", err)
	must("SetQueueReason", runs.SetQueueReason(ctx, pending[0].ID, "waiting"))
	check("SetQueueReason")
	limit := func(domain.Plan) int { return 10 }
	claimed, err := runs.Claim(ctx, "runner-1", "", "", now, now.Add(time.Minute), limit)
	must("Claim", err)
	if claimed == nil {
		t.Fatal("nothing claimed")
	}
	check("Claim")
	_, err = runs.Heartbeat(ctx, claimed.ID, "runner-1", now.Add(2*time.Minute))
	must("Heartbeat", err)
	check("Heartbeat")
	must("SetContainer", runs.SetContainer(ctx, claimed.ID, "c1"))
	check("SetContainer")
	must("Finish", runs.Finish(ctx, claimed.ID, "runner-1", store.Finish{Status: domain.ExecFailed, FinishedAt: now}))
	check("Finish")
	second, err := runs.Claim(ctx, "runner-1", "", "", now, now.Add(time.Second), limit)
	must("Claim", err)
	check("second Claim")
	ended, err := runs.EndExpired(ctx, second.ID, now.Add(time.Hour), "runner lost")
	must("EndExpired", err)
	if !ended {
		t.Fatal("EndExpired ended nothing")
	}
	check("EndExpired")
	last := newRun(domain.ExecPending)
	_, err = runs.RequestCancel(ctx, a.ID, last.TaskID, now)
	must("RequestCancel", err)
	check("RequestCancel")
	must("SetAnalysis", runs.SetAnalysis(ctx, a.ID, claimed.ID, &domain.Analysis{Status: "completed", Category: "product_bug"}))
	check("SetAnalysis")
	must("SetGate", runs.SetGate(ctx, a.ID, claimed.ID, nil))
	check("SetGate")
	must("SetPinned", runs.SetPinned(ctx, a.ID, claimed.TaskID, true))
	check("SetPinned")
	claimed.FinishedAt = &now
	must("Record", s.Tests().Record(ctx, store.RunResults{Run: claimed,
		Outcomes: []domain.TestOutcome{{Suite: "s", Name: "n", Status: domain.TestFailed}}}))
	check("Record")
	third, err := runs.Claim(ctx, "runner-1", "", "", now, now.Add(time.Second), limit)
	must("Claim", err)
	if third == nil || third.OrganizationID != orgs[1].ID {
		t.Fatalf("the third claim took %+v, want the other organization's run", third)
	}
	check("a claim of the other organization's run")
	_, err = runs.ExtendLeases(ctx, now.Add(time.Hour))
	must("ExtendLeases", err)
	check("ExtendLeases (every organization's runs)")
	must("Delete", runs.Delete(ctx, a.ID, "t1"))
	check("Delete")

	// Transactions: a write counts from the commit, and a rolled-back one not at all.
	err = s.InTx(ctx, func(tx store.Store) error {
		e := &domain.Execution{ID: domain.NewID(), OrganizationID: a.ID, TaskID: "in-tx", Image: "suite:1",
			Folder: "all", TimeoutSeconds: 60, Status: domain.ExecPending, QueuedAt: now.Add(time.Hour)}
		if err := tx.Executions().Create(ctx, e); err != nil {
			return err
		}
		if err := tx.Users().UpdateRole(ctx, a.ID, users[0].ID, domain.RoleViewer); err != nil {
			return err
		}
		check("writes inside a transaction, before its commit")
		return nil
	})
	must("InTx", err)
	check("a committed transaction")
	rollback := errors.New("rollback")
	err = s.InTx(ctx, func(tx store.Store) error {
		if err := tx.Executions().Delete(ctx, a.ID, "in-tx"); err != nil {
			return err
		}
		return tx.Users().UpdateRole(ctx, a.ID, users[0].ID, domain.RoleAdmin)
	})
	if err != nil {
		t.Fatal(err)
	}
	check("a second committed transaction")
	err = s.InTx(ctx, func(tx store.Store) error {
		if err := tx.Users().UpdateStatus(ctx, a.ID, users[1].ID, domain.UserSuspended); err != nil {
			return err
		}
		return rollback
	})
	if !errors.Is(err, rollback) {
		t.Fatalf("InTx = %v, want the rollback", err)
	}
	check("a rolled-back transaction")

	u := s.Users()
	must("UpdateRole", u.UpdateRole(ctx, a.ID, users[0].ID, domain.RoleViewer))
	check("UpdateRole")
	must("UpdateStatus", u.UpdateStatus(ctx, a.ID, users[1].ID, domain.UserSuspended))
	check("UpdateStatus")
	must("UpdateLastLogin", u.UpdateLastLogin(ctx, a.ID, users[2].ID, now))
	check("UpdateLastLogin")
	must("MoveToOrganization", u.MoveToOrganization(ctx, a.ID, users[2].ID, orgs[1].ID, domain.RoleAdmin))
	check("MoveToOrganization (the old key)")
	users[2].OrganizationID = orgs[1].ID
	check("MoveToOrganization (the new key)")
	must("Delete user", u.Delete(ctx, a.ID, users[0].ID))
	check("Delete user")
	newUser(a)
	check("Create user")
}

// TestReadCachesNeverStaleAfterAWrite: while readers keep filling the caches, every write is
// seen by the first read after it returns.
func TestReadCachesNeverStaleAfterAWrite(t *testing.T) {
	if testing.Short() {
		t.Skip("readers and writers racing for seconds: the full tier (go test without -short) runs it")
	}
	s := testSQLite(t)
	ctx := context.Background()
	org := &domain.Organization{ID: domain.NewID(), Name: "Org", Slug: "org", Plan: domain.PlanEnterprise}
	if err := s.Organizations().Create(ctx, org); err != nil {
		t.Fatal(err)
	}
	user := &domain.User{ID: domain.NewID(), OrganizationID: org.ID, Email: "a@example.com", Name: "A",
		Role: domain.RoleDeveloper, Status: domain.UserActive}
	if err := s.Users().Create(ctx, user); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				_, _ = s.Users().Get(ctx, org.ID, user.ID)
				_, _, _ = s.Executions().List(ctx, org.ID, store.ExecutionFilter{Limit: 25})
			}
		}()
	}
	defer func() { stop.Store(true); wg.Wait() }()
	roles := []domain.Role{domain.RoleViewer, domain.RoleAdmin, domain.RoleDeveloper}
	base := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	for i := range 300 {
		role := roles[i%len(roles)]
		if err := s.Users().UpdateRole(ctx, org.ID, user.ID, role); err != nil {
			t.Fatal(err)
		}
		got, err := s.Users().Get(ctx, org.ID, user.ID)
		if err != nil || got.Role != role {
			t.Fatalf("write %d: Get after UpdateRole(%s) = %v, %v", i, role, got, err)
		}
		e := &domain.Execution{ID: domain.NewID(), OrganizationID: org.ID, TaskID: fmt.Sprint("t", i), Image: "suite:1",
			Folder: "all", TimeoutSeconds: 60, Status: domain.ExecPending, QueuedAt: base.Add(time.Duration(i) * time.Second)}
		if err := s.Executions().Create(ctx, e); err != nil {
			t.Fatal(err)
		}
		list, total, err := s.Executions().List(ctx, org.ID, store.ExecutionFilter{Limit: 25})
		if err != nil || total != i+1 || len(list) == 0 || list[0].ID != e.ID {
			t.Fatalf("write %d: List after Create = %d runs of %d (%v)", i, len(list), total, err)
		}
	}
}

// TestReadCachesServeRepeatedReads: a repeated read is answered without the database — a
// change made behind the store's back is not seen — and a page of finished runs is one slice
// handed to every reader.
func TestReadCachesServeRepeatedReads(t *testing.T) {
	s := testSQLite(t)
	ctx := context.Background()
	org := &domain.Organization{ID: domain.NewID(), Name: "Org", Slug: "org", Plan: domain.PlanEnterprise}
	user := &domain.User{ID: domain.NewID(), OrganizationID: org.ID, Email: "a@example.com", Name: "A",
		Role: domain.RoleDeveloper, Status: domain.UserActive}
	if err := s.Organizations().Create(ctx, org); err != nil {
		t.Fatal(err)
	}
	if err := s.Users().Create(ctx, user); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	for i := range 3 {
		e := &domain.Execution{ID: domain.NewID(), OrganizationID: org.ID, TaskID: fmt.Sprint("t", i), Image: "suite:1",
			Folder: "all", TimeoutSeconds: 60, Status: domain.ExecPassed, QueuedAt: at, StartedAt: &at, FinishedAt: &at}
		if err := s.Executions().Create(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Users().Get(ctx, org.ID, user.ID); err != nil {
		t.Fatal(err)
	}
	f := store.ExecutionFilter{Limit: 25}
	first, _, err := s.Executions().List(ctx, org.ID, f)
	if err != nil || len(first) != 3 {
		t.Fatalf("List = %d runs, %v", len(first), err)
	}
	// Behind the store's back (as no Verdict code writes): the caches cannot know.
	if _, err := s.db.ExecContext(ctx, `UPDATE users SET role = 'admin' WHERE id = ?`, user.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.ExecContext(ctx, `DELETE FROM executions WHERE task_id = 't0'`); err != nil {
		t.Fatal(err)
	}
	u, err := s.Users().Get(ctx, org.ID, user.ID)
	if err != nil || u.Role != domain.RoleDeveloper {
		t.Fatalf("the second Get = %+v, %v; want the cached developer", u, err)
	}
	again, total, err := s.Executions().List(ctx, org.ID, f)
	if err != nil || total != 3 || len(again) != 3 || &again[0] != &first[0] {
		t.Fatalf("the second List = %d runs of %d (%v), shared %v; want the cached page", len(again), total, err,
			len(again) > 0 && &again[0] == &first[0])
	}
}

// TestRunPagesKeptBetweenTheirOrganizationsWrites: a page of runs still going is served from
// memory like one of finished runs, and a write to one organization's runs ends the pages of
// that organization alone; a write over every organization's runs ends them all.
func TestRunPagesKeptBetweenTheirOrganizationsWrites(t *testing.T) {
	s := testSQLite(t)
	ctx := context.Background()
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	var orgs []*domain.Organization
	n := 0
	queue := func(org *domain.Organization) *domain.Execution {
		t.Helper()
		n++
		e := &domain.Execution{ID: domain.NewID(), OrganizationID: org.ID, TaskID: fmt.Sprint("t", n), Image: "suite:1",
			Folder: "all", TimeoutSeconds: 60, Status: domain.ExecPending, QueuedAt: at.Add(time.Duration(n) * time.Second)}
		if err := s.Executions().Create(ctx, e); err != nil {
			t.Fatal(err)
		}
		return e
	}
	for i := range 2 {
		o := &domain.Organization{ID: domain.NewID(), Name: fmt.Sprint("Org ", i), Slug: fmt.Sprint("org-", i), Plan: domain.PlanEnterprise}
		if err := s.Organizations().Create(ctx, o); err != nil {
			t.Fatal(err)
		}
		orgs = append(orgs, o)
		queue(o)
		queue(o)
	}
	a, b := orgs[0], orgs[1]
	f := store.ExecutionFilter{Limit: 25}
	list := func(org *domain.Organization) []domain.Execution {
		t.Helper()
		page, _, err := s.Executions().List(ctx, org.ID, f)
		if err != nil {
			t.Fatal(err)
		}
		return page
	}
	firstA, firstB := list(a), list(b)
	if again := list(b); len(again) != 2 || &again[0] != &firstB[0] {
		t.Fatalf("a page of pending runs read again = %d runs, shared %v; want the kept page", len(again), len(again) > 0 && &again[0] == &firstB[0])
	}
	// Behind the store's back (as no Verdict code writes; the version moves as every UPDATE of
	// the store moves it), then a write to a's runs: a's page is read again, b's is still the
	// kept one.
	if _, err := s.db.ExecContext(ctx, `UPDATE executions SET queue_reason = 'changed behind', version = version + 1
		WHERE organization_id = ?`, b.ID); err != nil {
		t.Fatal(err)
	}
	queue(a)
	if got := list(a); len(got) != 3 || &got[0] == &firstA[0] {
		t.Fatalf("a's page after a's write = %d runs; want the 3 the database has", len(got))
	}
	if got := list(b); &got[0] != &firstB[0] || got[0].QueueReason == "changed behind" {
		t.Fatalf("b's page after a write to a's runs was read again (reason %q); want the kept page", got[0].QueueReason)
	}
	// A write over every organization's runs ends b's page too.
	if _, err := s.Executions().ExtendLeases(ctx, at.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got := list(b); got[0].QueueReason != "changed behind" {
		t.Fatalf("b's page after a write over every organization's runs = reason %q; want the database's", got[0].QueueReason)
	}
}
