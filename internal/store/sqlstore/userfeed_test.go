package sqlstore

import (
	"context"
	"testing"
	"time"

	"verdict/internal/domain"
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
		WHERE datname = current_database() AND query = 'LISTEN `+usersChannel+`'`); err != nil {
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
			t.Fatal("the user feed does not listen")
		}
	}
}
