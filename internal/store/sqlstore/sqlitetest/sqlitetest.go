// Package sqlitetest is the services' fast-test fixture: the real store (sqlstore) on a
// temporary SQLite file, and the organizations, members and outbox reads those tests share.
// It needs no service, so the tests built on it run in the short tier (go test -short);
// the end-to-end tests in internal/app cover the same rules over HTTP on PostgreSQL too.
package sqlitetest

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"
	"time"

	"verdict/internal/crypto/secretbox"
	"verdict/internal/domain"
	"verdict/internal/identity"
	"verdict/internal/store"
	"verdict/internal/store/sqlstore"
	"verdict/internal/testenv"
)

// Open opens the real store on a new SQLite file in the test's temporary folder, migrated (a
// copy of a database migrated once a test process), with the mail outbox sealed by a key of
// its own. It is closed when the test ends.
func Open(t testing.TB) *sqlstore.Store {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	testenv.MigratedSQLite(t, dir, func(dir string) error {
		st, err := sqlstore.Open(ctx, "", dir)
		if err != nil {
			return err
		}
		defer st.Close()
		return st.Migrate(ctx)
	})
	st, err := sqlstore.Open(ctx, "", dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	st.SealOutbox(Box(t, 0x4d))
	return st
}

// Box is a secretbox whose key is KeySize bytes of b.
func Box(t testing.TB, b byte) *secretbox.Box {
	t.Helper()
	box, err := secretbox.New(bytes.Repeat([]byte{b}, secretbox.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	return box
}

// Org creates an organization on plan, created at now.
func Org(t testing.TB, st store.Store, name string, plan domain.Plan, now time.Time) *domain.Organization {
	t.Helper()
	org := &domain.Organization{ID: domain.NewID(), Name: name, Slug: domain.Slugify(name) + "-" + domain.RandomHex(3),
		Plan: plan, CreatedAt: now}
	if err := st.Organizations().Create(context.Background(), org); err != nil {
		t.Fatal(err)
	}
	return org
}

// Member adds an active member with role to org, without a password (it cannot log in).
func Member(t testing.TB, st store.Store, org *domain.Organization, email string, role domain.Role) *domain.User {
	t.Helper()
	u := &domain.User{ID: domain.NewID(), OrganizationID: org.ID, Email: email, Name: "Member " + email,
		PasswordHash: "!", Role: role, Status: domain.UserActive, CreatedAt: org.CreatedAt}
	if err := st.Users().Create(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	return u
}

// As is the principal of a request from u, with u's role as stored.
func As(u *domain.User) *identity.Principal {
	return &identity.Principal{UserID: u.ID, OrgID: u.OrganizationID, Role: u.Role, User: u}
}

// mailReads moves each outbox read past the leases of the reads before it.
var mailReads atomic.Int64

// Mails returns every mail in the outbox that is not sent, oldest first (each read claims them
// all again, far in the future, as a sender would after their leases ran out).
func Mails(t testing.TB, st store.Store) []store.Mail {
	t.Helper()
	now := time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, 2*int(mailReads.Add(1)))
	got, err := st.Outbox().Claim(context.Background(), now, now.AddDate(0, 0, 1), 100000)
	if err != nil {
		t.Fatal(err)
	}
	return got
}
