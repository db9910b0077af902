//go:build integration

package app_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserOverview opens the run-health overview in a real Chromium after a passing and a
// failing run of the sample suites in one project: the pass rate, the first failed test (by
// suite and name) among the recent failures and the flaky tests (the fail suite fails tests
// the pass suite passes, a flake event in their histories), the chart drawn as SVG with its
// text alternative; another organization's failing run never shows.
func TestBrowserOverview(t *testing.T) {
	h := runHarness(t, "sqlite")
	c := newChrome(t, h)
	c.t.Logf("screenshots: %s", c.shot)

	c.open("/signup")
	c.keyboardFill("signup", [][2]string{{"name", "Grace Hopper"}, {"organizationName", "Overview Co"},
		{"email", "grace@example.com"}, {"password", password}})
	c.waitPath("/runs")
	admin := bearer(c.session())
	if admin.token == "" {
		t.Fatal("no session cookie after signup")
	}

	c.open("/overview")
	c.wantPage("overview, empty", 200, "No finished runs in the last 30 days")
	c.check("overview-empty")

	other := h.signup("intruder@example.com", "Other Co")
	h.queue(bearer(other.token), map[string]any{"image": failImage, "taskId": "other-fail"})
	proj := h.do("POST", "/api/projects", admin, map[string]any{"name": "Checkout", "image": passImage})
	expect(t, proj, 201, "")
	project := proj.str("project", "id")
	h.queue(admin, map[string]any{"projectId": project, "taskId": "overview-pass"})
	h.queue(admin, map[string]any{"projectId": project, "image": failImage, "taskId": "overview-fail"})
	for _, r := range []struct {
		a    auth
		task string
	}{{admin, "overview-pass"}, {admin, "overview-fail"}, {bearer(other.token), "other-fail"}} {
		h.waitFor(r.a, r.task, 90*time.Second, final)
	}
	failed := h.do("GET", "/api/executions/overview-fail", admin, nil)
	if failed.str("execution", "status") != "FAILED" {
		t.Fatalf("the fail suite's run: %s", failed.raw)
	}
	// The first failed test by suite, then name.
	var firstFailed, firstKey string
	tests, _ := failed.get("execution", "tests").([]any)
	for _, x := range tests {
		if m, _ := x.(map[string]any); m["status"] == "failed" {
			if k := m["suite"].(string) + "\x00" + m["name"].(string); firstFailed == "" || k < firstKey {
				firstFailed, firstKey = m["name"].(string), k
			}
		}
	}
	if firstFailed == "" {
		t.Fatalf("the failed run has no failed test: %s", failed.raw)
	}
	// The post-run chain records a run's results in its tests' histories just after its final
	// write: wait for both runs' (health passes in both).
	deadline := time.Now().Add(30 * time.Second)
	for {
		l := h.do("GET", "/api/tests?projectId="+project+"&q=health", admin, nil)
		if ts, _ := l.get("data", "tests").([]any); len(ts) == 1 && ts[0].(map[string]any)["runs"] == 2.0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the runs' results are not recorded: %s", l.raw)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// The navigation lists the overview first.
	c.open("/runs")
	if first := eval[string](c, `document.querySelector('nav[aria-label="Main"] ul a').getAttribute('href')`); first != "/overview" {
		t.Fatalf("the first navigation entry is %q", first)
	}

	c.open("/overview")
	c.wantPage("overview", 200, "Recent failures")
	if rate := c.text(`#health tbody tr:first-child [data-field="pass-rate"]`); !strings.HasPrefix(rate, "50%") ||
		!strings.Contains(rate, "1 of 2") {
		t.Fatalf("pass rate %q, want 50%% (1 of 2)", rate)
	}
	if row := c.text(`#health tbody tr:first-child th`); row != "Checkout" {
		t.Fatalf("the project row is %q, want Checkout", row)
	}
	failures := c.text("#failures tbody")
	if !strings.Contains(failures, "overview-fail") || !strings.Contains(failures, firstFailed) || strings.Contains(failures, "overview-pass") {
		t.Fatalf("recent failures: %q, want overview-fail with %q", failures, firstFailed)
	}
	// Flaky: the tests that failed in one run and passed in the other.
	passedTests := map[string]bool{}
	passTests, _ := h.do("GET", "/api/executions/overview-pass", admin, nil).get("execution", "tests").([]any)
	for _, x := range passTests {
		if m, _ := x.(map[string]any); m["status"] == "passed" {
			passedTests[m["suite"].(string)+"\x00"+m["name"].(string)] = true
		}
	}
	var flipped []string
	for _, x := range tests {
		if m, _ := x.(map[string]any); m["status"] == "failed" && passedTests[m["suite"].(string)+"\x00"+m["name"].(string)] {
			flipped = append(flipped, m["name"].(string))
		}
	}
	if len(flipped) == 0 {
		t.Fatalf("no test both passed and failed: %v; %s", passedTests, failed.raw)
	}
	flaky := c.text("#flaky tbody")
	for _, name := range flipped {
		if !strings.Contains(flaky, name) {
			t.Fatalf("flaky tests: %q, want %q", flaky, name)
		}
	}
	if rows := eval[int](c, `document.querySelectorAll('#flaky tbody tr').length`); rows != len(flipped) ||
		strings.Count(flaky, "overview-fail") != len(flipped) {
		t.Fatalf("flaky tests: %q, want %d, each last failing in overview-fail", flaky, len(flipped))
	}
	if main := c.text("main"); strings.Contains(main, "other-fail") {
		t.Fatal("another organization's run shows on the overview")
	}
	chart := eval[map[string]any](c, `(s => ({role: s.getAttribute('role'), title: s.querySelector('title').textContent,
  bars: s.querySelectorAll('rect.chart-bar').length, dots: s.querySelectorAll('circle.chart-dot').length}))(document.querySelector('svg.chart-svg'))`)
	if chart["role"] != "img" || !strings.Contains(chart["title"].(string), "Checkout") || chart["bars"] == float64(0) || chart["bars"] != chart["dots"] {
		t.Fatalf("chart: %+v", chart)
	}
	// The chart's figures are in a table too, behind a disclosure (one day, unless the two runs
	// straddled midnight UTC).
	c.run(chromedp.Click(chromedp.CSS(`figure.chart summary`)))
	if daily := c.text("figure.chart table.daily tbody"); chart["bars"] == float64(1) && !strings.Contains(daily, "50%") {
		t.Fatalf("daily figures: %q", daily)
	}
	c.check("overview")
}
