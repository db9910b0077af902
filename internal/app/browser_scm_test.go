//go:build integration

package app_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"verdict/internal/scm/scmtest"
)

// TestBrowserSourceControl drives the source-control pages in a real Chromium: GitHub connected
// on /settings/integrations with a token the fake GitHub accepts, then a project's hooks page,
// empty, answering the form with the new hook's secret, and reloaded; each state checked as
// every page is (no CSP violation, nothing serious for axe, the page weight, screenshots).
func TestBrowserSourceControl(t *testing.T) {
	h := newHarness(t, harnessOpts{dialect: "sqlite", env: map[string]string{"VERDICT_RUNNER": "none", "VERDICT_EGRESS_ALLOW": "127.0.0.1"}})
	gh := scmtest.NewGitHub(t, "ghp_browser", "acme/shop")
	c := newChrome(t, h)
	admin := h.signup("scm-browser@example.com", "SCM Browser Co")
	project := h.project(admin, "Shop")
	c.open("/login")
	c.run(chromedp.SendKeys(chromedp.ID("email"), admin.email), chromedp.SendKeys(chromedp.ID("password"), password),
		chromedp.Submit(chromedp.ID("password")))
	c.waitPath("/runs")

	c.open("/settings/integrations")
	c.wantPage("integrations", 200, "Connect GitHub")
	c.fill(map[string]string{"github-token": "ghp_browser", "github-api": gh.URL})
	c.submit("#github-form")
	c.waitPath("/settings/integrations")
	c.wantPage("GitHub connected", 200, "GitHub token saved.")
	if state := c.text("#github-state"); !strings.Contains(state, "set") || !strings.Contains(state, gh.URL) {
		t.Fatalf("GitHub's state: %s", state)
	}
	c.check("integrations-github")

	path := "/projects/" + project + "/hooks"
	c.open(path)
	c.wantPage("hooks, none", 200, "No hooks yet.")
	c.check("hooks-empty")

	c.fill(map[string]string{"branches": "main, release/*", "baseUrl": "https://pr-{pr}.preview.example.com"})
	c.submit(`form[action="` + path + `"]`)
	c.wantPage("hook created", 201, "Copy the secret now")
	secret := eval[string](c, `document.getElementById('new-hook-secret').value`)
	if len(secret) != 64 {
		t.Fatalf("the secret shown: %q", secret)
	}
	c.check("hooks-created")

	c.open(path)
	c.wantPage("hooks", 200, "main, release/*")
	if html := eval[string](c, `document.documentElement.outerHTML`); strings.Contains(html, secret) {
		t.Fatal("a reload shows the secret")
	}
	c.check("hooks")
}
