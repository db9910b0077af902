package sqlstore

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestSQLiteFilesArePrivate: the database and its -wal and -shm files are the service's alone
// (0600), in a new data folder created 0700, and files an older version left readable by
// others are tightened when the store opens them.
func TestSQLiteFilesArePrivate(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "data")
	custom := filepath.Join(t.TempDir(), "custom", "x.db")
	checkOpen := func(url, db string) {
		t.Helper()
		s, err := Open(ctx, url, dir)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if err := s.Migrate(ctx); err != nil { // writes, so the -wal and -shm files exist
			t.Fatal(err)
		}
		for _, p := range []string{db, db + "-wal", db + "-shm"} {
			info, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if perm := info.Mode().Perm(); perm != 0o600 {
				t.Errorf("%s has mode %v, want 0600", filepath.Base(p), perm)
			}
		}
		if info, err := os.Stat(filepath.Dir(db)); err != nil || info.Mode().Perm() != 0o700 {
			t.Errorf("the new folder of %s: %v %v, want 0700", filepath.Base(db), info.Mode().Perm(), err)
		}
	}
	db := filepath.Join(dir, "verdict.db")
	checkOpen("", db)
	checkOpen("sqlite:"+custom, custom)

	// An older version's files: 0644 (closing the last connection removed -wal and -shm).
	if err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			err = os.Chmod(p, 0o644)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	checkOpen("", db)
}
