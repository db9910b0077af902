package report

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"verdict/internal/domain"
)

// writeTree creates files (slash-separated name → content) under dir.
func writeTree(t testing.TB, dir string, files map[string][]byte) {
	t.Helper()
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// sampleRun lays out a run folder as the runner copies it: the Playwright project of the
// samples wrote JSON, JUnit, Allure results and its HTML report.
func sampleRun(t testing.TB) string {
	dir := t.TempDir()
	files := map[string][]byte{
		"test-results/results.json":             readTestdata(t, "playwright/results.json"),
		"junit/junit.xml":                       readTestdata(t, "junit/playwright.xml"),
		"playwright-report/index.html":          []byte("<!DOCTYPE html><html><script>window.playwrightReportBase64='data:application/zip;base64,UEsFBgAAAAAAAAAAAAAAAAAAAAAAAA=='</script></html>"),
		"playwright-report/data/ab12.png":       []byte("\x89PNG\r\n"),
		"test-results/.last-run.json":           []byte(`{"status":"failed","failedTests":["a-b"]}`),
		"test-results/checkout/trace.json":      []byte(`{"suites":"not a report"}`),
		"allure-results/ignored-container.json": []byte(`{"uuid":"c","children":[]}`),
	}
	for i, data := range allureSample(t) {
		files["allure-results/"+string(rune('a'+i))+"-result.json"] = data
	}
	writeTree(t, dir, files)
	return dir
}

func TestParseDirPrefersPlaywrightThenAllureThenJUnit(t *testing.T) {
	dir := sampleRun(t)
	summary := func() (domain.Summary, []domain.TestResult) {
		t.Helper()
		got, err := ParseDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		return domain.Summarize(got), got
	}

	s, got := summary()
	if s != (domain.Summary{Total: 14, Passed: 6, Failed: 4, Skipped: 2, Flaky: 2}) || !strings.HasPrefix(got[0].Suite, "[api]") {
		t.Fatalf("with all three formats: %+v, first suite %q; want Playwright JSON's", s, got[0].Suite)
	}
	if err := os.Remove(filepath.Join(dir, "test-results/results.json")); err != nil {
		t.Fatal(err)
	}
	s, got = summary()
	if s != (domain.Summary{Total: 14, Passed: 6, Failed: 4, Skipped: 2, Flaky: 2}) || strings.HasPrefix(got[0].Suite, "[") {
		t.Fatalf("with Allure and JUnit: %+v; want Allure's", s)
	}
	if err := os.RemoveAll(filepath.Join(dir, "allure-results")); err != nil {
		t.Fatal(err)
	}
	s, _ = summary()
	if s != (domain.Summary{Total: 14, Passed: 8, Failed: 4, Skipped: 2}) {
		t.Fatalf("with JUnit alone: %+v", s)
	}
}

func TestParseDirJUnitFiles(t *testing.T) {
	dir := t.TempDir()
	surefire := readTestdata(t, "junit/TEST-com.acme.checkout.PaymentServiceTest.xml")
	writeTree(t, dir, map[string][]byte{
		"target/surefire-reports/TEST-com.acme.checkout.PaymentServiceTest.xml": surefire,
		"reports/TEST-com.acme.checkout.PaymentServiceTest.xml":                 surefire, // the same file copied twice
		"junit/pytest.xml":       readTestdata(t, "junit/pytest.xml"),
		"junit/pom.xml":          []byte(`<project><modelVersion>4.0.0</modelVersion></project>`),
		"junit/broken.xml":       []byte(`<testsuite><testcase name="cut off`),
		"reports/big/trace.webm": []byte("not read"),
		"reports/testng.xml":     []byte(`<testng-results/>`),
		"reports/UPPER.XML":      []byte(`<testsuite name="s"><testcase name="loud"/></testsuite>`),
	})
	got, err := ParseDir(dir)
	if s := domain.Summarize(got); s != (domain.Summary{Total: 16, Passed: 7, Failed: 4, Skipped: 3, Flaky: 2}) {
		t.Errorf("summary %+v", s)
	}
	if err == nil || !strings.Contains(err.Error(), "junit/broken.xml") || strings.Contains(err.Error(), "pom.xml") {
		t.Errorf("err = %v; want the broken file named and nothing about other XML", err)
	}
}

func TestParseDirNeverFollowsLinks(t *testing.T) {
	outside := t.TempDir()
	writeTree(t, outside, map[string][]byte{"secret/junit.xml": readTestdata(t, "junit/pytest.xml")})
	dir := t.TempDir()
	writeTree(t, dir, map[string][]byte{"junit/own.xml": []byte(`<testsuite name="s"><testcase name="own"/></testsuite>`)})
	for link, target := range map[string]string{
		"junit/linked.xml": filepath.Join(outside, "secret/junit.xml"),
		"linked-dir":       filepath.Join(outside, "secret"),
		"junit/rel.xml":    "../../" + filepath.Base(outside) + "/secret/junit.xml",
	} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	got, err := ParseDir(dir)
	if err != nil || len(got) != 1 || got[0].Name != "own" {
		t.Fatalf("got %v, %v; want only the run's own test", got, err)
	}
}

func TestParseDirBounds(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string][]byte{"junit/ok.xml": []byte(`<testsuite name="s"><testcase name="ok"/></testsuite>`)})
	// A file past the size bound is refused without being read (sparse, so the test is quick).
	f, err := os.Create(filepath.Join(dir, "junit/huge.xml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(maxFileBytes + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	deep := strings.Repeat("d/", maxDepth+1)
	writeTree(t, dir, map[string][]byte{deep + "deep.xml": []byte(`<testsuite><testcase name="deep"/></testsuite>`)})

	got, err := ParseDir(dir)
	if len(got) != 1 || got[0].Name != "ok" {
		t.Errorf("got %v", got)
	}
	if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "huge.xml") || !strings.Contains(err.Error(), "nested deeper") {
		t.Errorf("err = %v", err)
	}
}

func TestParseDirMissingOrEmpty(t *testing.T) {
	got, err := ParseDir(filepath.Join(t.TempDir(), "never-copied"))
	if got != nil || err != nil {
		t.Errorf("missing root: %v %v", got, err)
	}
	got, err = ParseDir(t.TempDir())
	if got != nil || err != nil {
		t.Errorf("empty root: %v %v", got, err)
	}
}
