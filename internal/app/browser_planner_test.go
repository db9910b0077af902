//go:build integration

package app_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"verdict/internal/integrations/trackertest"
)

// browserCSV is a small export: two test cases, and a record without a title that the import
// skips with its line.
const browserCSV = `Title,Section,Priority,Steps,Expected Result
Refund an order,Orders,High,Open the order,The order is shown
,Orders,Low,,
Search the catalogue,Catalogue,Medium,Type a word,Matching products are listed
`

// waitMain waits until the page's main text holds want (a form's answer replacing the page it
// was posted from, at the same path).
func (c *chrome) waitMain(want string) {
	c.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		main, err := chromedp.Run(c.ctx, chromedp.Evaluate[string](`(m => m ? m.innerText : '')(document.querySelector('main'))`))
		if err == nil && strings.Contains(main, want) {
			c.run(chromedp.WaitReady(chromedp.CSS("body")))
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("the page never showed %q; main: %s", want, main)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestBrowserPlannerAndTrackers drives the test cases, the automation planner, the tracker
// integrations and a run's ticket button in a real Chromium, against a real Verdict running
// the sample suites on the Docker engine and a fake Linear.
func TestBrowserPlannerAndTrackers(t *testing.T) {
	h, lin, _ := trackerHarness(t, "sqlite")
	c := newChrome(t, h)
	c.t.Logf("screenshots: %s", c.shot)

	admin := h.signup("planner-browser@example.com", "Planner Browser Co")
	c.open("/login")
	c.run(chromedp.SendKeys(chromedp.ID("email"), admin.email), chromedp.SendKeys(chromedp.ID("password"), password),
		chromedp.Submit(chromedp.ID("password")))
	c.waitPath("/runs")

	// Before any project: the empty states.
	c.open("/test-cases")
	c.wantPage("test cases, no project", 200, "No projects yet")
	c.open("/planner")
	c.wantPage("planner, no project", 200, "No projects yet")
	project := h.project(admin, "Shop")
	c.open("/planner")
	c.wantPage("planner, flag off", 200, "not enabled")
	c.check("planner-off")
	expect(t, h.do("PATCH", "/api/organization/features", bearer(admin.token),
		map[string]any{"aiFeatures": map[string]any{"automationPlanner": true}}), 200, "")

	c.open("/test-cases")
	c.wantPage("test cases, empty", 200, "No test cases in Shop yet")
	c.check("test-cases-empty")

	// A test case through the form.
	c.run(chromedp.SendKeys(chromedp.ID("cf-title"), "Pay by card"), chromedp.SendKeys(chromedp.ID("cf-suite"), "Checkout"),
		chromedp.SetValue(chromedp.ID("cf-priority"), "critical"), chromedp.SendKeys(chromedp.ID("cf-tags"), "smoke, payments"),
		chromedp.SetValue(chromedp.ID("cf-steps"), "Add an item | The cart shows it\nPay by card | The order is confirmed"),
		chromedp.Click(chromedp.CSS("#new-case-form button[type=submit]")))
	c.waitMain("Test case Pay by card created.")
	c.wantPage("test case created", 200, "Test case Pay by card created.")
	if row := c.text("#test-cases tbody"); !strings.Contains(row, "Pay by card") || !strings.Contains(row, "critical") {
		t.Fatalf("the new test case is not listed: %s", row)
	}

	// The CSV import, through the file input.
	file := filepath.Join(t.TempDir(), "cases.csv")
	if err := os.WriteFile(file, []byte(browserCSV), 0o644); err != nil {
		t.Fatal(err)
	}
	c.run(chromedp.SetUploadFiles(chromedp.ID("imp-file"), []string{file}), chromedp.Click(chromedp.CSS("#import-form button[type=submit]")))
	c.waitMain("imported,")
	c.wantPage("import", 200, "2 imported, 0 updated, 1 skipped")
	if skipped := c.text("#import-skipped tbody"); !strings.Contains(skipped, "3") || !strings.Contains(strings.ToLower(skipped), "title") {
		t.Fatalf("the skipped record: %q", skipped)
	}
	if rows := c.text("#test-cases tbody"); !strings.Contains(rows, "Refund an order") || !strings.Contains(rows, "Search the catalogue") {
		t.Fatalf("imported test cases not listed: %s", rows)
	}
	c.check("test-cases")
	c.run(chromedp.Click(chromedp.CSS(`#test-cases a`)))
	c.waitPathPrefix("/test-cases/")
	c.wantPage("a test case", 200, "Save test case")
	c.check("test-case")

	// A plan of every test case of the project, saved and listed.
	c.open("/planner?project=" + project)
	c.wantPage("planner", 200, "No saved plans yet")
	c.check("planner")
	c.run(chromedp.Click(chromedp.ID("pl-all")), chromedp.SetValue(chromedp.ID("pl-framework"), "cypress"),
		chromedp.Click(chromedp.CSS("#plan-form button[type=submit]")))
	planPath := c.waitPathPrefix("/planner/")
	c.wantPage("plan", 200, "Plan generated and saved.")
	if heads := c.text("#plan"); !strings.Contains(heads, "Cypress") || !strings.Contains(heads, "Pay by card") {
		t.Fatalf("the plan: %.500s", heads)
	}
	c.check("plan")
	c.open("/planner")
	c.wantPage("planner with a plan", 200, "cypress · Page Object")
	if n := eval[int](c, `document.querySelectorAll('#plans a[href="`+planPath+`"]').length`); n != 1 {
		t.Fatalf("the saved plan is not listed (%d links to %s)", n, planPath)
	}
	c.check("planner-plans")

	// Linear, connected with its key (checked with the fake Linear); the key never shown.
	c.open("/settings/integrations")
	c.wantPage("integrations", 200, "Connect Linear")
	c.check("integrations-empty")
	c.run(chromedp.SendKeys(chromedp.ID("linear-key"), e2eLinearKey), chromedp.SendKeys(chromedp.ID("linear-team"), trackertest.Team),
		chromedp.Click(chromedp.CSS("#linear-form button[type=submit]")))
	c.waitMain("Linear settings saved.")
	c.wantPage("Linear connected", 200, "Linear settings saved.")
	if state := c.text("#linear-state"); !strings.Contains(state, "set") || !strings.Contains(state, trackertest.Team) {
		t.Fatalf("Linear's state: %s", state)
	}
	if html := eval[string](c, `document.documentElement.outerHTML`); strings.Contains(html, "TOPSECRET") {
		t.Fatal("the page shows the key")
	}
	c.check("integrations")

	// A failed run becomes a Linear issue from its page.
	task := h.queue(bearer(admin.token), map[string]any{"image": failImage, "taskId": "browser-ticket"})
	c.waitRunStatus(task, "FAILED")
	c.open("/runs/" + task)
	c.wantPage("failed run", 200, "No tickets from this run yet.")
	c.run(chromedp.Click(chromedp.CSS(`form[action="/runs/` + task + `/tickets/linear"] button`)))
	c.waitMain("Linear issue ENG-1 created")
	c.wantPage("ticket created", 200, "Linear issue ENG-1 created")
	issues := lin.Issues()
	if len(issues) != 1 {
		t.Fatalf("Linear has %d issues", len(issues))
	}
	if href := eval[string](c, `(a => a ? a.href : '')(document.querySelector('#ticket-list a'))`); href != issues[0].URL {
		t.Fatalf("the ticket link %q, want %q", href, issues[0].URL)
	}
	c.check("run-ticket")
}
