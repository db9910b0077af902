//go:build integration

package app_test

import (
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// signIn opens a browser session for email through the sign-in form.
func (h *harness) signIn(t *testing.T, email string) *browser {
	t.Helper()
	b := h.browser(t)
	b.get("/login")
	wantRedirect(t, "sign in "+email, b.post("/login", url.Values{"email": {email}, "password": {password}}), "/runs")
	return b
}

func TestWebMembers(t *testing.T) {
	h := newHarness(t, harnessOpts{dialect: "sqlite"})
	admin := h.signup("ada@example.com", "Members Co")
	dev := h.join(admin, "dev@example.com", "developer")
	viewer := h.join(admin, "viewer@example.com", "viewer")
	a := h.signIn(t, admin.email)

	p := a.get("/members")
	wantStatus(t, "members", p, 200, "dev@example.com")
	for _, want := range []string{"viewer@example.com", `action="/members/` + dev.id + `/role"`, "Send invitation", "Delete…", `href="/members" aria-current="page"`} {
		if !strings.Contains(p.body, want) {
			t.Fatalf("members page lacks %q: %s", want, p.body)
		}
	}
	if strings.Contains(p.body, `action="/members/`+admin.id+`/role"`) {
		t.Fatal("an admin is offered to change their own role")
	}

	// Role, suspension, reactivation, each with its message.
	wantRedirect(t, "change role", a.post("/members/"+dev.id+"/role", url.Values{"role": {"viewer"}}), "/members")
	wantStatus(t, "after role change", a.get("/members"), 200, "dev@example.com is now viewer.")
	if r := h.do("GET", "/api/users/"+dev.id, bearer(admin.token), nil); r.str("user", "role") != "viewer" {
		t.Fatalf("role not changed: %s", r.raw)
	}
	wantRedirect(t, "suspend", a.post("/members/"+dev.id+"/status", url.Values{"status": {"suspended"}}), "/members")
	p = a.get("/members")
	wantStatus(t, "after suspend", p, 200, "dev@example.com is suspended.")
	if !strings.Contains(p.body, "Reactivate") {
		t.Fatalf("no reactivate button: %s", p.body)
	}
	expect(t, h.do("GET", "/api/auth/me", bearer(dev.token), nil), 401, "")
	wantRedirect(t, "reactivate", a.post("/members/"+dev.id+"/status", url.Values{"status": {"active"}}), "/members")
	wantStatus(t, "after reactivate", a.get("/members"), 200, "dev@example.com is reactivated.")

	// The service's refusals are told: an admin cannot suspend themselves.
	wantRedirect(t, "suspend self", a.post("/members/"+admin.id+"/status", url.Values{"status": {"suspended"}}), "/members")
	wantStatus(t, "after suspend self", a.get("/members"), 200, "Cannot change own status")

	// Delete, without the CSRF token refused, with it done.
	wantStatus(t, "delete without CSRF", a.post("/members/"+viewer.id+"/delete", url.Values{"csrf": {""}}), 403, "Request refused")
	a.get("/members")
	wantRedirect(t, "delete", a.post("/members/"+viewer.id+"/delete", nil), "/members")
	p = a.get("/members")
	wantStatus(t, "after delete", p, 200, "Member deleted.")
	if strings.Contains(p.body, "viewer@example.com") {
		t.Fatal("the deleted member is still listed")
	}

	// Invite through the form: the e-mail goes out as through the API; then revoke it.
	wantRedirect(t, "invite", a.post("/members/invite", url.Values{"email": {"new@example.com"}, "role": {"viewer"}}), "/members")
	p = a.get("/members")
	wantStatus(t, "after invite", p, 200, "Invitation sent to new@example.com.")
	_, text := h.lastMailTo("new@example.com")
	m := tokenInMail.FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no invitation mail: %q", text)
	}
	wantStatus(t, "the invitation link", h.browser(t).get("/accept-invitation?token="+m[1]), 200, "new@example.com")
	inv := regexp.MustCompile(`action="/members/invitations/([^/"]+)/revoke"`).FindStringSubmatch(p.body)
	if inv == nil {
		t.Fatalf("no pending invitation listed: %s", p.body)
	}
	wantRedirect(t, "invite again", a.post("/members/invite", url.Values{"email": {"dev@example.com"}, "role": {"viewer"}}), "/members")
	wantStatus(t, "invite a member", a.get("/members"), 200, "User already in organization")
	wantRedirect(t, "revoke invitation", a.post("/members/invitations/"+inv[1]+"/revoke", nil), "/members")
	p = a.get("/members")
	wantStatus(t, "after revoke", p, 200, "Invitation revoked.")
	if strings.Contains(p.body, inv[1]) {
		t.Fatal("the revoked invitation is still listed")
	}
	wantStatus(t, "revoked invitation link", h.browser(t).get("/accept-invitation?token="+m[1]), 404, "Invitation not found")

	// A non-admin sees the members but no controls, and a forged form is refused by the service.
	d := h.signIn(t, dev.email)
	p = d.get("/members")
	wantStatus(t, "members as a viewer", p, 200, "ada@example.com")
	for _, no := range []string{"/role\"", "/status\"", "/delete\"", "Send invitation", "/revoke\""} {
		if strings.Contains(p.body, no) {
			t.Fatalf("a non-admin sees %q: %s", no, p.body)
		}
	}
	wantStatus(t, "forged role change", d.post("/members/"+dev.id+"/role", url.Values{"role": {"admin"}}), 403, "")
	wantStatus(t, "forged delete", d.post("/members/"+admin.id+"/delete", nil), 403, "")
	wantStatus(t, "forged invite", d.post("/members/invite", url.Values{"email": {"x@example.com"}, "role": {"admin"}}), 403, "")
	if r := h.do("GET", "/api/users/"+dev.id, bearer(admin.token), nil); r.str("user", "role") != "viewer" {
		t.Fatalf("a forged form changed the role: %s", r.raw)
	}
}

