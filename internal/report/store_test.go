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
	"slices"
	"strings"
	"testing"
	"time"
	"verdict/internal/testenv/s3env"

	"github.com/minio/minio-go/v7"
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

// testStore is one Store implementation under the shared suite, with what the suite needs to
// look behind it.
type testStore struct {
	Store
	// files lists every file the store holds, of every run: "<org>/<task>/<path>", sorted.
	files func(t testing.TB) []string
	// plant stores a file beside Put, at "<org>/<task>/<path>".
	plant func(t testing.TB, key, body string)
}

// forEachStore runs a behaviour test against every Store implementation: FSStore on a fresh
// data folder and S3Store on a fresh bucket of the test MinIO.
func forEachStore(t *testing.T, test func(t *testing.T, s testStore)) {
	t.Run("fs", func(t *testing.T) {
		s, data := newStore(t)
		root := filepath.Join(data, "reports")
		test(t, testStore{Store: s,
			files: func(t testing.TB) []string {
				var out []string
				for _, p := range listTree(t, root) {
					if !strings.HasSuffix(p, "/") {
						out = append(out, p)
					}
				}
				return out
			},
			plant: func(t testing.TB, key, body string) {
				writeTree(t, root, map[string][]byte{key: []byte(body)})
			},
		})
	})
	t.Run("s3", func(t *testing.T) {
		test(t, newS3TestStore(t))
	})
}

