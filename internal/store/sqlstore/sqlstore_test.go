package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"verdict/internal/domain"
	"verdict/internal/store"
	"verdict/internal/store/storetest"
	"verdict/internal/testenv"
)

func openMigrated(t testing.TB, databaseURL, dataDir string) *Store {
	t.Helper()
	s, err := Open(context.Background(), databaseURL, dataDir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.SealOutbox(testMailBox(t, 7))
	return s
}

// testSQLite opens the store on a copy of a migrated SQLite database.
func testSQLite(t testing.TB) *Store {
	dir := t.TempDir()
	testenv.MigratedSQLite(t, dir, func(dir string) error {
		s, err := Open(context.Background(), "", dir)
		if err != nil {
			return err
		}
		defer s.Close()
		return s.Migrate(context.Background())
	})
	return openMigrated(t, "", dir)
}

func testPostgres(t testing.TB) *Store { return openMigrated(t, testenv.PostgresDB(t), "") }

func TestSQLite(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return testSQLite(t) })
}

func TestPostgres(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return testPostgres(t) })
}

func TestOpenSQLiteURLs(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ url, file string }{
		{"", filepath.Join(dir, "data", "verdict.db")},
		{"sqlite:" + filepath.Join(dir, "a", "x.db"), filepath.Join(dir, "a", "x.db")},
		{"sqlite://" + filepath.Join(dir, "b.db"), filepath.Join(dir, "b.db")},
		{"file:" + filepath.Join(dir, "c.db"), filepath.Join(dir, "c.db")},
	} {
		s := openMigrated(t, c.url, filepath.Join(dir, "data"))
		var file string
		if err := s.db.QueryRow(`SELECT file FROM pragma_database_list WHERE name = 'main'`).Scan(&file); err != nil {
			t.Fatal(err)
		}
		if file != c.file {
			t.Errorf("Open(%q) opened %q, want %q", c.url, file, c.file)
		}
		if s.Dialect() != "sqlite" {
			t.Errorf("Open(%q).Dialect() = %q", c.url, s.Dialect())
		}
	}
}

func TestOpenRefusesBadURLs(t *testing.T) {
	for _, u := range []string{"mysql://localhost/x", "sqlite:x.db?_txlock=deferred", "sqlite:", "redis://x"} {
		if s, err := Open(context.Background(), u, t.TempDir()); err == nil {
			s.Close()
			t.Errorf("Open(%q) succeeded", u)
		}
	}
}

// TestSQLiteConnectionSettings checks the settings every pooled connection must have: the one
// writer, and the readers, which are read-only.
func TestSQLiteConnectionSettings(t *testing.T) {
	s := testSQLite(t)
	ctx := context.Background()
	if n := s.db.Stats().MaxOpenConnections; n != 1 {
		t.Errorf("writer pool of %d connections, want 1", n)
	}
	// Hold several connections at once so the check covers more than the first one.
	conns := make([]interface{ Close() error }, 0, 4)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	check := func(db *sql.DB, want map[string]string) {
		t.Helper()
		c, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		for pragma, want := range want {
			var got string
			if err := c.QueryRowContext(ctx, "PRAGMA "+pragma).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("PRAGMA %s = %s, want %s", pragma, got, want)
			}
		}
	}
	check(s.db, map[string]string{"journal_mode": "wal", "foreign_keys": "1", "busy_timeout": "5000", "query_only": "0"})
	for range 3 {
		check(s.rdb, map[string]string{"journal_mode": "wal", "busy_timeout": "5000", "query_only": "1"})
	}
}

// TestSQLiteReadPool: SELECTs outside a transaction run on the read pool, through prepared
// statements, also while a transaction holds the writer; a write never lands there.
func TestSQLiteReadPool(t *testing.T) {
	s := testSQLite(t)
	ctx := context.Background()
	org := &domain.Organization{Name: "Acme", Slug: "acme", Plan: domain.PlanFree, CreatedAt: time.Now()}
	if err := s.Organizations().Create(ctx, org); err != nil {
		t.Fatal(err)
	}
	tx, err := s.db.BeginTx(ctx, nil) // the only writer connection
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	for range 3 {
		if _, err := s.Organizations().Get(rctx, org.ID); err != nil {
			t.Fatalf("a read while the writer is held: %v", err)
		}
	}
	if _, err := s.rdb.ExecContext(ctx, `UPDATE organizations SET name = 'x'`); err == nil {
		t.Error("the read pool took a write")
	}
	c := s.r.(*stmtCache)
	c.mu.RLock()
	n := len(c.m)
	c.mu.RUnlock()
	if n != 1 {
		t.Errorf("%d statements cached after one query three times, want 1", n)
	}
	if s.on("UPDATE executions SET status = ? RETURNING id") != s.q || s.on("\n\tSELECT 1") != s.r {
		t.Error("on: a write goes to the writer, a SELECT to the read pool")
	}
}

