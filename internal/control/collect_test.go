package control

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"verdict/internal/report"
)

type tarEntry struct {
	name string
	body string // a directory when name ends with /
}

func tarOf(t *testing.T, entries ...tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(e.body))}
		if strings.HasSuffix(e.name, "/") {
			h.Typeflag, h.Mode, h.Size = tar.TypeDir, 0o755, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(tw, e.body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

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
	src := tarOf(t,
		tarEntry{"junit/", ""},
		tarEntry{"junit/a.xml", "<a/>"},
		tarEntry{"node_modules/m.js", "module"},
		tarEntry{"reports/deep/r.txt", "r"},
		tarEntry{"junit/b.xml", "<b/>"},
		tarEntry{"tests/t.spec.ts", "spec"},
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
	src := tarOf(t,
		tarEntry{"junit/a.xml", strings.Repeat("a", 600)},
		tarEntry{"reports/b.txt", strings.Repeat("b", 600)},
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
	entries := []tarEntry{{"many/", ""}}
	for range 50 {
		entries = append(entries, tarEntry{"many/f", strings.Repeat("m", 4096)})
	}
	entries = append(entries, tarEntry{"zz/z.txt", "z"})
	found, err := splitReports(bytes.NewReader(tarOf(t, entries...)), []string{"many", "zz"}, -1, refusing)
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
	src := tarOf(t, tarEntry{"junit/a.xml", strings.Repeat("a", 5000)}, tarEntry{"junit/b.xml", "b"})
	if _, err := splitReports(bytes.NewReader(src[:3000]), []string{"junit"}, -1, put); err == nil {
		t.Fatal("a truncated archive gave no error")
	}
	if n, _ := s.Size(context.Background(), "org1", "task1"); n != 0 {
		t.Fatalf("%d bytes kept from a truncated archive", n)
	}
}
