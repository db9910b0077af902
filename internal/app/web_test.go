//go:build integration

package app_test

import (
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"verdict/internal/web"
)

// browser is a web client with its own cookies that does not follow redirects, so each answer
// can be checked.
type browser struct {
	t    *testing.T
	h    *harness
	c    *http.Client
	csrf string // the CSRF token of the last page that had a form
}

type page struct {
	status int
	header http.Header
	body   string
}

func (h *harness) browser(t *testing.T) *browser {
	return &browser{t: t, h: h, c: &http.Client{Jar: newJar(), CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func (b *browser) send(req *http.Request) page {
	b.t.Helper()
	res, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	p := page{status: res.StatusCode, header: res.Header, body: string(raw)}
	if strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
		checkPage(b.t, req.Method+" "+req.URL.Path, p)
		if m := csrfField.FindStringSubmatch(p.body); m != nil {
			b.csrf = m[1]
		}
	}
	return p
}

func (b *browser) get(path string) page {
	b.t.Helper()
	req, _ := http.NewRequest("GET", b.h.srv.URL+path, nil)
	return b.send(req)
}

// post submits a form; the CSRF token of the last page goes with it unless form sets csrf.
func (b *browser) post(path string, form url.Values) page {
	b.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	if _, ok := form["csrf"]; !ok {
		form.Set("csrf", b.csrf)
	}
	req, _ := http.NewRequest("POST", b.h.srv.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return b.send(req)
}

// session is the session cookie the browser holds, "" for none.
func (b *browser) session() string {
	u, _ := url.Parse(b.h.srv.URL)
	for _, c := range b.c.Jar.Cookies(u) {
		if c.Name == web.SessionCookie {
			return c.Value
		}
	}
	return ""
}

var (
	inlineScript = regexp.MustCompile(`(?i)<script(\s[^>]*)?>`)
	inlineStyle  = regexp.MustCompile(`(?i)<style|\sstyle\s*=|\son[a-z]+\s*=|javascript:`)
)

// checkPage asserts what holds for every page: the strict CSP, and nothing inline for it to
// refuse (every script is an external file, no style element or attribute, no event handler).
func checkPage(t *testing.T, what string, p page) {
	t.Helper()
	if got := p.header.Get("Content-Security-Policy"); got != web.ContentSecurityPolicy {
		t.Fatalf("%s: CSP %q", what, got)
	}
	if got := web.ContentSecurityPolicy; got != "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'" {
		t.Fatalf("CSP constant changed: %q", got)
	}
	for _, m := range inlineScript.FindAllStringSubmatch(p.body, -1) {
		if !strings.Contains(m[1], ` src="/static/`) {
			t.Fatalf("%s: inline script %q", what, m[0])
		}
	}
	if m := inlineStyle.FindString(p.body); m != "" {
		t.Fatalf("%s: inline style or handler %q in %s", what, m, p.body)
	}
}

func wantStatus(t *testing.T, what string, p page, status int, text string) {
	t.Helper()
	if p.status != status || !strings.Contains(p.body, text) {
		t.Fatalf("%s: %d, want %d with %q; body %s", what, p.status, status, text, p.body)
	}
}

func wantRedirect(t *testing.T, what string, p page, to string) {
	t.Helper()
	if p.status != http.StatusSeeOther || p.header.Get("Location") != to {
		t.Fatalf("%s: %d to %q, want 303 to %q", what, p.status, p.header.Get("Location"), to)
	}
}

func TestWebDashboard(t *testing.T) {
	h := newHarness(t, harnessOpts{dialect: "sqlite"})
	b := h.browser(t)

	wantRedirect(t, "/ signed out", b.get("/"), "/login")
	wantRedirect(t, "/runs signed out", b.get("/runs"), "/login")
	wantStatus(t, "signup page", b.get("/signup"), 200, "Create an account")
	form := url.Values{"name": {"Ada"}, "organizationName": {"Web Co"}, "email": {"ada@example.com"}, "password": {password}}

	// A form without its token, or with another one, is refused.
	noToken := url.Values{"csrf": {""}}
	for k, v := range form {
		noToken[k] = v
	}
	wantStatus(t, "signup without CSRF", b.post("/signup", noToken), 403, "Request refused")
	noToken.Set("csrf", "forged")
	wantStatus(t, "signup with a wrong CSRF", b.post("/signup", noToken), 403, "Request refused")
	if b.session() != "" {
		t.Fatal("a refused signup set a session")
	}

	// Signing up through the form opens the session in an HttpOnly, SameSite=Lax cookie.
	b.get("/signup")
	p := b.post("/signup", form)
	wantRedirect(t, "signup", p, "/runs")
	var sc *http.Cookie
	for _, c := range (&http.Response{Header: p.header}).Cookies() {
		if c.Name == web.SessionCookie {
			sc = c
		}
	}
	if sc == nil || !sc.HttpOnly || sc.SameSite != http.SameSiteLaxMode || sc.Path != "/" || sc.Secure {
		t.Fatalf("session cookie %+v", sc)
	}
	admin := bearer(b.session())
	if me := h.do("GET", "/api/auth/me", admin, nil); me.status != 200 {
		t.Fatalf("the session's token is not the API's: %s", me.raw)
	}
	wantRedirect(t, "/ signed in", b.get("/"), "/runs")
	wantStatus(t, "runs, empty", b.get("/runs"), 200, "No runs yet")

	// A queued run shows in the list and on its page.
	taskID := h.queue(admin, map[string]any{"image": "img", "taskId": "web-run-1"})
	p = b.get("/runs")
	wantStatus(t, "runs", p, 200, `href="/runs/web-run-1"`)
	if !strings.Contains(p.body, "PENDING") || strings.Contains(p.body, "No runs yet") {
		t.Fatalf("runs list: %s", p.body)
	}
	wantStatus(t, "runs filtered", b.get("/runs?status=PASSED"), 200, "No run matches these filters")
	wantStatus(t, "runs filtered", b.get("/runs?status=PENDING"), 200, `href="/runs/web-run-1"`)
	wantStatus(t, "run page", b.get("/runs/"+taskID), 200, "Test results appear when the run ends")
	wantStatus(t, "billing", b.get("/settings/billing"), 200, "Test runs")
	wantStatus(t, "billing after checkout", b.get("/settings/billing?checkout=success&session_id=cs_1"), 200, "your payment was received")

	// Another organization's run is not found; so are unknown pages. The API keeps its JSON 404.
	other := h.signup("other@example.com", "Other Co")
	h.queue(bearer(other.token), map[string]any{"image": "img", "taskId": "secret-run"})
	wantStatus(t, "another organization's run", b.get("/runs/secret-run"), 404, "Run not found")
	wantStatus(t, "unknown page", b.get("/no/such/page"), 404, "Page not found")
	if r := h.do("GET", "/api/no/such/route", anon, nil); r.status != 404 || r.str("error") != "Not found" {
		t.Fatalf("unknown API route: %d %s", r.status, r.raw)
	}
	if r := h.do("POST", "/healthz", anon, nil); r.status != 405 || r.header.Get("Allow") != "GET, HEAD" {
		t.Fatalf("POST /healthz: %d %v", r.status, r.header)
	}
	expect(t, h.do("GET", "/healthz", anon, nil), 200, "")
	for _, f := range []string{"/static/htmx.min.js", "/static/verdict.css"} {
		if r := b.get(f); r.status != 200 || r.header.Get("Content-Security-Policy") == "" {
			t.Fatalf("%s: %d", f, r.status)
		}
	}
	wantStatus(t, "static folder", b.get("/static/"), 404, "")

	// An htmx request carries the token in a header.
	req, _ := http.NewRequest("POST", h.srv.URL+"/logout", nil)
	req.Header.Set("HX-Request", "true")
	wantStatus(t, "logout by htmx without token", b.send(req), 403, "Request refused")
	b.get("/runs")
	req, _ = http.NewRequest("POST", h.srv.URL+"/logout", nil)
	req.Header.Set("HX-Request", "true")
	req.Header.Set("X-CSRF-Token", b.csrf)
	if p := b.send(req); p.status != 204 || p.header.Get("HX-Redirect") != "/login" {
		t.Fatalf("logout by htmx: %d %v", p.status, p.header)
	}
	if b.session() != "" {
		t.Fatal("logout left the session cookie")
	}
	wantRedirect(t, "/runs after logout", b.get("/runs"), "/login")

	// Signing in again; a wrong password and the lockout are told as such.
	wantStatus(t, "login page", b.get("/login"), 200, "Sign in")
	wantStatus(t, "wrong password", b.post("/login", url.Values{"email": {"ada@example.com"}, "password": {"Wr0ng!pass"}}), 401, "Invalid credentials")
	wantRedirect(t, "login", b.post("/login", url.Values{"email": {"ada@example.com"}, "password": {password}}), "/runs")
	wantStatus(t, "runs after login", b.get("/runs"), 200, "web-run-1")
	// The logout form works too.
	wantRedirect(t, "logout", b.post("/logout", nil), "/login")

	locked := h.browser(t)
	locked.get("/login")
	var last page
	for range 10 {
		if last = locked.post("/login", url.Values{"email": {"nobody@example.com"}, "password": {"Wr0ng!pass"}}); last.status == 429 {
			break
		}
	}
	wantStatus(t, "lockout", last, 429, "Account temporarily locked")

	// A suspended member's session ends at once. (Signing out above ended the admin's session:
	// sign in again through the API.)
	relogin := h.do("POST", "/api/auth/login", anon, map[string]any{"email": "ada@example.com", "password": password})
	expect(t, relogin, 200, "")
	admin = bearer(relogin.str("token"))
	_, tok := h.invite(account{token: admin.token}, "bob@example.com", "developer")
	bob := h.browser(t)
	p = bob.get("/accept-invitation?token=" + tok)
	wantStatus(t, "invitation", p, 200, "invites <strong>bob@example.com</strong>")
	wantRedirect(t, "join", bob.post("/accept-invitation", url.Values{"token": {tok}, "email": {"bob@example.com"},
		"name": {"Bob"}, "password": {password}}), "/runs")
	wantStatus(t, "bob's runs", bob.get("/runs"), 200, "web-run-1")
	wantStatus(t, "used invitation", h.browser(t).get("/accept-invitation?token="+tok), 404, "already used")
	wantStatus(t, "malformed invitation", h.browser(t).get("/accept-invitation?token=x"), 400, "Invalid token format")
	me := h.do("GET", "/api/auth/me", bearer(bob.session()), nil)
	expect(t, h.do("PATCH", "/api/users/"+me.str("data", "id")+"/status", admin, map[string]any{"status": "suspended"}), 200, "")
	wantRedirect(t, "suspended member", bob.get("/runs"), "/login")
	if bob.session() != "" {
		t.Fatal("a suspended member keeps the session cookie")
	}
}

// The sign-in and signup forms take from the API's own per-IP buckets: a form is no way around
// the login route's limit, and its refusal is told as such.
func TestWebFormRateLimit(t *testing.T) {
	h := newHarness(t, harnessOpts{dialect: "sqlite", rateLimits: limitsAt(2)})
	b := h.browser(t)
	b.get("/login")
	wrong := url.Values{"email": {"who@example.com"}, "password": {"Wr0ng!pass"}}
	expect(t, h.do("POST", "/api/auth/login", anon, map[string]any{"email": "who@example.com", "password": "Wr0ng!pass"}), 401, "Invalid credentials")
	wantStatus(t, "second login", b.post("/login", wrong), 401, "Invalid credentials")
	wantStatus(t, "third login", b.post("/login", wrong), 429, "Rate limit exceeded")
	expect(t, h.do("POST", "/api/auth/login", anon, map[string]any{"email": "who@example.com", "password": "Wr0ng!pass"}), 429, "Rate limit exceeded")
}
