//go:build integration

package app_test

import (
	"encoding/json"
	"encoding/xml"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"verdict/internal/testenv"
)

// The recipes of examples/recipes, built by examples/recipes/build.sh (scripts/test.sh runs it).
const (
	playwrightRecipe = "verdict-recipes/playwright:latest"
	pytestRecipe     = "verdict-recipes/pytest:latest"
	junitRecipe      = "verdict-recipes/junit5:latest"
)

// needRecipe fails the test, never skips it, when a recipe's image is missing: the recipes are
// part of what the full tier proves.
func needRecipe(t *testing.T, image string) {
	t.Helper()
	testenv.DockerHost(t)
	if out, err := exec.Command(dockerCLI, "image", "inspect", "--format", "{{.Id}}", image).CombinedOutput(); err != nil {
		t.Fatalf("image %s is missing: build it with examples/recipes/build.sh (scripts/test.sh does): %v %s", image, err, out)
	}
}

// counts are a run's tests by status, as Verdict's summary or a framework's own report has them.
type counts struct{ total, passed, failed, flaky, skipped int }

func summaryOf(r resp) counts {
	n := func(k string) int { f, _ := r.get("execution", "summary", k).(float64); return int(f) }
	return counts{n("total"), n("passed"), n("failed"), n("flaky"), n("skipped")}
}

