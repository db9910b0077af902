package testenv

import (
	"context"
	"database/sql"
	"net/url"
	"strings"
	"testing"
)

// RefuseConnections makes PostgreSQL refuse the database of dsn (one PostgresDB gave), as a
// stopped or unreachable server would: its open connections are terminated and new ones
// refused, while the other tests' databases on the server are untouched. restore lets
// connections in again; it also runs at the end of the test, before the database is dropped.
func RefuseConnections(t testing.TB, dsn string) (restore func()) {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.TrimPrefix(u.Path, "/")
	admin, err := sql.Open("pgx", PostgresServer(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	exec := func(q string) {
		t.Helper()
		if _, err := admin.ExecContext(context.Background(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(`ALTER DATABASE ` + name + ` WITH ALLOW_CONNECTIONS false`)
	exec(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '` + name + `' AND pid <> pg_backend_pid()`)
	restored := false
	restore = func() {
		if !restored {
			restored = true
			exec(`ALTER DATABASE ` + name + ` WITH ALLOW_CONNECTIONS true`)
		}
	}
	t.Cleanup(restore)
	return restore
}
