//go:build integration

package app_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"verdict/internal/domain"
	"verdict/internal/testenv"
	"verdict/internal/web"
)

// ssoUsers are the accounts of the tests' OpenID provider.
var ssoUsers = []testenv.OIDCUser{
	{Username: "alice", Password: "alice-pass", Email: "alice@acme.test", EmailVerified: true, FirstName: "Alice", LastName: "Anders"},
	{Username: "bob", Password: "bob-pass", Email: "bob@other.test", EmailVerified: true, FirstName: "Bob", LastName: "Other"},
	{Username: "carol", Password: "carol-pass", Email: "carol@acme.test", EmailVerified: true, FirstName: "Carol", LastName: "C"},
	{Username: "erin", Password: "erin-pass", Email: "erin@acme.test", EmailVerified: true, FirstName: "Erin", LastName: "E"},
	{Username: "dan", Password: "dan-pass", Email: "dan@acme.test", EmailVerified: false, FirstName: "Dan", LastName: "D"},
}

// ssoHarness is a server whose public URL the provider sends browsers back to, and the
// provider, allowed through the egress guard by its host name.
func ssoHarness(t *testing.T, dialect string) (*harness, *testenv.OIDCProvider) {
	op := testenv.StartOIDCProvider(t, ssoUsers, publicURL+"/auth/sso/callback")
	h := newHarness(t, harnessOpts{dialect: dialect, env: map[string]string{"VERDICT_EGRESS_ALLOW": "localhost",
		"VERDICT_SSO_BREAK_GLASS": "admin@acme.test"}})
	return h, op
}

var opLoginID = regexp.MustCompile(`name="id" value="([^"]+)"`)

// ssoSignIn goes through the provider as a browser does: /auth/sso for email, the provider's
// login form filled with username and password, back to the callback. It returns the
// callback's answer and the session cookie it set ("" for none). Requests to the public URL's
// host go to the test server.
func ssoSignIn(t *testing.T, h *harness, email, username, pass string) (*http.Response, string, string) {
	t.Helper()
	srv, _ := url.Parse(h.srv.URL)
	pub, _ := url.Parse(publicURL)
	jar := newJar()
	c := &http.Client{Jar: jar, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if req.URL.Host == pub.Host {
			req.URL.Scheme, req.URL.Host, req.Host = srv.Scheme, srv.Host, srv.Host
		}
		if req.URL.Host == srv.Host && req.URL.Path != "/auth/sso/callback" {
			return http.ErrUseLastResponse // the dashboard after the sign-in: stop here
		}
		return nil
	}}
	res, err := c.Get(h.srv.URL + "/auth/sso?email=" + url.QueryEscape(email))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	m := opLoginID.FindStringSubmatch(string(body))
	if m == nil {
		return res, "", string(body) // refused before the provider
	}
	loginURL := *res.Request.URL
	res, err = c.PostForm(loginURL.Scheme+"://"+loginURL.Host+loginURL.Path, url.Values{"username": {username},
		"password": {pass}, "id": {m[1]}})
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(res.Body)
	res.Body.Close()
	session := ""
	for _, ck := range jar.Cookies(srv) {
		if ck.Name == web.SessionCookie {
			session = ck.Value
		}
	}
	return res, session, string(body)
}

