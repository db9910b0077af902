package sqlstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"verdict/internal/domain"
	"verdict/internal/store"
	"verdict/internal/testenv"
)

// Two replicas on one PostgreSQL database: each keeps the users it reads, and drops them when
// the other (or anyone) writes users; while its feed does not listen it keeps nothing.
func TestUserCacheAcrossReplicas(t *testing.T) {
	url := testenv.PostgresDB(t)
	one := openMigrated(t, url, "")
	ctx := context.Background()
	org := &domain.Organization{ID: domain.NewID(), Name: "Org", Slug: "org", Plan: domain.PlanTeam}
	if err := one.Organizations().Create(ctx, org); err != nil {
		t.Fatal(err)
	}
	u := &domain.User{ID: domain.NewID(), OrganizationID: org.ID, Email: "a@example.com", Name: "A",
		PasswordHash: "x", Role: domain.RoleDeveloper, Status: domain.UserActive, CreatedAt: time.Now()}
	if err := one.Users().Create(ctx, u); err != nil {
		t.Fatal(err)
	}
	// Replica two starts after the user was written: no notification of it is on its way.
	two := openMigrated(t, url, "")
	waitListening(t, one)
	waitListening(t, two)
	roleOn := func(s *Store) domain.Role {
		t.Helper()
		got, err := s.Users().Get(ctx, org.ID, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got.Role
	}
	// A write the trigger does not report (an operator's, with it disabled) shows what is kept.
	unheard := func(role domain.Role) {
		t.Helper()
		for _, q := range []string{`ALTER TABLE users DISABLE TRIGGER users_changed`,
			`UPDATE users SET role = '` + string(role) + `' WHERE id = '` + u.ID + `'`,
			`ALTER TABLE users ENABLE TRIGGER users_changed`} {
			if _, err := one.db.ExecContext(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
	}
	eventually := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); !ok(); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal(what)
			}
		}
	}

	if got := roleOn(two); got != domain.RoleDeveloper {
		t.Fatalf("replica two reads %s", got)
	}
	unheard(domain.RoleViewer)
	if got := roleOn(two); got != domain.RoleDeveloper {
		t.Fatalf("replica two reads %s after an unheard write: it kept nothing", got)
	}

	// Replica one's write: on one at once, on two once the notification comes.
	if err := one.Users().UpdateRole(ctx, org.ID, u.ID, domain.RoleAdmin); err != nil {
		t.Fatal(err)
	}
	if got := roleOn(one); got != domain.RoleAdmin {
		t.Fatalf("replica one reads %s right after its own write", got)
	}
	start := time.Now()
	eventually("replica two never saw replica one's write", func() bool { return roleOn(two) == domain.RoleAdmin })
	t.Logf("replica two saw the write after %v", time.Since(start))

	// A write inside a transaction is heard at its commit.
	if err := one.inTx(ctx, func(tx *Store) error {
		return tx.Users().UpdateStatus(ctx, org.ID, u.ID, domain.UserSuspended)
	}); err != nil {
		t.Fatal(err)
	}
	eventually("replica two never saw the committed suspension", func() bool {
		got, err := two.Users().Get(ctx, org.ID, u.ID)
		return err == nil && got.Status == domain.UserSuspended
	})

	// Replica two's feed loses its connection: until it listens again, every read goes to the
	// database, so a write it could not hear is read at once; then it keeps users again.
	roleOn(two)
	// End both replicas' feeds (their connections look alike), then watch two.
	if _, err := one.db.ExecContext(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND application_name = '`+feedName+`'`); err != nil {
		t.Fatal(err)
	}
	eventually("replica two still counts its feed after the connection ended", func() bool { return !two.feed.live() })
	unheard(domain.RoleDeveloper)
	if got := roleOn(two); got != domain.RoleDeveloper {
		t.Fatalf("replica two reads %s while its feed is down: it served a kept user", got)
	}
	waitListening(t, two)
	roleOn(two)
	unheard(domain.RoleViewer)
	if got := roleOn(two); got != domain.RoleDeveloper {
		t.Fatalf("replica two reads %s: it keeps nothing after listening again", got)
	}
}

func waitListening(t *testing.T, s *Store) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !s.feed.live(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the write feed does not listen")
		}
	}
}

// Two replicas on one PostgreSQL database: each keeps the pages of the run list it reads, and
// a write to an organization's runs on one is on the other's very next read, every time (the
// read waits for a round trip on its feed's connection, writefeed.go); while its feed does not
// listen it keeps nothing.
func TestRunPagesAcrossReplicas(t *testing.T) {
	url := testenv.PostgresDB(t)
	one := openMigrated(t, url, "")
	ctx := context.Background()
	org := &domain.Organization{ID: domain.NewID(), Name: "Org", Slug: "org", Plan: domain.PlanTeam}
	other := &domain.Organization{ID: domain.NewID(), Name: "Other", Slug: "other", Plan: domain.PlanTeam}
	for _, o := range []*domain.Organization{org, other} {
		if err := one.Organizations().Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	queued := time.Now().UTC().Truncate(time.Millisecond)
	queue := func(s *Store, o *domain.Organization, task string) {
		t.Helper()
		queued = queued.Add(time.Second)
		if err := s.Executions().Create(ctx, &domain.Execution{ID: domain.NewID(), OrganizationID: o.ID, TaskID: task,
			Image: "e2e", Status: domain.ExecPending, QueuedAt: queued}); err != nil {
			t.Fatal(err)
		}
	}
	queue(one, org, "first")
	queue(one, other, "theirs")
	two := openMigrated(t, url, "")
	waitListening(t, one)
	waitListening(t, two)
	listed := func(s *Store) map[string]bool { // task ID → pinned
		t.Helper()
		runs, total, err := s.Executions().List(ctx, org.ID, store.ExecutionFilter{Limit: 25})
		if err != nil {
			t.Fatal(err)
		}
		if total != len(runs) {
			t.Fatalf("total %d for a page of %d runs", total, len(runs))
		}
		out := map[string]bool{}
		for _, e := range runs {
			out[e.TaskID] = e.Pinned
		}
		return out
	}
	// A run queued while the trigger is off is not heard by replica two: what it lists then
	// shows what it keeps.
	unheard := func(task string) {
		t.Helper()
		if _, err := one.db.ExecContext(ctx, `ALTER TABLE executions DISABLE TRIGGER runs_changed`); err != nil {
			t.Fatal(err)
		}
		queue(one, org, task)
		if _, err := one.db.ExecContext(ctx, `ALTER TABLE executions ENABLE TRIGGER runs_changed`); err != nil {
			t.Fatal(err)
		}
	}

	if got := listed(two); len(got) != 1 {
		t.Fatalf("replica two lists %v", got)
	}
	unheard("unheard")
	if got := listed(two); len(got) != 1 {
		t.Fatalf("replica two lists %v after an unheard write: it kept nothing", got)
	}
	if got := listed(one); len(got) != 2 {
		t.Fatalf("replica one lists %v after its own write", got)
	}

	// A fresh organization's empty list, kept on two, ends with its first run queued on one.
	fresh := &domain.Organization{ID: domain.NewID(), Name: "Fresh", Slug: "fresh", Plan: domain.PlanFree}
	if err := one.Organizations().Create(ctx, fresh); err != nil {
		t.Fatal(err)
	}
	for _, want := range []int{0, 0, 1} {
		if want == 1 {
			queue(one, fresh, "fresh-first")
		}
		runs, total, err := two.Executions().List(ctx, fresh.ID, store.ExecutionFilter{Limit: 25})
		if err != nil || len(runs) != want || total != want {
			t.Fatalf("replica two lists %d runs of %d for the fresh organization (%v), want %d", len(runs), total, err, want)
		}
	}

	// Every write on one is on two's next read, without waiting: a pin, a new run, a run of
	// another organization (which leaves this organization's page kept).
	for i := range 100 {
		pinned := i%2 == 0
		if err := one.Executions().SetPinned(ctx, org.ID, "first", pinned); err != nil {
			t.Fatal(err)
		}
		if got := listed(two); got["first"] != pinned || len(got) != 2+i/10 {
			t.Fatalf("round %d: replica two lists %v right after replica one pinned first=%v", i, got, pinned)
		}
		if i%10 == 9 {
			queue(one, org, fmt.Sprintf("new-%d", i))
			queue(one, other, fmt.Sprintf("theirs-%d", i))
		}
	}
	if got := listed(two); len(got) != 12 {
		t.Fatalf("replica two lists %d runs, want 12", len(got))
	}

	// A write inside a transaction is heard at its commit.
	if err := one.inTx(ctx, func(tx *Store) error {
		return tx.Executions().SetPinned(ctx, org.ID, "first", true)
	}); err != nil {
		t.Fatal(err)
	}
	if got := listed(two); !got["first"] {
		t.Fatal("replica two does not list the pin committed on replica one")
	}

	// Replica two's feed loses its connection: until it listens again, every read goes to the
	// database, so a write it could not hear is read at once; then it keeps pages again.
	if _, err := one.db.ExecContext(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND application_name = '`+feedName+`'`); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); two.feed.live(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("replica two still counts its feed after the connection ended")
		}
	}
	unheard("while-deaf")
	if got := listed(two); len(got) != 13 {
		t.Fatalf("replica two lists %d runs while its feed is down, want 13: it served a kept page", len(got))
	}
	waitListening(t, two)
	listed(two)
	unheard("after")
	if got := listed(two); len(got) != 13 {
		t.Fatalf("replica two lists %d runs, want the 13 it kept after listening again", len(got))
	}
}

