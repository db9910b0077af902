package sqlstore

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"verdict/internal/domain"
	"verdict/internal/store"
	"verdict/internal/testenv"
)

// TestUnavailableErrors: an error of the database itself is store.ErrUnavailable naming the
// database (the API answers 503 and runners retry), while a refusal of the query is not: a
// full SQLite database (SQLITE_FULL, here from a page cap), a PostgreSQL server that refuses
// the database's connections, and against them a unique violation and a missing row.
func TestUnavailableErrors(t *testing.T) {
	ctx := context.Background()
	isUnavailable := func(t *testing.T, what string, err error) {
		t.Helper()
		var ue *domain.UnavailableError
		if !errors.Is(err, store.ErrUnavailable) || !errors.As(err, &ue) || ue.Dependency != "database" {
			t.Fatalf("%s: %T %v, want the database unavailable", what, err, err)
		}
	}
	org := func(i int) *domain.Organization {
		return &domain.Organization{Name: "Org " + strconv.Itoa(i) + strings.Repeat(".", 2000),
			Slug: "org-" + strconv.Itoa(i), Plan: domain.PlanFree, CreatedAt: time.Now()}
	}
	t.Run("sqlite full", func(t *testing.T) {
		s := openMigrated(t, "", t.TempDir())
		defer s.Close()
		first := org(0)
		if err := s.Organizations().Create(ctx, first); err != nil {
			t.Fatal(err)
		}
		dup := org(1)
		dup.ID = first.ID
		if err := s.Organizations().Create(ctx, dup); !errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrUnavailable) {
			t.Fatalf("same ID: %v", err)
		}
		var pages int
		if err := s.db.QueryRowContext(ctx, `PRAGMA page_count`).Scan(&pages); err != nil {
			t.Fatal(err)
		}
		if _, err := s.db.ExecContext(ctx, `PRAGMA max_page_count = `+strconv.Itoa(pages)); err != nil {
			t.Fatal(err)
		}
		var err error
		for i := 2; i < 1000 && err == nil; i++ { // fill what is left of the last pages
			err = s.Organizations().Create(ctx, org(i))
		}
		isUnavailable(t, "insert into a full database", err)
		if _, err := s.Organizations().Get(ctx, "missing"); !errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrUnavailable) {
			t.Fatalf("missing row: %v", err)
		}
	})
	t.Run("postgres refusing connections", func(t *testing.T) {
		dsn := testenv.PostgresDB(t)
		s := openMigrated(t, dsn, "")
		defer s.Close()
		testenv.RefuseConnections(t, dsn)
		_, err := s.Organizations().Get(ctx, "any")
		isUnavailable(t, "read while refused", err)
		isUnavailable(t, "transaction while refused", s.InTx(ctx, func(store.Store) error { return nil }))
		isUnavailable(t, "write while refused", s.Organizations().Create(ctx, org(1)))
	})
}
