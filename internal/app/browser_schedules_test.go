//go:build integration

package app_test

import (
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserSchedules drives a project's schedules page in a real Chromium: empty, then a
// schedule added through its form and paused, each state checked as every page is (no CSP
// violation, nothing serious for axe, the page weight, screenshots).
func TestBrowserSchedules(t *testing.T) {
	h := newHarness(t, harnessOpts{dialect: "sqlite", env: map[string]string{"VERDICT_RUNNER": "none"}})
	c := newChrome(t, h)
	admin := h.signup("schedules-browser@example.com", "Schedules Browser Co")
	project := h.project(admin, "Shop")
	c.open("/login")
	c.run(chromedp.SendKeys(chromedp.ID("email"), admin.email), chromedp.SendKeys(chromedp.ID("password"), password),
		chromedp.Submit(chromedp.ID("password")))
	c.waitPath("/runs")

	path := "/projects/" + project + "/schedules"
	c.open(path)
	c.wantPage("schedules, none", 200, "No schedules yet.")
	c.check("schedules-empty")

	c.fill(map[string]string{"name": "Nightly", "cron": "30 2 * * 1-5", "timezone": "Europe/Paris", "labels": "suite:nightly",
		"secrets": "API_TOKEN=s3cr3t"})
	c.submit(`form[action="` + path + `"]`)
	c.waitPath(path)
	c.wantPage("schedule created", 200, "Schedule Nightly created.")
	c.check("schedules")

	c.submit(`form[action$="/pause"]`)
	c.waitPath(path)
	c.wantPage("schedule paused", 200, "none while paused")
	c.check("schedules-paused")
}