// TestSSO: sign-in through a real OpenID provider process. An admin configures the provider
// (the secret never shown, checked through the egress guard); an allowed address becomes a
// member with the default role and then signs in as itself; an address of another domain, an
// unverified one and a suspended member are refused; a full organization refuses a new member;
// "SSO required" refuses password sign-in and signup except for the operator's break-glass
// admin; another organization cannot claim the domain nor read the setting; sign-ins are in
// the audit log.
func TestSSO(t *testing.T) {
	for _, d := range []string{"sqlite", "postgres"} {
		t.Run(d, func(t *testing.T) {
			h, op := ssoHarness(t, d)
			admin := h.signup("admin@acme.test", "Acme")
			dev := h.join(admin, "dev@acme.test", "developer")
			carol := h.join(admin, "carol@acme.test", "developer")
			expect(t, h.do("PATCH", "/api/users/"+carol.id+"/status", bearer(admin.token), map[string]any{"status": "suspended"}), 200, "")

			// Before any setting: nothing configured, and no provider for the address.
			g := h.do("GET", "/api/organization/sso", bearer(admin.token), nil)
			expect(t, g, 200, "")
			if g.get("data", "configured") != false || g.str("data", "redirectUrl") != publicURL+"/auth/sso/callback" {
				t.Fatalf("unconfigured: %s", g.raw)
			}
			res, _, body := ssoSignIn(t, h, "alice@acme.test", "alice", "alice-pass")
			if res.StatusCode != 404 || !strings.Contains(body, "Single sign-on not set up") {
				t.Fatalf("no provider yet: %d %s", res.StatusCode, body)
			}

			put := map[string]any{"issuer": op.Issuer, "clientId": op.ClientID, "clientSecret": op.ClientSecret,
				"domains": []string{"ACME.test"}, "defaultRole": "viewer"}
			expect(t, h.do("PUT", "/api/organization/sso", bearer(dev.token), put), 403, "Forbidden")
			bad := map[string]any{"issuer": op.Issuer, "clientId": op.ClientID, "domains": []string{"acme.test"}, "defaultRole": "viewer"}
			expect(t, h.do("PUT", "/api/organization/sso", bearer(admin.token), bad), 400, "Missing required fields")
			for field, v := range map[string]any{"issuer": "ftp://x", "defaultRole": "owner", "domains": []string{"not a domain"}} {
				b := map[string]any{}
				for k, x := range put {
					b[k] = x
				}
				b[field] = v
				expect(t, h.do("PUT", "/api/organization/sso", bearer(admin.token), b), 400, "Validation error")
			}
			// The guard refuses an internal address the operator did not allow.
			internal := map[string]any{}
			for k, x := range put {
				internal[k] = x
			}
			internal["issuer"] = strings.Replace(op.Issuer, "localhost", "127.0.0.1", 1)
			expect(t, h.do("PUT", "/api/organization/sso", bearer(admin.token), internal), 400, "Issuer refused")

			saved := h.do("PUT", "/api/organization/sso", bearer(admin.token), put)
			expect(t, saved, 200, "")
			g = h.do("GET", "/api/organization/sso", bearer(admin.token), nil)
			if strings.Contains(g.raw, op.ClientSecret+`"`) || g.get("data", "clientSecretSet") != true ||
				g.get("data", "domains").([]any)[0] != "acme.test" {
				t.Fatalf("the setting as read: %s", g.raw)
			}
			expect(t, h.do("GET", "/api/organization/sso", bearer(dev.token), nil), 403, "Forbidden")

			// Another organization: its own (empty) setting, and the domain is taken.
			other := h.signup("owner@other.test", "Other")
			if r := h.do("GET", "/api/organization/sso", bearer(other.token), nil); r.get("data", "configured") != false {
				t.Fatalf("another organization reads: %s", r.raw)
			}
			expect(t, h.do("PUT", "/api/organization/sso", bearer(other.token), put), 409, "Domain already claimed")

			// First sign-in creates the member with the default role; the second is the same member.
			res, session, body := ssoSignIn(t, h, "alice@acme.test", "alice", "alice-pass")
			if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/runs" || session == "" {
				t.Fatalf("alice's sign-in: %d %s %q", res.StatusCode, res.Header.Get("Location"), body)
			}
			me := h.do("GET", "/api/auth/me", bearer(session), nil)
			expect(t, me, 200, "")
			aliceID := me.str("data", "id")
			if me.str("data", "role") != "viewer" || me.str("data", "organization", "id") != admin.orgID ||
				me.str("data", "name") != "Alice Anders" {
				t.Fatalf("alice: %s", me.raw)
			}
			_, session2, _ := ssoSignIn(t, h, "alice@acme.test", "alice", "alice-pass")
			if me2 := h.do("GET", "/api/auth/me", bearer(session2), nil); me2.str("data", "id") != aliceID {
				t.Fatalf("second sign-in: %s", me2.raw)
			}

			// Refusals at the callback.
			for _, c := range []struct{ who, user, pass, status, text string }{
				{"another domain", "bob", "bob-pass", "403", "E-mail domain not allowed"},
				{"unverified address", "dan", "dan-pass", "403", "E-mail not verified"},
				{"suspended member", "carol", "carol-pass", "403", "Account suspended"},
				{"full organization", "erin", "erin-pass", "403", "User limit reached"},
			} {
				res, session, body := ssoSignIn(t, h, "alice@acme.test", c.user, c.pass)
				if session != "" || res.Status[:3] != c.status || !strings.Contains(body, c.text) {
					t.Errorf("%s: %s session=%q, want %s %q; %s", c.who, res.Status, session, c.status, c.text, body)
				}
			}

			// SSO required: passwords refused, except the operator's break-glass admin.
			put["required"] = true
			delete(put, "clientSecret") // kept as saved
			expect(t, h.do("PUT", "/api/organization/sso", bearer(admin.token), put), 200, "")
			expect(t, h.do("POST", "/api/auth/login", anon, map[string]any{"email": "dev@acme.test", "password": password}), 403, "SSO required")
			expect(t, h.do("POST", "/api/auth/login", anon, map[string]any{"email": "admin@acme.test", "password": password}), 200, "")
			if err := h.app.Store.Organizations().UpdatePlan(context.Background(), admin.orgID, domain.PlanTeam, domain.Billing{}); err != nil {
				t.Fatal(err) // seats for the invitation
			}
			_, tok := h.invite(admin, "frank@acme.test", "developer")
			expect(t, h.do("POST", "/api/auth/signup", anon, map[string]any{"email": "frank@acme.test", "password": password,
				"name": "Frank", "inviteToken": tok}), 403, "SSO required")
			expect(t, h.do("POST", "/api/auth/signup", anon, map[string]any{"email": "gina@acme.test", "password": password,
				"name": "Gina", "organizationName": "Shadow"}), 403, "SSO required")
			// The provider still signs the members in.
			if _, s, _ := ssoSignIn(t, h, "alice@acme.test", "alice", "alice-pass"); s == "" {
				t.Fatal("alice cannot sign in through the provider once it is required")
			}

			// The audit log: the setting (without the secret), sign-ins, the member created, the break-glass.
			a := h.do("GET", "/api/audit?action=sso.*&limit=100", bearer(admin.token), nil)
			expect(t, a, 200, "")
			counts := map[string]int{}
			for _, e := range a.get("data", "entries").([]any) {
				counts[e.(map[string]any)["action"].(string)]++
			}
			if counts["sso.member_created"] != 1 || counts["sso.signed_in"] != 3 || counts["sso.break_glass_sign_in"] != 1 {
				t.Errorf("sso entries %v: %s", counts, a.raw)
			}
			s := h.do("GET", "/api/audit?action=organization.sso_updated", bearer(admin.token), nil)
			if s.get("data", "total").(float64) != 2 || strings.Contains(s.raw, op.ClientSecret+`"`) {
				t.Errorf("setting changes: %s", s.raw)
			}
		})
	}
}

