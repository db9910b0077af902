package run

import (
	"archive/tar"
	"bytes"
	"io"
	"slices"
	"strings"
	"testing"

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
	met, partial, err := filterApp(bytes.NewReader(app), []string{"junit", "a/b", "reports"}, tw)
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