// junitCounts reads a JUnit XML file's own totals (the <testsuites> or first <testsuite>
// attributes) as the framework wrote them; it has no flaky tests.
func junitCounts(t *testing.T, raw string) counts {
	t.Helper()
	var doc struct {
		XMLName  xml.Name
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Errors   int `xml:"errors,attr"`
		Skipped  int `xml:"skipped,attr"`
		Suites   []struct {
			Tests    int `xml:"tests,attr"`
			Failures int `xml:"failures,attr"`
			Errors   int `xml:"errors,attr"`
			Skipped  int `xml:"skipped,attr"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal([]byte(raw), &doc); err != nil {
		t.Fatalf("the framework's JUnit XML: %v\n%.500s", err, raw)
	}
	if doc.XMLName.Local == "testsuites" && doc.Tests == 0 && len(doc.Suites) > 0 {
		for _, s := range doc.Suites {
			doc.Tests += s.Tests
			doc.Failures += s.Failures
			doc.Errors += s.Errors
			doc.Skipped += s.Skipped
		}
	}
	failed := doc.Failures + doc.Errors
	return counts{doc.Tests, doc.Tests - failed - doc.Skipped, failed, 0, doc.Skipped}
}

// recipeRun queues image (with folder, when not empty), waits for its end and checks the
// status and the summary against want.
func recipeRun(t *testing.T, h *harness, a auth, image, folder, status string, want counts) (task string, r resp) {
	t.Helper()
	body := map[string]any{"image": image, "baseUrl": "http://127.0.0.1:9"}
	if folder != "" {
		body["folder"] = folder
	}
	task = h.queue(a, body)
	r = h.waitFor(a, task, 5*time.Minute, final)
	if got := summaryOf(r); r.str("execution", "status") != status || got != want {
		t.Fatalf("%s %s: %s %+v, want %s %+v\nlog:\n%s", image, folder, r.str("execution", "status"), got, status, want,
			h.do("GET", "/api/executions/"+task+"/logs", a, nil).str("logs"))
	}
	return task, r
}

// testErrors maps each test's name to its error, as the run's results have them.
func testErrors(r resp) map[string]string {
	out := map[string]string{}
	tests, _ := r.get("execution", "tests").([]any)
	for _, x := range tests {
		m, _ := x.(map[string]any)
		name, _ := m["name"].(string)
		msg, _ := m["error"].(string)
		out[name] = msg
	}
	return out
}

// wantErrors checks that each named test's error holds every listed text.
func wantErrors(t *testing.T, r resp, want map[string][]string) {
	t.Helper()
	got := testErrors(r)
	for name, texts := range want {
		msg, ok := got[name]
		if !ok {
			t.Fatalf("no test %q among %v", name, got)
		}
		for _, s := range texts {
			if !strings.Contains(msg, s) {
				t.Fatalf("test %q's error lacks %q:\n%s", name, s, msg)
			}
		}
	}
}

// reportFile is a file of a run's copied reports, by bearer.
func reportFile(t *testing.T, h *harness, a auth, orgID, task, path string) resp {
	t.Helper()
	r := h.do("GET", "/reports/"+orgID+"/"+task+"/"+path, a, nil)
	if r.status != 200 {
		t.Fatalf("report file %s of %s: %d %.300s", path, task, r.status, r.raw)
	}
	return r
}

// wantResultsReport checks that the run links Verdict's results report (the framework made no
// HTML report) and that the report shows each of texts.
func wantResultsReport(t *testing.T, h *harness, a auth, r resp, texts ...string) {
	t.Helper()
	u := ""
	arts, _ := r.get("execution", "artifacts").([]any)
	for _, x := range arts {
		if s, _ := x.(string); strings.HasSuffix(s, "/verdict-results/") {
			u, _ = strings.CutPrefix(s, publicURL)
		}
	}
	if u == "" {
		t.Fatalf("no results report among the run's reports %v", arts)
	}
	rep := h.do("GET", u, a, nil)
	for _, s := range texts {
		if rep.status != 200 || !strings.Contains(rep.raw, s) {
			t.Fatalf("the results report (%d) lacks %q:\n%.3000s", rep.status, s, rep.raw)
		}
	}
}

// TestRecipePytest runs the pytest recipe: Verdict's counts are pytest's own (its JUnit XML and
// its summary line), the run FAILED with pytest's assertion comparison and the product's
// ValueError, and the results report stands in for the HTML report pytest cannot make here.
func TestRecipePytest(t *testing.T) {
	needRecipe(t, pytestRecipe)
	for _, d := range []string{"sqlite", "postgres"} {
		t.Run(d, func(t *testing.T) {
			h := runHarness(t, d)
			admin := h.signup("pytest-recipe@example.com", "Pytest Recipe")
			a := bearer(admin.token)
			want := counts{total: 6, passed: 3, failed: 2, skipped: 1}
			task, r := recipeRun(t, h, a, pytestRecipe, "", "FAILED", want)
			if r.get("execution", "exitCode") != 1.0 {
				t.Fatalf("exit code %v, want pytest's 1", r.get("execution", "exitCode"))
			}
			if own := junitCounts(t, reportFile(t, h, a, admin.orgID, task, "junit/results.xml").raw); own != want {
				t.Fatalf("pytest's own JUnit XML counts %+v, Verdict %+v", own, want)
			}
			if log := h.do("GET", "/api/executions/"+task+"/logs", a, nil).str("logs"); !strings.Contains(log, "2 failed, 3 passed, 1 skipped") {
				t.Fatalf("pytest's summary line is not in the log:\n%s", log)
			}
			wantErrors(t, r, map[string][]string{
				"test_discount_is_applied":                 {"assert 1000 == 1100"},
				"test_order_id_from_the_confirmation_mail": {"ValueError", "invalid literal for int() with base 10: 'ORD-17'"},
			})
			wantResultsReport(t, h, a, r, "test_order_id_from_the_confirmation_mail", "ORD-17")
			// A folder runs only its tests.
			recipeRun(t, h, a, pytestRecipe, "catalog", "PASSED", counts{total: 2, passed: 2})
		})
	}
}

// TestRecipeJUnit5 runs the JUnit 5 recipe (the console launcher): Verdict's counts are the
// launcher's own XML's, a failure shows the Java exception's type and stack, and the suite of a
// test is its class, not the engine's name.
func TestRecipeJUnit5(t *testing.T) {
	needRecipe(t, junitRecipe)
	for _, d := range []string{"sqlite", "postgres"} {
		t.Run(d, func(t *testing.T) {
			h := runHarness(t, d)
			admin := h.signup("junit-recipe@example.com", "JUnit Recipe")
			a := bearer(admin.token)
			want := counts{total: 6, passed: 3, failed: 2, skipped: 1}
			task, r := recipeRun(t, h, a, junitRecipe, "", "FAILED", want)
			if own := junitCounts(t, reportFile(t, h, a, admin.orgID, task, "junit/TEST-junit-jupiter.xml").raw); own != want {
				t.Fatalf("the launcher's own XML counts %+v, Verdict %+v", own, want)
			}
			wantErrors(t, r, map[string][]string{
				"totalWithShipping()":           {"total with shipping", "expected: <4200> but was: <4000>"},
				"orderIdFromConfirmationMail()": {"java.lang.NumberFormatException", `For input string: "ORD-17"`, "at shop.Order.parseId"},
			})
			wantResultsReport(t, h, a, r, "orderIdFromConfirmationMail()", "NumberFormatException")
			tests, _ := r.get("execution", "tests").([]any)
			for _, x := range tests {
				if m := x.(map[string]any); m["suite"] != "shop.OrderTest" && m["suite"] != "shop.CartTest" {
					t.Fatalf("test %v's suite is %q, want its class", m["name"], m["suite"])
				}
			}
		})
	}
}

// TestRecipePlaywright runs the Playwright recipe (Debian's Chromium): Verdict's counts are
// Playwright's own (its JSON reporter's stats and its list reporter's summary), the flaky test
// is flaky (alone, the run is UNSTABLE), the failure keeps its expected and received text, and
// the HTML report, served by Verdict, renders in Chromium with the failure's screenshot.
func TestRecipePlaywright(t *testing.T) {
	needRecipe(t, playwrightRecipe)
	h := runHarness(t, "sqlite")
	admin := h.signup("playwright-recipe@example.com", "Playwright Recipe")
	a := bearer(admin.token)
	want := counts{total: 6, passed: 3, failed: 1, flaky: 1, skipped: 1}
	task, r := recipeRun(t, h, a, playwrightRecipe, "", "FAILED", want)
	var own struct {
		Stats struct{ Expected, Unexpected, Flaky, Skipped int }
	}
	if err := json.Unmarshal([]byte(reportFile(t, h, a, admin.orgID, task, "results/results.json").raw), &own); err != nil {
		t.Fatalf("Playwright's JSON report: %v", err)
	}
	s := own.Stats
	if got := (counts{s.Expected + s.Unexpected + s.Flaky + s.Skipped, s.Expected, s.Unexpected, s.Flaky, s.Skipped}); got != want {
		t.Fatalf("Playwright's own stats %+v, Verdict %+v", got, want)
	}
	log := h.do("GET", "/api/executions/"+task+"/logs", a, nil).str("logs")
	for _, line := range []string{"1 failed", "1 flaky", "1 skipped", "3 passed"} {
		if !strings.Contains(log, line) {
			t.Fatalf("Playwright's summary %q is not in the log:\n%s", line, log)
		}
	}
	wantErrors(t, r, map[string][]string{
		"checkout shows the order total": {"toHaveText", `Total: 42.00 EUR`, `Total: 40.00 EUR`},
	})

	// The report, opened as a user opens it: a signed link, in a real Chromium.
	if !strings.HasSuffix(r.str("execution", "htmlReportUrl"), "/playwright-report/") {
		t.Fatalf("htmlReportUrl %q, want Playwright's report", r.str("execution", "htmlReportUrl"))
	}
	tok := h.do("GET", "/api/executions/"+task+"/report-token", a, nil)
	expect(t, tok, 200, "")
	c := newChrome(t, h)
	c.run(chromedp.Navigate(tok.str("url")))
	// Its header counts as Playwright did (skipped tests are listed under their filter only).
	c.waitBodyText("the Playwright report's test list", "checkout shows the order total", "search finds a product",
		"sign-in form has email and password", "Passed3", "Failed1", "Flaky1", "Skipped1")
	// The failed test's page, with its error and its screenshot loaded from the report's data.
	if !eval[bool](c, `(a => a ? (a.click(), true) : false)([...document.querySelectorAll('a')].find(a => a.textContent.includes('checkout shows the order total')))`) {
		t.Fatal("the report has no link to the failed test")
	}
	c.waitBodyText("the failed test's page", "Total: 42.00 EUR", "Screenshots")
	deadline := time.Now().Add(30 * time.Second)
	for !eval[bool](c, `[...document.images].some(i => i.complete && i.naturalWidth > 0 && /data\/.*\.png/.test(i.src))`) {
		if time.Now().After(deadline) {
			t.Fatalf("the failure's screenshot did not load: %v", eval[[]string](c, `[...document.images].map(i => i.src + ' ' + i.naturalWidth)`))
		}
		time.Sleep(200 * time.Millisecond)
	}

	// Only the flaky test: UNSTABLE, exit 0, as Playwright itself judges it.
	_, r = recipeRun(t, h, a, playwrightRecipe, "search", "UNSTABLE", counts{total: 1, flaky: 1})
	if r.get("execution", "exitCode") != 0.0 {
		t.Fatalf("exit code %v, want Playwright's 0 for a flaky test", r.get("execution", "exitCode"))
	}
}

// waitBodyText waits until the page's text holds every one of texts.
func (c *chrome) waitBodyText(what string, texts ...string) {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		body := eval[string](c, `document.body ? document.body.innerText : ''`)
		missing := ""
		for _, s := range texts {
			if !strings.Contains(body, s) {
				missing = s
				break
			}
		}
		if missing == "" {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("%s lacks %q:\n%.2000s", what, missing, body)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