// A feed that does not hear its own notification (as through a pooler that hands each statement
// to another server session) never counts: the replica keeps nothing and reads everything from
// the database.
func TestFeedCountsOnlyOnceItHearsItself(t *testing.T) {
	url := testenv.PostgresDB(t)
	probeStatement = func(string) string { return "SELECT 1" }
	deaf := openMigrated(t, url, "")
	probeStatement = func(channel string) string { return "NOTIFY " + channel }
	hearing := openMigrated(t, url, "")
	waitListening(t, hearing)
	time.Sleep(time.Second) // the hearing feed listened in milliseconds
	if deaf.feed.live() {
		t.Fatal("a feed that never heard its own notification counts as listening")
	}
	ctx := context.Background()
	org := &domain.Organization{ID: domain.NewID(), Name: "Org", Slug: "org", Plan: domain.PlanTeam}
	if err := hearing.Organizations().Create(ctx, org); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := hearing.Executions().Create(ctx, &domain.Execution{ID: domain.NewID(), OrganizationID: org.ID,
			TaskID: fmt.Sprintf("run-%d", i), Image: "e2e", Status: domain.ExecPending, QueuedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
		if _, n, err := deaf.Executions().List(ctx, org.ID, store.ExecutionFilter{Limit: 25}); err != nil || n != i+1 {
			t.Fatalf("the replica whose feed is deaf lists %d runs (%v), want %d", n, err, i+1)
		}
	}
}
