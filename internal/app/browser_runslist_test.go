//go:build integration

package app_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"verdict/internal/domain"
	"verdict/internal/testenv"
)

// TestBrowserRunsListLive opens the runs page as a new organization sees it, empty, and queues
// runs from elsewhere (the API, as CI does): each run that belongs in the list on screen shows
// there as it is queued and follows its status, without a reload, whether the list is empty,
// filtered or a page other than the first; a run that does not belong (another status) does
// not show. A finished row tells its story: test counts with their bar, branch and commit; a
// failed run's page says that the analysis is off and where an admin turns it on.
func TestBrowserRunsListLive(t *testing.T) {
	testenv.DockerHost(t)
	h := newHarness(t, harnessOpts{dialect: "sqlite", realClock: true, workers: true})
	c := newChrome(t, h)
	admin := h.signup("runs-live@example.com", "Runs Live Co")
	a := bearer(admin.token)
	c.open("/login")
	c.run(chromedp.SendKeys(chromedp.ID("email"), admin.email), chromedp.SendKeys(chromedp.ID("password"), password),
		chromedp.Submit(chromedp.ID("password")))
	c.waitPath("/runs")
	c.wantPage("runs, empty", 200, "No runs yet")

	// rowOnce waits for the run's row to show want (without the page reloading) and returns
	// its text.
	connected := func() {
		c.run(chromedp.Evaluate[chromedp.Void](`window.__notReloaded = true`),
			chromedp.WaitReady(chromedp.CSS(`body[data-live="connected"]`)))
	}
	row := func(task string, want ...string) string {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			got := eval[map[string]any](c, fmt.Sprintf(`(r => ({row: r ? r.innerText : '', same: window.__notReloaded === true}))(document.querySelector('tr[data-task=%q]'))`, task))
			if got["same"] != true {
				t.Fatal("the runs page reloaded itself")
			}
			text, _ := got["row"].(string)
			ok := text != ""
			for _, w := range want {
				ok = ok && strings.Contains(text, w)
			}
			if ok {
				return text
			}
			if time.Now().After(deadline) {
				t.Fatalf("run %s's row never showed %q live: %q", task, want, text)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	// The empty list: the first run queued from CI appears, follows its status, and ends with
	// its counts, branch and short commit.
	connected()
	h.queue(a, map[string]any{"image": failImage, "taskId": "live-first",
		"labels": map[string]string{"branch": "main", "commit": "0123456789abcdef0123456789abcdef01234567"}})
	row("live-first")
	text := row("live-first", "FAILED", "failed", "main", "0123456")
	if strings.Contains(text, "0123456789") {
		t.Fatalf("the row shows the whole commit: %q", text)
	}
	if n := eval[int](c, `document.querySelectorAll('tr[data-task="live-first"] svg.tests-bar rect').length`); n == 0 {
		t.Fatalf("the finished run's row has no test bar: %q", text)
	}
	if got := c.text("main"); strings.Contains(got, "No runs yet") {
		t.Fatalf("the empty state stayed beside the new run: %q", got)
	}
	c.check("runs-live")

	// The failed run's page says the organization's analysis is off, and links its admin to
	// the setting.
	c.open("/runs/live-first")
	c.wantPage("failed run, analysis off", 200, "Failure analysis is off for this organization")
	if n := eval[int](c, `document.querySelectorAll('#analysis-off a[href="/settings#analysis-setting"]').length`); n != 1 {
		t.Fatal("the admin has no link to the analysis setting on a failed run's page")
	}
	c.check("run-analysis-off")

	// A list filtered by status: a run that reaches that status shows; one that does not, never.
	c.open("/runs?status=PASSED")
	connected()
	h.queue(a, map[string]any{"image": failImage, "taskId": "live-other"})
	h.queue(a, map[string]any{"image": passImage, "taskId": "live-passed"})
	row("live-passed", "PASSED")
	h.waitFor(a, "live-other", 60*time.Second, final)
	time.Sleep(1500 * time.Millisecond) // past the list's refresh
	if n := eval[int](c, `document.querySelectorAll('tr[data-task="live-other"]').length`); n != 0 {
		t.Fatal("a FAILED run shows on the list of PASSED runs")
	}

	// A page other than the first: a new run moves every run down one place, and the second
	// page shows the run that was last on the first.
	ctx := context.Background()
	base := time.Now().UTC().Add(-time.Hour)
	for i := range 30 {
		at := base.Add(time.Duration(i) * time.Second)
		e := &domain.Execution{ID: domain.NewID(), OrganizationID: admin.orgID, TaskID: fmt.Sprintf("old-%02d", i),
			Image: passImage, Status: domain.ExecPassed, QueuedAt: at, StartedAt: &at, FinishedAt: &at, TriggeredBy: admin.id}
		if err := h.app.Store.Executions().Create(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	c.open("/runs?page=2")
	connected()
	before := eval[string](c, `document.querySelector('#runs tbody tr').dataset.task`)
	h.queue(a, map[string]any{"image": passImage, "taskId": "live-newest"})
	deadline := time.Now().Add(30 * time.Second)
	for eval[string](c, `document.querySelector('#runs tbody tr').dataset.task`) == before {
		if time.Now().After(deadline) {
			t.Fatalf("page 2 still starts with %s after a run was queued", before)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if eval[bool](c, `window.__notReloaded === true`) != true {
		t.Fatal("the runs page reloaded itself")
	}
	if got := c.text("main"); !strings.Contains(got, "of 34") {
		t.Fatalf("page 2's count did not follow: %q", got)
	}
}
