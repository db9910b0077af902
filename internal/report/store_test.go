package report

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	org  = "6650f1c2a3b4c5d6e7f80912"
	task = "run-2026-11-22_01"
)

// entry is one archive member; typ defaults to a regular file.
type entry struct {
	name, body, link string
	typ              byte
	mode             int64
}

func tarOf(t testing.TB, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Linkname: e.link, Mode: e.mode, Format: tar.FormatPAX}
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(e.body))
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

func newStore(t testing.TB) (*FSStore, string) {
	t.Helper()
	data := t.TempDir()
	s, err := NewFSStore(data)
	if err != nil {
		t.Fatal(err)
	}
	return s, data
}

// listTree returns every path under dir (slash-separated, relative) with a marker for its type.
func listTree(t testing.TB, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case rel == ".":
		case d.IsDir():
			out = append(out, filepath.ToSlash(rel)+"/")
		case d.Type().IsRegular():
			out = append(out, filepath.ToSlash(rel))
		default:
			out = append(out, filepath.ToSlash(rel)+" (special)")
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return out
}

func TestPutDockerArchive(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	// What CopyFromContainer returns for /app/playwright-report.
	archive := tarOf(t,
		entry{name: "playwright-report/", typ: tar.TypeDir, mode: 0o755},
		entry{name: "playwright-report/index.html", body: "<html>report</html>"},
		entry{name: "playwright-report/data/", typ: tar.TypeDir, mode: 0o777},
		entry{name: "playwright-report/data/ab12.png", body: "\x89PNG", mode: 0o4755},
		entry{name: "playwright-report/trace/sw.bundle.js", body: "self.addEventListener('fetch',()=>{})"}, // parent folder not in the archive
	)
	written, err := s.Put(ctx, org, task, bytes.NewReader(archive), "playwright-report", 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(len("<html>report</html>") + 4 + len("self.addEventListener('fetch',()=>{})")); written != want {
		t.Errorf("written %d, want %d", written, want)
	}
	dir := s.LocalDir(org, task)
	if got := strings.Join(listTree(t, dir), " "); got != "playwright-report/ playwright-report/data/ playwright-report/data/ab12.png playwright-report/index.html playwright-report/trace/ playwright-report/trace/sw.bundle.js" {
		t.Errorf("tree: %s", got)
	}
	info, err := os.Stat(filepath.Join(dir, "playwright-report/data/ab12.png"))
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode()&^0o640 != 0 {
		t.Errorf("mode %v: the archive's setuid and execute bits must not survive", info.Mode())
	}
	if size, err := s.Size(ctx, org, task); err != nil || size != written {
		t.Errorf("Size = %d, %v; want %d", size, err, written)
	}

	// A second folder of the same run; a single copied file lands under its own name.
	if _, err := s.Put(ctx, org, task, bytes.NewReader(tarOf(t, entry{name: "junit.xml", body: "<testsuite/>"})), "junit.xml", 1<<20); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "junit.xml")); err != nil || string(data) != "<testsuite/>" {
		t.Errorf("single file: %q %v", data, err)
	}
	// Nested folder names are allowed; an archive without entries leaves nothing.
	if n, err := s.Put(ctx, org, task, bytes.NewReader(tarOf(t)), "build/test-results", 1<<20); err != nil || n != 0 {
		t.Errorf("empty archive: %d %v", n, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "build/test-results")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("empty archive left %v", err)
	}
	// The same folder twice would leave the storage count wrong: refused.
	if _, err := s.Put(ctx, org, task, bytes.NewReader(archive), "playwright-report", 1<<20); !errors.Is(err, fs.ErrExist) {
		t.Errorf("second put of a folder: %v", err)
	}
}

func TestPutHostileArchive(t *testing.T) {
	s, data := newStore(t)
	outside := filepath.Join(data, "outside")
	archive := tarOf(t,
		entry{name: "r/", typ: tar.TypeDir},
		entry{name: "/etc/cron.d/evil", body: "absolute"},
		entry{name: "../../../outside", body: "dot-dot"},
		entry{name: "r/../../../../outside", body: "dot-dot inside"},
		entry{name: "r/..\\..\\outside", body: "backslashes"},
		entry{name: "r/link", typ: tar.TypeSymlink, link: "/etc/passwd"},
		entry{name: "r/up", typ: tar.TypeSymlink, link: "../../.."},
		entry{name: "r/up/outside", body: "through a symlink"}, // the link was skipped: a plain folder
		entry{name: "r/hard", typ: tar.TypeLink, link: "r/link"},
		entry{name: "r/tty", typ: tar.TypeChar},
		entry{name: "r/disk", typ: tar.TypeBlock},
		entry{name: "r/pipe", typ: tar.TypeFifo},
		entry{name: "r/./ok.txt", body: "fine"},
		entry{name: "r//also-ok.txt", body: "fine too"},
	)
	if _, err := s.Put(context.Background(), org, task, bytes.NewReader(archive), "reports", 1<<20); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(listTree(t, data), " "); got != "reports/ reports/"+org+"/ reports/"+org+"/"+task+"/ reports/"+org+"/"+task+"/reports/ reports/"+org+"/"+task+"/reports/also-ok.txt reports/"+org+"/"+task+"/reports/ok.txt reports/"+org+"/"+task+"/reports/up/ reports/"+org+"/"+task+"/reports/up/outside" {
		t.Errorf("tree: %s", got)
	}
	if _, err := os.Lstat(outside); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("something was written outside the run: %v", err)
	}
}

