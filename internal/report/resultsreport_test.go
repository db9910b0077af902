package report

import (
	"archive/tar"
	"io"
	"strings"
	"testing"

	"verdict/internal/domain"
)

// The results report lists the tests by suite, failures first in each, escaped (a test's name
// and error are the suite's words), as one index.html in ResultsFolder.
func TestResultsArchive(t *testing.T) {
	tests := []domain.TestResult{
		{Suite: "b.api", Name: "lists", Status: domain.TestPassed, DurationMs: 12},
		{Suite: "a.ui", Name: "renders <b>bold</b>", Status: domain.TestPassed},
		{Suite: "b.api", Name: "creates", Status: domain.TestFailed, Error: "expected <201> but was <500>", Retries: 1},
		{Suite: "b.api", Name: "retries", Status: domain.TestFlaky},
	}
	archive, err := ResultsArchive("run-1", tests)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(archive)
	var page string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Name == ResultsFolder+"/index.html" {
			b, _ := io.ReadAll(tr)
			page = string(b)
		}
	}
	if page == "" {
		t.Fatal("no index.html in the archive")
	}
	order := []string{"Test results of run-1", "4 tests", ">a.ui<", "renders &lt;b&gt;bold&lt;/b&gt;", ">b.api<",
		"creates", "expected &lt;201&gt; but was &lt;500&gt;", "retries", "lists"}
	at := 0
	for _, w := range order {
		i := strings.Index(page[at:], w)
		if i < 0 {
			t.Fatalf("the report lacks %q after position %d:\n%s", w, at, page)
		}
		at += i + len(w)
	}
	if strings.Contains(page, "<b>bold</b>") {
		t.Fatal("a test's name is not escaped")
	}
}
