package control

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"verdict/internal/testenv"

	"verdict/internal/report"
)

func storePut(t *testing.T) (*report.FSStore, putFunc) {
	t.Helper()
	s, err := report.NewFSStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return s, func(r io.Reader, into string) (int64, error) {
		return s.Put(context.Background(), "org1", "task1", r, into, 1<<40)
	}
}

func readReport(t *testing.T, s *report.FSStore, rel string) (string, bool) {
	t.Helper()
	rc, _, err := s.Open(context.Background(), "org1", "task1", rel)
	if err != nil {
		return "", false
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b), true
}

// One archive, folders interleaved with other files and one folder's entries split
// (which a tree walk never does, but the split must not care): each folder is stored whole and
// nothing else is.
func TestSplitReportsStoresEachFolder(t *testing.T) {
	s, put := storePut(t)
	src := testenv.Tar(t,
		testenv.TarEntry{Name: "junit/"},
		testenv.TarEntry{Name: "junit/a.xml", Body: "<a/>"},
		testenv.TarEntry{Name: "node_modules/m.js", Body: "module"},
		testenv.TarEntry{Name: "reports/deep/r.txt", Body: "r"},
		testenv.TarEntry{Name: "junit/b.xml", Body: "<b/>"},
		testenv.TarEntry{Name: "tests/t.spec.ts", Body: "spec"},
	)
	found, err := splitReports(bytes.NewReader(src), []string{"junit", "reports", "allure-results"}, -1, put)
	if err != nil {
		t.Fatalf("split: %v", err)
	}
	if len(found) != 2 || found["junit"].written != 8 || found["reports"].written != 1 || found["junit"].err != nil {
		t.Fatalf("found %+v", found)
	}
	for rel, want := range map[string]string{"junit/a.xml": "<a/>", "junit/b.xml": "<b/>", "reports/deep/r.txt": "r"} {
		if got, ok := readReport(t, s, rel); !ok || got != want {
			t.Errorf("%s = %q, %v", rel, got, ok)
		}
	}
	for _, rel := range []string{"node_modules/m.js", "tests/t.spec.ts", "m.js"} {
		if _, ok := readReport(t, s, rel); ok {
			t.Errorf("%s was kept", rel)
		}
	}
}

// The storage room bounds the folders together: past it nothing is kept.
func TestSplitReportsRoomIsForAllFolders(t *testing.T) {
	s, put := storePut(t)
	src := testenv.Tar(t,
		testenv.TarEntry{Name: "junit/a.xml", Body: strings.Repeat("a", 600)},
		testenv.TarEntry{Name: "reports/b.txt", Body: strings.Repeat("b", 600)},
	)
	_, err := splitReports(bytes.NewReader(src), []string{"junit", "reports"}, 1000, put)
	if !errors.Is(err, report.ErrTooLarge) {
		t.Fatalf("err %v, want ErrTooLarge", err)
	}
	if n, err := s.Size(context.Background(), "org1", "task1"); err != nil || n != 0 {
		t.Fatalf("%d bytes kept (%v), want none", n, err)
	}
	if _, err := splitReports(bytes.NewReader(src), []string{"junit", "reports"}, 1200, put); err != nil {
		t.Fatalf("within the room: %v", err)
	}
}

// A put that stops reading early (too many files) leaves its folder out, not the others, and
// does not block the split.
func TestSplitReportsPutRefusingEarly(t *testing.T) {
	s, put := storePut(t)
	refusing := func(r io.Reader, into string) (int64, error) {
		if into == "many" {
			_, _ = tar.NewReader(r).Next()
			return 0, report.ErrTooManyFiles
		}
		return put(r, into)
	}
	entries := []testenv.TarEntry{{Name: "many/"}}
	for range 50 {
		entries = append(entries, testenv.TarEntry{Name: "many/f", Body: strings.Repeat("m", 4096)})
	}
	entries = append(entries, testenv.TarEntry{Name: "zz/z.txt", Body: "z"})
	found, err := splitReports(bytes.NewReader(testenv.Tar(t, entries...)), []string{"many", "zz"}, -1, refusing)
	if err != nil || !errors.Is(found["many"].err, report.ErrTooManyFiles) || found["zz"].err != nil {
		t.Fatalf("split: %v, %+v", err, found)
	}
	if got, ok := readReport(t, s, "zz/z.txt"); !ok || got != "z" {
		t.Fatalf("zz/z.txt = %q, %v", got, ok)
	}
}

// A truncated archive keeps nothing and says so.
func TestSplitReportsTruncatedArchive(t *testing.T) {
	s, put := storePut(t)
	src := testenv.Tar(t, testenv.TarEntry{Name: "junit/a.xml", Body: strings.Repeat("a", 5000)}, testenv.TarEntry{Name: "junit/b.xml", Body: "b"})
	if _, err := splitReports(bytes.NewReader(src[:3000]), []string{"junit"}, -1, put); err == nil {
		t.Fatal("a truncated archive gave no error")
	}
	if n, _ := s.Size(context.Background(), "org1", "task1"); n != 0 {
		t.Fatalf("%d bytes kept from a truncated archive", n)
	}
}
