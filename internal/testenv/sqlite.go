package testenv

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
)

var sqliteTemplate struct {
	once  sync.Once
	files map[string][]byte
	err   error
}

// MigratedSQLite fills dir with a copy of a migrated SQLite database. migrate builds one in
// the folder it is given (opening, migrating and closing the store, which checkpoints its
// write-ahead log); it runs once a test process, which keeps the files in memory, and every
// call writes them into dir, so a
// test's store opens on a database that is migrated already: a copy takes a millisecond where
// the migrations take tens, and the fast tier opens hundreds of stores.
func MigratedSQLite(t testing.TB, dir string, migrate func(dir string) error) {
	t.Helper()
	tpl := &sqliteTemplate
	tpl.once.Do(func() { tpl.files, tpl.err = migratedFiles(migrate) })
	if tpl.err != nil {
		t.Fatalf("migrating the template SQLite database: %v", tpl.err)
	}
	for name, b := range tpl.files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func migratedFiles(migrate func(dir string) error) (map[string][]byte, error) {
	dir, err := os.MkdirTemp("", "verdict-sqlite-template-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if err := migrate(dir); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	files := make(map[string][]byte, len(entries))
	for _, e := range entries {
		if files[e.Name()], err = os.ReadFile(filepath.Join(dir, e.Name())); err != nil {
			return nil, err
		}
	}
	return files, nil
}
