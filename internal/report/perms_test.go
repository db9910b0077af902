package report

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestReportsArePrivate: every report folder and file is the service's alone, and a reports
// tree an older version left open to others is closed at its root.
func TestReportsArePrivate(t *testing.T) {
	data := t.TempDir()
	root := filepath.Join(data, "reports")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(root, 0o755); err != nil { // whatever the umask
		t.Fatal(err)
	}
	s, err := NewFSStore(data)
	if err != nil {
		t.Fatal(err)
	}
	archive := tarOf(t,
		entry{name: "junit/", typ: '5', mode: 0o777},
		entry{name: "junit/sub/", typ: '5', mode: 0o755},
		entry{name: "junit/results.xml", body: "<testsuite/>", mode: 0o666},
		entry{name: "junit/sub/run.sh", body: "#!/bin/sh", mode: 0o755},
	)
	if _, err := s.Put(context.Background(), org, task, bytes.NewReader(archive), "junit", 1<<20); err != nil {
		t.Fatal(err)
	}
	n := 0
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		want := fs.FileMode(0o600)
		if d.IsDir() {
			want = 0o700
		}
		if info.Mode().Perm() != want {
			t.Errorf("%s has mode %v, want %v", p, info.Mode().Perm(), want)
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 6 { // reports, org, task, junit, sub, two files
		t.Fatalf("walked %d entries", n)
	}
}
