package run

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"verdict/internal/testenv"
)

// names lists an archive's entries.
func names(t *testing.T, archive []byte) []string {
	t.Helper()
	var out []string
	tr := tar.NewReader(bytes.NewReader(archive))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, h.Name)
	}
}

func TestReportFoldersAndPlaceEntry(t *testing.T) {
	got := ReportFolders([]string{"/reports/", "junit", "reports/junit", "junit", "", "a/b", "a/bc"})
	if want := []string{"reports", "junit", "a/b", "a/bc"}; !slices.Equal(got, want) {
		t.Fatalf("ReportFolders = %q, want %q", got, want)
	}
	folders := []string{"reports", "a/b"}
	for name, want := range map[string]string{
		"reports/":        "reports/",
		"reports":         "reports",
		"reports/x/y.xml": "reports/x/y.xml",
		"a/b/c.txt":       "b/c.txt",
		"reports-old/x":   "",
		"a/bc/x":          "",
		"":                "",
	} {
		f, in, ok := PlaceEntry(name, folders)
		if ok != (want != "") || in != want || (ok && !strings.HasPrefix(name, f)) {
			t.Errorf("PlaceEntry(%q) = %q, %q, %v; want %q", name, f, in, ok, want)
		}
	}
}

// The upload archive holds the folders' entries under their path in /app, from the copy of
// /app and from a copy of one folder alike; the rest of /app is left out.
func TestFilterAppAndCopyFolder(t *testing.T) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	app := testenv.Tar(t,
		testenv.TarEntry{Name: "app/"},
		testenv.TarEntry{Name: "app/junit/"},
		testenv.TarEntry{Name: "app/junit/a.xml", Body: "<a/>"},
		testenv.TarEntry{Name: "app/node_modules/m.js", Body: "module"},
		testenv.TarEntry{Name: "app/a/b/r.txt", Body: "r"},
	)
	met, partial, err := filterApp(bytes.NewReader(app), []string{"junit", "a/b", "reports"}, newFinder(time.Now()), tw)
	if err != nil || partial || !met["junit"] || !met["a/b"] || met["reports"] {
		t.Fatalf("filterApp: %v, partial %v, met %v", err, partial, met)
	}
	one := testenv.Tar(t, testenv.TarEntry{Name: "reports/"}, testenv.TarEntry{Name: "reports/x/y.txt", Body: "y"}, testenv.TarEntry{Name: "reportsy", Body: "no"})
	if err := copyFolder(bytes.NewReader(one), "deep/reports", tw); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	want := []string{"junit/", "junit/a.xml", "a/b/r.txt", "deep/reports/", "deep/reports/x/y.txt"}
	if got := names(t, buf.Bytes()); !slices.Equal(got, want) {
		t.Fatalf("archive %q, want %q", got, want)
	}
}

// Result files the run wrote outside its report folders are passed on under FoundFolder, by
// their path in /app; files of the image (older than the run, such as a parser's own test
// fixtures), files that only look like results by name, and dependencies' folders are not.
func TestFilterAppFindsTheRunsResultFiles(t *testing.T) {
	started := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	now, image := started.Add(30*time.Second), started.Add(-24*time.Hour)
	junit := `<?xml version="1.0" encoding="ISO-8859-1"?><!-- pytest --><testsuites><testsuite name="s"/></testsuites>`
	playwright := `{"config": {"rootDir": "/app"}, "suites": []}`
	app := testenv.Tar(t,
		testenv.TarEntry{Name: "app/"},
		testenv.TarEntry{Name: "app/junit.xml", Body: junit, ModTime: now},
		testenv.TarEntry{Name: "app/fixtures/sample-junit.xml", Body: junit, ModTime: image},
		testenv.TarEntry{Name: "app/out/pw/results.json", Body: playwright, ModTime: now},
		testenv.TarEntry{Name: "app/out/allure/1f-result.json", Body: `{"name": "t"}`, ModTime: now},
		testenv.TarEntry{Name: "app/out/run.trx", Body: `<TestRun xmlns="http://microsoft.com/schemas/VisualStudio/TeamTest/2010"/>`, ModTime: now},
		testenv.TarEntry{Name: "app/pom.xml", Body: `<project/>`, ModTime: now},
		testenv.TarEntry{Name: "app/package.json", Body: `{"name": "suite"}`, ModTime: now},
		testenv.TarEntry{Name: "app/node_modules/m/junit.xml", Body: junit, ModTime: now},
		testenv.TarEntry{Name: "app/a/b/c/d/e/f/g/h/i/deep.xml", Body: junit, ModTime: now},
		testenv.TarEntry{Name: "app/junit/inside.xml", Body: junit, ModTime: now},
		testenv.TarEntry{Name: "app/link.xml", Type: tar.TypeSymlink, Link: "junit.xml", ModTime: now},
	)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if _, _, err := filterApp(bytes.NewReader(app), []string{"junit"}, newFinder(started), tw); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	want := []string{"found-results/junit.xml", "found-results/out/pw/results.json", "found-results/out/allure/1f-result.json",
		"found-results/out/run.trx", "junit/inside.xml"}
	if got := names(t, buf.Bytes()); !slices.Equal(got, want) {
		t.Fatalf("archive %q, want %q", got, want)
	}
	files := testenv.Untar(t, io.NopCloser(bytes.NewReader(buf.Bytes())))
	if files["found-results/junit.xml"] != junit {
		t.Fatalf("found junit.xml holds %q", files["found-results/junit.xml"])
	}

	// Bounded in number: past maxFound the rest are left.
	var many []testenv.TarEntry
	for i := range maxFound + 5 {
		many = append(many, testenv.TarEntry{Name: fmt.Sprintf("app/r/%03d.xml", i), Body: junit, ModTime: now})
	}
	buf.Reset()
	tw = tar.NewWriter(&buf)
	if _, _, err := filterApp(bytes.NewReader(testenv.Tar(t, many...)), nil, newFinder(started), tw); err != nil {
		t.Fatal(err)
	}
	tw.Close()
	if got := len(names(t, buf.Bytes())); got != maxFound {
		t.Fatalf("%d files found, want the bound %d", got, maxFound)
	}
}