func newS3TestStore(t testing.TB) testStore {
	b := s3env.Bucket(t)
	s, err := NewS3Store(S3Options{Endpoint: b.Endpoint, Bucket: b.Bucket, AccessKey: b.AccessKey, SecretKey: b.SecretKey, PathStyle: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	return testStore{Store: s,
		files: func(t testing.TB) []string {
			keys := b.Keys(t, "")
			slices.Sort(keys)
			return keys
		},
		plant: func(t testing.TB, key, body string) {
			if _, err := b.Client.PutObject(context.Background(), b.Bucket, key, strings.NewReader(body), int64(len(body)), minio.PutObjectOptions{}); err != nil {
				t.Fatal(err)
			}
		},
	}
}

// readAll opens a report file and returns its content.
func readAll(t testing.TB, s Store, o, tk, rel string) string {
	t.Helper()
	f, _, err := s.Open(context.Background(), o, tk, rel)
	if err != nil {
		t.Fatalf("Open(%q): %v", rel, err)
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func under(prefix string, paths ...string) string {
	for i, p := range paths {
		paths[i] = prefix + p
	}
	return strings.Join(paths, " ")
}

func TestPutDockerArchive(t *testing.T) {
	forEachStore(t, func(t *testing.T, s testStore) {
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
		run := org + "/" + task + "/"
		if got, want := strings.Join(s.files(t), " "), under(run, "playwright-report/data/ab12.png", "playwright-report/index.html",
			"playwright-report/trace/sw.bundle.js"); got != want {
			t.Errorf("files: %s\nwant   %s", got, want)
		}
		if got := readAll(t, s, org, task, "playwright-report/data/ab12.png"); got != "\x89PNG" {
			t.Errorf("content %q", got)
		}
		if size, err := s.Size(ctx, org, task); err != nil || size != written {
			t.Errorf("Size = %d, %v; want %d", size, err, written)
		}

		// A second folder of the same run; a single copied file lands under its own name.
		if _, err := s.Put(ctx, org, task, bytes.NewReader(tarOf(t, entry{name: "junit.xml", body: "<testsuite/>"})), "junit.xml", 1<<20); err != nil {
			t.Fatal(err)
		}
		if got := readAll(t, s, org, task, "junit.xml"); got != "<testsuite/>" {
			t.Errorf("single file: %q", got)
		}
		// Nested folder names are allowed; an archive without entries leaves nothing.
		if n, err := s.Put(ctx, org, task, bytes.NewReader(tarOf(t)), "build/test-results", 1<<20); err != nil || n != 0 {
			t.Errorf("empty archive: %d %v", n, err)
		}
		if _, _, err := s.Open(ctx, org, task, "build/test-results"); !errors.Is(err, ErrNotFound) {
			t.Errorf("empty archive left %v", err)
		}
		if n, err := s.Put(ctx, org, task, bytes.NewReader(tarOf(t, entry{name: "r/a.xml", body: "<a/>"})), "build/test-results", 1<<20); err != nil || n != 4 {
			t.Errorf("nested folder: %d %v", n, err)
		}
		if got := readAll(t, s, org, task, "build/test-results/a.xml"); got != "<a/>" {
			t.Errorf("nested folder: %q", got)
		}
		// The same folder (or file) twice would leave the storage count wrong: refused.
		if _, err := s.Put(ctx, org, task, bytes.NewReader(archive), "playwright-report", 1<<20); !errors.Is(err, fs.ErrExist) {
			t.Errorf("second put of a folder: %v", err)
		}
		if _, err := s.Put(ctx, org, task, bytes.NewReader(tarOf(t, entry{name: "junit.xml", body: "<x/>"})), "junit.xml", 1<<20); !errors.Is(err, fs.ErrExist) {
			t.Errorf("second put of a file: %v", err)
		}
		if got := readAll(t, s, org, task, "junit.xml"); got != "<testsuite/>" {
			t.Errorf("replaced: %q", got)
		}
	})
}

// TestFSStoreTree: on disk, folders are kept as the archive has them and modes are the store's.
func TestFSStoreTree(t *testing.T) {
	s, _ := newStore(t)
	archive := tarOf(t,
		entry{name: "playwright-report/", typ: tar.TypeDir, mode: 0o755},
		entry{name: "playwright-report/index.html", body: "<html>report</html>"},
		entry{name: "playwright-report/data/", typ: tar.TypeDir, mode: 0o777},
		entry{name: "playwright-report/data/ab12.png", body: "\x89PNG", mode: 0o4755},
		entry{name: "playwright-report/trace/sw.bundle.js", body: "self.addEventListener('fetch',()=>{})"},
	)
	if _, err := s.Put(context.Background(), org, task, bytes.NewReader(archive), "playwright-report", 1<<20); err != nil {
		t.Fatal(err)
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
}

func TestPutHostileArchive(t *testing.T) {
	forEachStore(t, func(t *testing.T, s testStore) {
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
		n, err := s.Put(context.Background(), org, task, bytes.NewReader(archive), "reports", 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if want := int64(len("through a symlink") + len("fine") + len("fine too")); n != want {
			t.Errorf("written %d, want %d", n, want)
		}
		if got, want := strings.Join(s.files(t), " "), under(org+"/"+task+"/reports/", "also-ok.txt", "ok.txt", "up/outside"); got != want {
			t.Errorf("files: %s\nwant   %s", got, want)
		}
	})
}

// TestFSStoreHostileArchive: nothing is written outside the data folder's report tree.
func TestFSStoreHostileArchive(t *testing.T) {
	s, data := newStore(t)
	archive := tarOf(t,
		entry{name: "../../../outside", body: "dot-dot"},
		entry{name: "r/../../../../outside", body: "dot-dot inside"},
		entry{name: "r/up", typ: tar.TypeSymlink, link: "../../.."},
		entry{name: "r/up/outside", body: "through a symlink"},
	)
	if _, err := s.Put(context.Background(), org, task, bytes.NewReader(archive), "reports", 1<<20); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(data, "outside")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("something was written outside the run: %v", err)
	}
	for _, p := range listTree(t, data) {
		if !strings.HasPrefix(p, "reports/") {
			t.Errorf("written outside the report tree: %s", p)
		}
	}
}

func TestPutTooLarge(t *testing.T) {
	forEachStore(t, func(t *testing.T, s testStore) {
		ctx := context.Background()
		archive := tarOf(t,
			entry{name: "allure-results/a-result.json", body: strings.Repeat("a", 600)},
			entry{name: "allure-results/b-result.json", body: strings.Repeat("b", 600)},
		)
		n, err := s.Put(ctx, org, task, bytes.NewReader(archive), "allure-results", 1000)
		if !errors.Is(err, ErrTooLarge) || n != 0 {
			t.Fatalf("Put = %d, %v; want ErrTooLarge", n, err)
		}
		if left := s.files(t); len(left) != 0 {
			t.Errorf("partial output left: %v", left)
		}
		if n, err := s.Put(ctx, org, task, bytes.NewReader(archive), "allure-results", 1200); err != nil || n != 1200 {
			t.Errorf("exactly at the cap: %d, %v", n, err)
		}
		// A zero budget still takes folders and empty files.
		if _, err := s.Put(ctx, org, "t2", bytes.NewReader(tarOf(t, entry{name: "x/", typ: tar.TypeDir}, entry{name: "x/empty.txt"})), "x", 0); err != nil {
			t.Errorf("zero budget, zero bytes: %v", err)
		}
		if got := readAll(t, s, org, "t2", "x/empty.txt"); got != "" {
			t.Errorf("empty file: %q", got)
		}
	})
}

func TestPutTooManyEntries(t *testing.T) {
	forEachStore(t, func(t *testing.T, s testStore) {
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
		if left := s.files(t); len(left) != 0 {
			t.Errorf("partial output left: %v", left)
		}
	})
}

func TestPutRefusals(t *testing.T) {
	forEachStore(t, func(t *testing.T, s testStore) {
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
		// A truncated archive after a complete file: what was kept goes too.
		two := tarOf(t, entry{name: "r/a.txt", body: "complete"}, entry{name: "r/b.txt", body: strings.Repeat("b", 100)})
		if _, err := s.Put(ctx, org, task, bytes.NewReader(two[:len(two)-1024-512+50]), "r", 1000); err == nil {
			t.Error("a truncated archive was accepted")
		}
		if left := s.files(t); len(left) != 0 {
			t.Errorf("left behind: %v", left)
		}
	})
}

func TestOpen(t *testing.T) {
	forEachStore(t, func(t *testing.T, s testStore) {
		ctx := context.Background()
		archive := tarOf(t, entry{name: "pr/index.html", body: "<html>"}, entry{name: "pr/data/x.png", body: "png"})
		before := time.Now().Add(-time.Minute)
		if _, err := s.Put(ctx, org, task, bytes.NewReader(archive), "playwright-report", 1<<20); err != nil {
			t.Fatal(err)
		}
		// Another organization's run with the same task ID, and an upload still in progress.
		if _, err := s.Put(ctx, "otherorg", task, bytes.NewReader(tarOf(t, entry{name: "pr/secret.txt", body: "theirs"})), "playwright-report", 1<<20); err != nil {
			t.Fatal(err)
		}
		s.plant(t, org+"/"+task+"/.put-0123/half.html", "half")

		f, info, err := s.Open(ctx, org, task, "playwright-report/data/x.png")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(f)
		if string(body) != "png" || info.Size() != 3 || info.Name() != "x.png" || info.IsDir() || info.ModTime().Before(before) {
			t.Errorf("read %q, info %s %d %v %v", body, info.Name(), info.Size(), info.IsDir(), info.ModTime())
		}
		// Served with ranges: the file seeks.
		if at, err := f.Seek(1, io.SeekStart); err != nil || at != 1 {
			t.Errorf("Seek = %d, %v", at, err)
		}
		if rest, _ := io.ReadAll(f); string(rest) != "ng" {
			t.Errorf("after Seek: %q", rest)
		}
		if end, err := f.Seek(0, io.SeekEnd); err != nil || end != 3 {
			t.Errorf("Seek to the end = %d, %v", end, err)
		}
		f.Close()
		for _, p := range []string{"", "playwright-report", "playwright-report/", "playwright-report/data"} {
			if _, _, err := s.Open(ctx, org, task, p); !errors.Is(err, ErrIsDir) {
				t.Errorf("Open(%q) = %v, want ErrIsDir", p, err)
			}
		}
		for _, p := range []string{
			"missing.html", "playwright-report/index.html/x", "playwright-report/index.html/", "playwright-repo",
			"../otherorg/" + task + "/playwright-report/secret.txt",
			"playwright-report/../../../otherorg/" + task + "/playwright-report/secret.txt", "/etc/passwd",
			"playwright-report/./index.html", "playwright-report//index.html", `playwright-report\index.html`,
			"playwright-report/index.html\x00.png", ".put-0123/half.html", ".put-0123", "%2e%2e/otherorg",
		} {
			if _, _, err := s.Open(ctx, org, task, p); !errors.Is(err, ErrNotFound) {
				t.Errorf("Open(%q) = %v, want ErrNotFound", p, err)
			}
		}
		if _, _, err := s.Open(ctx, "nope", task, "playwright-report/index.html"); !errors.Is(err, ErrNotFound) {
			t.Errorf("another organization: %v", err)
		}
		if _, _, err := s.Open(ctx, org, "nope", ""); !errors.Is(err, ErrNotFound) {
			t.Errorf("a run without reports: %v", err)
		}
		if _, _, err := s.Open(ctx, "..", task, "x"); !errors.Is(err, ErrNotFound) {
			t.Errorf("invalid organization: %v", err)
		}
	})
}

func TestSizeAndDelete(t *testing.T) {
	forEachStore(t, func(t *testing.T, s testStore) {
		ctx := context.Background()
		for _, o := range []string{org, "otherorg"} {
			archive := tarOf(t, entry{name: "r/a.txt", body: "12345"}, entry{name: "r/b/c.txt", body: "678"})
			if _, err := s.Put(ctx, o, task, bytes.NewReader(archive), "reports", 1<<20); err != nil {
				t.Fatal(err)
			}
		}
		// A task whose ID starts like this one's is another run.
		if _, err := s.Put(ctx, org, task+"0", bytes.NewReader(tarOf(t, entry{name: "r/a.txt", body: "1"})), "reports", 1<<20); err != nil {
			t.Fatal(err)
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
		if n, err := s.Size(ctx, org, task+"0"); n != 1 || err != nil {
			t.Errorf("the other run: %d, %v", n, err)
		}
		if _, err := s.Delete(ctx, org, "../otherorg"); !errors.Is(err, ErrInvalidID) {
			t.Errorf("Delete with a path: %v", err)
		}
		if _, err := s.Size(ctx, org, "a/b"); !errors.Is(err, ErrInvalidID) {
			t.Errorf("Size with a path: %v", err)
		}
	})
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
