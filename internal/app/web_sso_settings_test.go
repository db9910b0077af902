//go:build integration

package app_test

import (
	"net/url"
	"strings"
	"testing"
)

// The single sign-on form on /settings: an admin saves the provider (checked with the real
// OpenID provider) through the form with its CSRF token, and the API reads the setting back;
// the client secret is never shown (on the page or through the API), only as set, and an empty
// secret field keeps it. A developer sees no form, and a forged post is refused.
func TestWebSettingsSSO(t *testing.T) {
	for _, d := range []string{"sqlite", "postgres"} {
		t.Run(d, func(t *testing.T) {
			h, op := ssoHarness(t, d)
			b := h.signUpBrowser(t, "ada@forms.test", "Forms Co")
			admin := bearer(b.session())

			p := b.get("/settings")
			for _, want := range []string{`action="/settings/sso"`, `name="issuer"`, `name="clientSecret"`, "No client secret is set yet",
				publicURL + "/auth/sso/callback"} {
				if !strings.Contains(p.body, want) {
					t.Fatalf("settings page lacks %q: %s", want, p.body)
				}
			}
			form := url.Values{"issuer": {op.Issuer}, "clientId": {op.ClientID}, "clientSecret": {op.ClientSecret},
				"domains": {"forms.test\r\nForms.Example, forms.example"}, "defaultRole": {"developer"}, "required": {"on"}}
			wantStatus(t, "without CSRF", b.post("/settings/sso", url.Values{"csrf": {""}, "issuer": {op.Issuer}}), 403, "Request refused")
			b.follow("save", b.post("/settings/sso", form), 200, "Single sign-on saved.")

			g := h.do("GET", "/api/organization/sso", admin, nil)
			expect(t, g, 200, "")
			doms := g.get("data", "domains").([]any)
			if g.str("data", "issuer") != op.Issuer || g.str("data", "clientId") != op.ClientID || g.get("data", "clientSecretSet") != true ||
				g.str("data", "defaultRole") != "developer" || g.get("data", "required") != true || len(doms) != 2 ||
				doms[0] != "forms.test" || doms[1] != "forms.example" || strings.Contains(g.raw, `"`+op.ClientSecret+`"`) {
				t.Fatalf("the setting through the API: %s", g.raw)
			}
			p = b.get("/settings")
			if strings.Contains(p.body, `"`+op.ClientSecret+`"`) || strings.Contains(p.body, ">"+op.ClientSecret+"<") ||
				!strings.Contains(p.body, "A client secret is set") ||
				!strings.Contains(p.body, `value="developer" selected`) || !strings.Contains(p.body, `name="required" checked`) {
				t.Fatalf("the saved setting on the page: %s", p.body)
			}
			// An empty secret keeps the saved one; "required" unticked goes off.
			form.Del("clientSecret")
			form.Del("required")
			b.follow("save again", b.post("/settings/sso", form), 200, "Single sign-on saved.")
			g = h.do("GET", "/api/organization/sso", admin, nil)
			if g.get("data", "clientSecretSet") != true || g.get("data", "required") != false {
				t.Fatalf("after saving without a secret: %s", g.raw)
			}
			// The service's refusal comes back as a message, and nothing changes.
			bad := url.Values{"issuer": {"ftp://x"}, "clientId": {"c"}, "domains": {"forms.test"}, "defaultRole": {"viewer"}}
			b.follow("bad issuer", b.post("/settings/sso", bad), 200, "Validation error")
			if g = h.do("GET", "/api/organization/sso", admin, nil); g.str("data", "issuer") != op.Issuer {
				t.Fatalf("a refused form changed the setting: %s", g.raw)
			}

			dev := h.withSession(t, h.join(account{token: b.session()}, "dev@forms.test", "developer").token)
			p = dev.get("/settings")
			wantStatus(t, "developer's settings", p, 200, "Forms Co")
			if strings.Contains(p.body, `action="/settings/sso"`) || strings.Contains(p.body, op.ClientID) {
				t.Fatalf("a developer sees the single sign-on form: %s", p.body)
			}
			form.Del("csrf") // the admin's, set by their post: the developer's browser sends its own
			wantStatus(t, "developer's forged post", dev.post("/settings/sso", form), 403, "Forbidden")
			if g = h.do("GET", "/api/organization/sso", admin, nil); g.str("data", "defaultRole") != "developer" {
				t.Fatalf("a developer changed the setting: %s", g.raw)
			}
		})
	}
}