// TestSSOFlowChecks: a callback that is not the answer to this browser's sign-in is refused
// (no flow cookie, a state that differs), and so is a provider's refusal.
func TestSSOFlowChecks(t *testing.T) {
	h, _ := ssoHarness(t, "sqlite")
	b := h.browser(t)
	p := b.get("/auth/sso/callback?state=x&code=y")
	wantStatus(t, "no flow", p, 400, "Sign-in expired")
	p = b.get("/auth/sso?email=nobody@nowhere.test")
	wantStatus(t, "no provider", p, 404, "Single sign-on not set up")
	p = b.get("/auth/sso?email=not-an-address")
	wantStatus(t, "bad address", p, 400, "Invalid email format")
}

// TestWebSSOSignInPage: the dashboard's sign-in page offers "Sign in with <provider>" for an
// address of a domain an organization's provider signs in, says so when none does, and offers
// it again when a password sign-in is refused because the provider is required.
func TestWebSSOSignInPage(t *testing.T) {
	h, op := ssoHarness(t, "sqlite")
	admin := h.signup("admin@acme.test", "Acme")
	h.join(admin, "dev@acme.test", "developer")
	expect(t, h.do("PUT", "/api/organization/sso", bearer(admin.token), map[string]any{"issuer": op.Issuer,
		"clientId": op.ClientID, "clientSecret": op.ClientSecret, "domains": []string{"acme.test"}, "defaultRole": "viewer",
		"required": true}), 200, "")
	b := h.browser(t)
	p := b.get("/login")
	if !strings.Contains(p.body, `action="/login" method="get"`) && !strings.Contains(p.body, `method="get" action="/login"`) {
		t.Fatalf("no single sign-on form: %s", p.body)
	}
	p = b.get("/login?email=new.person%40acme.test")
	if !strings.Contains(p.body, `href="/auth/sso?email=new.person%40acme.test"`) || !strings.Contains(p.body, "Sign in with localhost:") {
		t.Fatalf("no offer for an address of the domain: %s", p.body)
	}
	p = b.get("/login?email=someone%40else.test")
	if strings.Contains(p.body, "Sign in with") || !strings.Contains(p.body, "No organization signs this address in") {
		t.Fatalf("an address no provider signs in: %s", p.body)
	}
	b.get("/login")
	p = b.post("/login", url.Values{"email": {"dev@acme.test"}, "password": {password}})
	if p.status != 403 || !strings.Contains(p.body, "SSO required") || !strings.Contains(p.body, `href="/auth/sso?email=dev%40acme.test"`) {
		t.Fatalf("password refused without the offer: %d %s", p.status, p.body)
	}
}

// TestWebSSOLookupRateLimit: looking up addresses on the sign-in page counts as sign-in
// attempts, so the page cannot be used to sweep addresses for their providers.
func TestWebSSOLookupRateLimit(t *testing.T) {
	h := newHarness(t, harnessOpts{dialect: "sqlite", rateLimits: limitsAt(2)})
	b := h.browser(t)
	for i := range 2 {
		wantStatus(t, fmt.Sprintf("lookup %d", i+1), b.get("/login?email=someone%40example.test"), 200, "No organization signs this address in")
	}
	wantStatus(t, "lookup 3", b.get("/login?email=someone%40example.test"), 429, "Too many")
}
