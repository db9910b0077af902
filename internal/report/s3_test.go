package report

import (
	"archive/tar"
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// testdataArchive is the tar Docker would copy of a folder "r" holding testdata's samples,
// with a symbolic link and an empty folder beside them.
func testdataArchive(t *testing.T) []byte {
	t.Helper()
	entries := []entry{{name: "r/", typ: tar.TypeDir}, {name: "r/empty/", typ: tar.TypeDir},
		{name: "r/junit/link.xml", typ: tar.TypeSymlink, link: "pytest.xml"}}
	err := filepath.WalkDir("testdata", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		entries = append(entries, entry{name: "r/" + filepath.ToSlash(strings.TrimPrefix(p, "testdata/")), body: string(data)})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return tarOf(t, entries...)
}

// walk lists a file system's entries as fs.WalkDir sees them.
func walk(t *testing.T, fsys fs.FS) []string {
	t.Helper()
	var out []string
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			p += "/"
		} else if !d.Type().IsRegular() {
			p += " (special)"
		}
		out = append(out, p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// S3Store.FS presents a run's objects as the folder FSStore keeps (less its empty folders),
// and ParseFS reads the same results from it as ParseDir from the folder.
func TestS3FSMatchesTheFolder(t *testing.T) {
	ctx := context.Background()
	archive := testdataArchive(t)
	disk, _ := newStore(t)
	bucket := newS3TestStore(t).Store.(*S3Store)
	for _, s := range []Store{disk, bucket} {
		if _, err := s.Put(ctx, org, task, bytes.NewReader(archive), "reports", 1<<24); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Put(ctx, org, task, bytes.NewReader(tarOf(t, entry{name: "junit.xml", body: "<testsuite/>"})), "junit.xml", 1<<20); err != nil {
			t.Fatal(err)
		}
	}
	fsys, err := bucket.FS(ctx, org, task)
	if err != nil {
		t.Fatal(err)
	}
	var onDisk []string
	for _, p := range walk(t, os.DirFS(disk.LocalDir(org, task))) {
		if p != "reports/empty/" {
			onDisk = append(onDisk, p)
		}
	}
	if got := walk(t, fsys); !reflect.DeepEqual(got, onDisk) {
		t.Errorf("S3 walk:\n%v\nfolder walk:\n%v", got, onDisk)
	}

	want, wantErr := ParseDir(disk.LocalDir(org, task))
	got, gotErr := ParseFS(fsys)
	if len(want) == 0 || !reflect.DeepEqual(got, want) || (gotErr == nil) != (wantErr == nil) {
		t.Fatalf("ParseFS: %d tests, %v; ParseDir: %d tests, %v", len(got), gotErr, len(want), wantErr)
	}

	for _, name := range []string{"missing", "reports/junit/pytest.xml/x", "reports/empt"} {
		if _, err := fsys.Open(name); !os.IsNotExist(err) {
			t.Errorf("Open(%q) = %v", name, err)
		}
	}
	for _, name := range []string{"../x", "/reports", "reports/"} {
		if _, err := fsys.Open(name); err == nil {
			t.Errorf("Open(%q) accepted", name)
		}
	}
	if _, err := bucket.FS(ctx, "..", task); err == nil {
		t.Error("FS of an invalid organization")
	}
}

// Names an object store cannot take (not UTF-8, keys past 1024 bytes) are skipped, as links
// are, rather than refusing the whole folder.
func TestS3SkipsNamesTheStoreRefuses(t *testing.T) {
	s := newS3TestStore(t)
	archive := tarOf(t, entry{name: "r/ok.txt", body: "ok"}, entry{name: "r/bad-\xff.txt", body: "latin-1"},
		entry{name: "r/" + strings.Repeat("d/", 480) + "long.txt", body: "long"}) // a key of 1,100 bytes
	into := strings.Repeat("x", 120)
	n, err := s.Put(context.Background(), org, task, bytes.NewReader(archive), into, 1<<20)
	if err != nil || n != 2 {
		t.Fatalf("Put = %d, %v", n, err)
	}
	if got := strings.Join(s.files(t), " "); got != org+"/"+task+"/"+into+"/ok.txt" {
		t.Fatalf("files: %s", got)
	}
}
