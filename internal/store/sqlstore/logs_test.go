package sqlstore

import (
	"context"
	"io/fs"
	"strings"
	"testing"

	"github.com/pressly/goose/v3"

	"verdict/internal/testenv"
)

// TestLogOffsetsMigration: chunks stored before logs had byte offsets get theirs from the
// migration, so old logs read from any offset like new ones, and appends continue after them.
func TestLogOffsetsMigration(t *testing.T) {
	for _, c := range []struct{ name, url, dir string }{
		{"sqlite", "", t.TempDir()},
		{"postgres", testenv.PostgresDB(t), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			s, err := Open(ctx, c.url, c.dir)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			fsys, err := fs.Sub(migrations, "migrations/"+s.d.name)
			if err != nil {
				t.Fatal(err)
			}
			p, err := goose.NewProvider(s.d.goose, s.db, fsys, goose.WithLogger(goose.NopLogger()))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.UpTo(ctx, 7); err != nil { // the schema before log offsets
				t.Fatal(err)
			}
			exec := func(q string, args ...any) {
				t.Helper()
				if _, err := s.db.ExecContext(ctx, s.d.rebind(q), args...); err != nil {
					t.Fatal(err)
				}
			}
			exec(`INSERT INTO organizations (id, name, slug, plan, created_at) VALUES ('o1', 'O', 'o', 'free', 0)`)
			chunks := map[string][]string{
				"e1": {"first ✓\n", "\xff\x00second\n", "third\n"},
				"e2": {"other run\n"},
				"e3": {},
			}
			for id, cs := range chunks {
				exec(`INSERT INTO executions (id, organization_id, task_id, image, status, queued_at) VALUES (?, 'o1', ?, 'x', 'RUNNING', 0)`, id, id) // still running: its log grows
				// Stored out of order, with a gap in seq, as nothing forbade then.
				for i := len(cs) - 1; i >= 0; i-- {
					exec(`INSERT INTO execution_logs (execution_id, seq, chunk) VALUES (?, ?, ?)`, id, 2*i+1, []byte(cs[i]))
				}
			}
			if err := s.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			lg := s.Logs()
			for id, cs := range chunks {
				whole := strings.Join(cs, "")
				for from := 0; from <= len(whole); from++ {
					var b strings.Builder
					if _, err := lg.ReadFrom(ctx, id, int64(from), -1, func(p []byte) error { b.Write(p); return nil }); err != nil {
						t.Fatal(err)
					}
					if b.String() != whole[from:] {
						t.Fatalf("%s from %d: %q, want %q", id, from, b.String(), whole[from:])
					}
				}
			}
			if err := lg.Append(ctx, "e1", 6, "fourth\n"); err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			if _, err := lg.ReadFrom(ctx, "e1", int64(len(strings.Join(chunks["e1"], ""))), -1, func(p []byte) error { b.Write(p); return nil }); err != nil {
				t.Fatal(err)
			}
			if b.String() != "fourth\n" {
				t.Fatalf("appended after the migration: %q", b.String())
			}
		})
	}
}