// TestSQLiteTransactionsTakeWriteLockAtBegin: a second writer waits at BEGIN, so a
// transaction that has begun can read and then write without SQLITE_BUSY.
func TestSQLiteTransactionsTakeWriteLockAtBegin(t *testing.T) {
	s := testSQLite(t)
	ctx := context.Background()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	begun := make(chan error, 1)
	go func() {
		tx2, err := s.db.BeginTx(ctx, nil)
		begun <- err
		if err == nil {
			tx2.Rollback()
		}
	}()
	select {
	case <-begun:
		t.Fatal("a second transaction began while the first held the write lock")
	case <-time.After(200 * time.Millisecond):
	}
	tx.Rollback()
	if err := <-begun; err != nil {
		t.Fatalf("second transaction, once the first ended: %v", err)
	}
}

func TestMigrateTwice(t *testing.T) {
	for name, s := range map[string]*Store{"sqlite": testSQLite(t), "postgres": testPostgres(t)} {
		if err := s.Migrate(context.Background()); err != nil {
			t.Errorf("%s: second Migrate: %v", name, err)
		}
	}
}

// TestMigrateConcurrently: replicas starting together on one PostgreSQL database all succeed.
func TestMigrateConcurrently(t *testing.T) {
	url := testenv.PostgresDB(t)
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		s, err := Open(context.Background(), url, "")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		wg.Go(func() { errs[i] = s.Migrate(context.Background()) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("replica %d: %v", i, err)
		}
	}
}

func TestDollarPlaceholders(t *testing.T) {
	got := dollarPlaceholders(`SELECT a FROM t WHERE x = ? AND y IN (?, ?) LIMIT ?`)
	if want := `SELECT a FROM t WHERE x = $1 AND y IN ($2, $3) LIMIT $4`; got != want {
		t.Errorf("got %s", got)
	}
}

// The request-auth hot path: every API request reads its API key by hash and its user.

func BenchmarkUsersGet(b *testing.B) {
	benchStores(b, func(b *testing.B, s *Store, users []*domain.User, _ []*domain.APIKey) {
		ctx := context.Background()
		i := 0
		for b.Loop() {
			u := users[i%len(users)]
			if _, err := s.Users().Get(ctx, u.OrganizationID, u.ID); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}

func BenchmarkAPIKeysGetByHash(b *testing.B) {
	benchStores(b, func(b *testing.B, s *Store, _ []*domain.User, keys []*domain.APIKey) {
		ctx := context.Background()
		i := 0
		for b.Loop() {
			if _, err := s.APIKeys().GetByHash(ctx, keys[i%len(keys)].Hash); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}

// benchStores runs bench on SQLite and PostgreSQL holding 1000 users with a key each, in 10
// organizations.
func benchStores(b *testing.B, bench func(b *testing.B, s *Store, users []*domain.User, keys []*domain.APIKey)) {
	for _, db := range []struct {
		name string
		open func(testing.TB) *Store
	}{{"sqlite", testSQLite}, {"postgres", testPostgres}} {
		b.Run(db.name, func(b *testing.B) {
			s := db.open(b)
			ctx := context.Background()
			var users []*domain.User
			var keys []*domain.APIKey
			err := s.InTx(ctx, func(tx store.Store) error {
				for o := range 10 {
					org := &domain.Organization{ID: domain.NewID(), Name: "Org", Slug: "org", Plan: domain.PlanTeam}
					if err := tx.Organizations().Create(ctx, org); err != nil {
						return err
					}
					for u := range 100 {
						user := &domain.User{ID: domain.NewID(), OrganizationID: org.ID,
							Email: fmt.Sprintf("u%d-%d@example.com", o, u), Role: domain.RoleDeveloper, Status: domain.UserActive}
						key := &domain.APIKey{ID: domain.NewID(), OrganizationID: org.ID, UserID: user.ID,
							Prefix: "pk_live_abcd", Hash: domain.RandomHex(32)}
						if err := tx.Users().Create(ctx, user); err != nil {
							return err
						}
						if err := tx.APIKeys().Create(ctx, key); err != nil {
							return err
						}
						users, keys = append(users, user), append(keys, key)
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
			bench(b, s, users, keys)
		})
	}
}
