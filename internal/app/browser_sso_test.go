//go:build integration

package app_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserSSO: in Chromium, a member signs in through the organization's real OpenID
// provider: the sign-in page offers "Sign in with <provider>" for their address, the provider's
// own login form takes their password, and they land signed in on the runs page as a new
// member with the default role.
func TestBrowserSSO(t *testing.T) {
	h, op := ssoHarness(t, "sqlite")
	admin := h.signup("admin@acme.test", "Acme")
	expect(t, h.do("PUT", "/api/organization/sso", bearer(admin.token), map[string]any{"issuer": op.Issuer,
		"clientId": op.ClientID, "clientSecret": op.ClientSecret, "domains": []string{"acme.test"}, "defaultRole": "developer"}), 200, "")
	c := newChrome(t, h)
	c.open("/login")
	c.run(chromedp.SendKeys(chromedp.CSS("#sso-email"), "alice@acme.test"),
		chromedp.Submit(chromedp.CSS("#sso-email")))
	deadline := time.Now().Add(15 * time.Second)
	for !strings.Contains(eval[string](c, `document.body ? document.body.innerText : ""`), "Sign in with localhost") {
		if time.Now().After(deadline) {
			t.Fatalf("no offer: %s", eval[string](c, `document.body.innerText`))
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.check("login-sso-offer") // CSP, axe, weight, screenshots of the page with the offer
	c.run(chromedp.Click(chromedp.CSS("#sso-link")))
	// The provider's own sign-in form, on its own origin.
	c.run(chromedp.WaitVisible(chromedp.CSS("#username")),
		chromedp.SendKeys(chromedp.CSS("#username"), "alice"),
		chromedp.SendKeys(chromedp.CSS("#password"), "alice-pass"),
		chromedp.Submit(chromedp.CSS("#password")))
	c.waitPath("/runs")
	if got := eval[string](c, `location.origin`); got != publicURL {
		t.Fatalf("landed on %s", got)
	}
	if who := c.text(".who"); !strings.Contains(who, "Alice Anders") || !strings.Contains(who, "Acme") {
		t.Fatalf("signed in as %q", who)
	}
	me := h.do("GET", "/api/auth/me", bearer(c.session()), nil)
	if me.str("data", "role") != "developer" || me.str("data", "email") != "alice@acme.test" {
		t.Fatalf("the new member: %s", me.raw)
	}
}