var newKeyValue = regexp.MustCompile(`id="new-key-value"[^>]*value="([^"]+)"`)

func TestWebAPIKeys(t *testing.T) {
	h := newHarness(t, harnessOpts{dialect: "sqlite"})
	admin := h.signup("ada@example.com", "Keys Co")
	b := h.signIn(t, admin.email)
	wantStatus(t, "api keys, empty", b.get("/settings/api-keys"), 200, "No API keys yet")

	wantStatus(t, "create without CSRF", b.post("/settings/api-keys", url.Values{"name": {"ci"}, "csrf": {""}}), 403, "Request refused")
	b.get("/settings/api-keys")
	p := b.post("/settings/api-keys", url.Values{"name": {"ci"}})
	wantStatus(t, "create", p, 201, "shown only this once")
	m := newKeyValue.FindStringSubmatch(p.body)
	if m == nil || !strings.HasPrefix(m[1], "pk_live_") {
		t.Fatalf("no key shown: %s", p.body)
	}
	key := m[1]
	if !strings.Contains(p.body, `src="/static/copy.js"`) || !strings.Contains(p.body, "readonly") {
		t.Fatalf("no copy button: %s", p.body)
	}
	for k, v := range p.header {
		if strings.Contains(strings.Join(v, " "), key) {
			t.Fatalf("the key is in the %s header", k)
		}
	}
	if js := b.get("/static/copy.js"); js.status != 200 || !strings.Contains(js.body, "clipboard") {
		t.Fatalf("copy.js: %d", js.status)
	}
	expect(t, h.do("GET", "/api/auth/me", apiKey(key), nil), 200, "")

	// The key never shows again.
	p = b.get("/settings/api-keys")
	wantStatus(t, "api keys", p, 200, "ci")
	if strings.Contains(p.body, key) {
		t.Fatal("the key is shown again")
	}
	id := regexp.MustCompile(`action="/settings/api-keys/([^/"]+)/revoke"`).FindStringSubmatch(p.body)
	if id == nil {
		t.Fatalf("no revoke form: %s", p.body)
	}

	// A refused name is told on the form.
	wantStatus(t, "empty name", b.post("/settings/api-keys", url.Values{"name": {" "}}), 400, "name is required")

	wantRedirect(t, "revoke", b.post("/settings/api-keys/"+id[1]+"/revoke", nil), "/settings/api-keys")
	p = b.get("/settings/api-keys")
	wantStatus(t, "after revoke", p, 200, "API key revoked.")
	if strings.Contains(p.body, key) || strings.Contains(p.body, id[1]) {
		t.Fatal("the revoked key is still listed")
	}
	expect(t, h.do("GET", "/api/auth/me", apiKey(key), nil), 401, "")
}