func TestPutTooLarge(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	archive := tarOf(t,
		entry{name: "allure-results/a-result.json", body: strings.Repeat("a", 600)},
		entry{name: "allure-results/b-result.json", body: strings.Repeat("b", 600)},
	)
	n, err := s.Put(ctx, org, task, bytes.NewReader(archive), "allure-results", 1000)
	if !errors.Is(err, ErrTooLarge) || n != 0 {
		t.Fatalf("Put = %d, %v; want ErrTooLarge", n, err)
	}
	if left := listTree(t, s.LocalDir(org, task)); len(left) != 0 {
		t.Errorf("partial output left: %v", left)
	}
	if n, err := s.Put(ctx, org, task, bytes.NewReader(archive), "allure-results", 1200); err != nil || n != 1200 {
		t.Errorf("exactly at the cap: %d, %v", n, err)
	}
	// A zero budget still takes folders and empty files.
	if _, err := s.Put(ctx, org, "t2", bytes.NewReader(tarOf(t, entry{name: "x/", typ: tar.TypeDir}, entry{name: "x/empty.txt"})), "x", 0); err != nil {
		t.Errorf("zero budget, zero bytes: %v", err)
	}
}

func TestPutTooManyEntries(t *testing.T) {
	s, _ := newStore(t)
	entries := make([]entry, MaxFiles+1)
	for i := range entries {
		entries[i] = entry{name: "r/l", typ: tar.TypeSymlink, link: "x"} // cheap: skipped, but counted
	}
	entries[0] = entry{name: "r/first.txt", body: "x"}
	_, err := s.Put(context.Background(), org, task, bytes.NewReader(tarOf(t, entries...)), "r", 1<<30)
	// A count, not storage: callers must not take it for the storage limit.
	if !errors.Is(err, ErrTooManyFiles) || errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "100000") {
		t.Fatalf("err = %v", err)
	}
	if left := listTree(t, s.LocalDir(org, task)); len(left) != 0 {
		t.Errorf("partial output left: %v", left)
	}
}

func TestPutRefusals(t *testing.T) {
	s, data := newStore(t)
	ctx := context.Background()
	archive := tarOf(t, entry{name: "r/a.txt", body: "a"})
	for _, ids := range [][2]string{{"", task}, {org, ""}, {"../" + org, task}, {org, "a/b"}, {org, ".."}, {org, strings.Repeat("t", 65)}, {"o\x00", task}} {
		if _, err := s.Put(ctx, ids[0], ids[1], bytes.NewReader(archive), "r", 100); !errors.Is(err, ErrInvalidID) {
			t.Errorf("ids %q: %v", ids, err)
		}
	}
	for _, into := range []string{"", ".", "..", "../x", "a/../b", "/abs", ".hidden", "a//b", "a\\b", "a/", strings.Repeat("a/", 9) + "a"} {
		if _, err := s.Put(ctx, org, task, bytes.NewReader(archive), into, 100); err == nil {
			t.Errorf("into %q accepted", into)
		}
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Put(cancelled, org, task, bytes.NewReader(archive), "r", 100); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	truncated := tarOf(t, entry{name: "r/a.txt", body: strings.Repeat("a", 100)})[:512+50]
	if _, err := s.Put(ctx, org, task, bytes.NewReader(truncated), "r", 1000); err == nil {
		t.Error("a truncated archive was accepted")
	}
	if left := listTree(t, filepath.Join(data, "reports")); strings.Join(left, " ") != org+"/ "+org+"/"+task+"/" {
		t.Errorf("left behind: %v", left)
	}
}

func TestOpen(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	archive := tarOf(t, entry{name: "pr/index.html", body: "<html>"}, entry{name: "pr/data/x.png", body: "png"})
	if _, err := s.Put(ctx, org, task, bytes.NewReader(archive), "playwright-report", 1<<20); err != nil {
		t.Fatal(err)
	}
	// Another organization's run with the same task ID, and an upload still in progress.
	if _, err := s.Put(ctx, "otherorg", task, bytes.NewReader(tarOf(t, entry{name: "pr/secret.txt", body: "theirs"})), "playwright-report", 1<<20); err != nil {
		t.Fatal(err)
	}
	writeTree(t, s.LocalDir(org, task), map[string][]byte{".put-0123/half.html": []byte("half")})

	f, info, err := s.Open(ctx, org, task, "playwright-report/data/x.png")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(f)
	f.Close()
	if string(body) != "png" || info.Size() != 3 {
		t.Errorf("read %q size %d", body, info.Size())
	}
	for _, p := range []string{"", "playwright-report", "playwright-report/", "playwright-report/data"} {
		if _, _, err := s.Open(ctx, org, task, p); !errors.Is(err, ErrIsDir) {
			t.Errorf("Open(%q) = %v, want ErrIsDir", p, err)
		}
	}
	for _, p := range []string{
		"missing.html", "playwright-report/index.html/x", "../otherorg/" + task + "/playwright-report/secret.txt",
		"playwright-report/../../../otherorg/" + task + "/playwright-report/secret.txt", "/etc/passwd",
		"playwright-report/./index.html", "playwright-report//index.html", `playwright-report\index.html`,
		"playwright-report/index.html\x00.png", ".put-0123/half.html", "%2e%2e/otherorg",
	} {
		if _, _, err := s.Open(ctx, org, task, p); !errors.Is(err, ErrNotFound) {
			t.Errorf("Open(%q) = %v, want ErrNotFound", p, err)
		}
	}
	if _, _, err := s.Open(ctx, "nope", task, "playwright-report/index.html"); !errors.Is(err, ErrNotFound) {
		t.Errorf("another organization: %v", err)
	}
	if _, _, err := s.Open(ctx, "..", task, "x"); !errors.Is(err, ErrNotFound) {
		t.Errorf("invalid organization: %v", err)
	}
}

func TestSizeAndDelete(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	for _, o := range []string{org, "otherorg"} {
		archive := tarOf(t, entry{name: "r/a.txt", body: "12345"}, entry{name: "r/b/c.txt", body: "678"})
		if _, err := s.Put(ctx, o, task, bytes.NewReader(archive), "reports", 1<<20); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := s.Size(ctx, org, task); n != 8 || err != nil {
		t.Errorf("Size = %d, %v", n, err)
	}
	if n, err := s.Delete(ctx, org, task); n != 8 || err != nil {
		t.Errorf("Delete = %d, %v", n, err)
	}
	if n, err := s.Size(ctx, org, task); n != 0 || err != nil {
		t.Errorf("Size after delete = %d, %v", n, err)
	}
	if n, err := s.Delete(ctx, org, task); n != 0 || err != nil {
		t.Errorf("second Delete = %d, %v", n, err)
	}
	if n, err := s.Size(ctx, "otherorg", task); n != 8 || err != nil {
		t.Errorf("the other organization's run: %d, %v", n, err)
	}
	if _, err := s.Delete(ctx, org, "../otherorg"); !errors.Is(err, ErrInvalidID) {
		t.Errorf("Delete with a path: %v", err)
	}
}

func FuzzEntryPath(f *testing.F) {
	for _, s := range []string{"playwright-report/index.html", "/etc/passwd", "r/../../x", "r/./a//b", `r\..\x`, "r/\x00", "."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		rel, ok := entryPath(name)
		if !ok {
			return
		}
		if strings.HasPrefix(rel, "/") || strings.ContainsAny(rel, "\\\x00") || filepath.IsAbs(rel) {
			t.Fatalf("%q → %q", name, rel)
		}
		for _, c := range strings.Split(rel, "/") {
			if c == ".." || c == "." || (c == "" && rel != "") {
				t.Fatalf("%q → %q", name, rel)
			}
		}
	})
}

// FuzzPut feeds arbitrary archives to Put: whatever happens, nothing is created outside the
// run's folder, nothing but folders and regular files is created, and a failed Put leaves
// nothing.
func FuzzPut(f *testing.F) {
	f.Add(tarOf(f, entry{name: "r/", typ: tar.TypeDir}, entry{name: "r/a.txt", body: "a"}, entry{name: "r/../../x", body: "x"}, entry{name: "r/l", typ: tar.TypeSymlink, link: "/"}))
	f.Add(tarOf(f, entry{name: "single.xml", body: "<testsuite/>"}))
	f.Fuzz(func(t *testing.T, archive []byte) {
		data := t.TempDir()
		s, err := NewFSStore(data)
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.Put(context.Background(), org, task, bytes.NewReader(archive), "r", 1<<16)
		prefix := "reports/" + org + "/" + task + "/"
		for _, p := range listTree(t, data) {
			if strings.HasSuffix(p, "(special)") {
				t.Fatalf("created %s", p)
			}
			if len(p) > len(prefix) && (!strings.HasPrefix(p, prefix+"r") || err != nil) {
				t.Fatalf("created %s (err %v)", p, err)
			}
		}
	})
}
