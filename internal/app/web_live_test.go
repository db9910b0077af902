//go:build integration

package app_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"verdict/internal/web"
)

// signUpBrowser opens a dashboard session by the signup form.
func (h *harness) signUpBrowser(t *testing.T, email, org string) *browser {
	t.Helper()
	b := h.browser(t)
	b.get("/signup")
	wantRedirect(t, "signup", b.post("/signup", url.Values{"name": {"Ada"}, "organizationName": {org},
		"email": {email}, "password": {password}}), "/runs")
	return b
}

// withSession is a browser holding a session cookie for token (an API session of the same user).
func (h *harness) withSession(t *testing.T, token string) *browser {
	b := h.browser(t)
	u, _ := url.Parse(h.srv.URL)
	b.c.Jar.SetCookies(u, []*http.Cookie{{Name: web.SessionCookie, Value: token, Path: "/"}})
	return b
}

// fresh is a copy of a form without the CSRF token an earlier post put in it.
func fresh(form url.Values) url.Values {
	c := url.Values{}
	for k, v := range form {
		if k != "csrf" {
			c[k] = v
		}
	}
	return c
}

// follow reads the page a redirect went to (its flash message included).
func (b *browser) follow(what string, p page, status int, text string) page {
	b.t.Helper()
	if p.status != http.StatusSeeOther {
		b.t.Fatalf("%s: %d, want a redirect; body %s", what, p.status, p.body)
	}
	next := b.get(p.header.Get("Location"))
	wantStatus(b.t, what+" (after the redirect)", next, status, text)
	return next
}

func (b *browser) socketToken(csrf string) (int, http.Header, map[string]any) {
	b.t.Helper()
	req, _ := http.NewRequest("GET", b.h.srv.URL+"/session/socket-token", nil)
	if csrf != "" {
		req.Header.Set("X-CSRF-Token", csrf)
	}
	res, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer res.Body.Close()
	var body map[string]any
	_ = json.NewDecoder(res.Body).Decode(&body)
	return res.StatusCode, res.Header, body
}

// Runs are queued, cancelled, re-run and deleted through the dashboard's forms, by the
// executions service: CSRF-checked, with a flash message after each, and refused to a viewer,
// who sees no controls. A page's socket ticket opens Socket.IO and follows the run live.
func TestWebRunActions(t *testing.T) {
	h := runHarness(t, "sqlite")
	b := h.signUpBrowser(t, "ada@example.com", "Actions Co")
	admin := bearer(b.session())
	adminAcc := account{token: b.session()}

	// The socket-token endpoint: the session and the page's CSRF token, no caching; its ticket
	// opens a socket but is no API token.
	if st, _, _ := h.browser(t).socketToken(""); st != 401 {
		t.Fatalf("socket token signed out: %d", st)
	}
	p := b.get("/runs")
	for _, want := range []string{`<meta name="csrf-token" content="` + b.csrf + `">`, `<script src="/static/live.js" defer></script>`,
		`action="/runs"`, "Queue a run"} {
		if !strings.Contains(p.body, want) {
			t.Fatalf("runs page lacks %q: %s", want, p.body)
		}
	}
	if st, _, _ := b.socketToken(""); st != 403 {
		t.Fatalf("socket token without the CSRF header: %d", st)
	}
	if st, _, _ := b.socketToken("forged"); st != 403 {
		t.Fatalf("socket token with a wrong CSRF header: %d", st)
	}
	st, hdr, tok := b.socketToken(b.csrf)
	ticket, _ := tok["token"].(string)
	if st != 200 || !strings.HasPrefix(ticket, "vst1.") || hdr.Get("Cache-Control") != "no-store" || ticket == b.session() {
		t.Fatalf("socket token: %d %v %v", st, hdr, tok)
	}
	expect(t, h.do("GET", "/api/auth/me", bearer(ticket), nil), 401, "")
	live := dialSocket(t, h.srv.URL, ticket)
	if e := nextEvent(t, live, 10*time.Second); e.name != "auth-success" || e.data["role"] != "admin" {
		t.Fatalf("socket with a ticket: %+v", e)
	}
	forged := dialSocket(t, h.srv.URL, ticket[:len(ticket)-2]+"xx")
	if e := nextEvent(t, forged, 10*time.Second); e.name != "auth-error" {
		t.Fatalf("socket with a forged ticket: %+v", e)
	}

	// Queueing: without the CSRF token it is refused and nothing is queued.
	form := url.Values{"image": {slowImage}, "folder": {"sleep"}, "environment": {""}, "project": {""}, "variables": {"LINES=2\n"}}
	noCSRF := url.Values{"csrf": {""}}
	for k, v := range form {
		noCSRF[k] = v
	}
	wantStatus(t, "queue without CSRF", b.post("/runs", noCSRF), 403, "Request refused")
	if r := h.do("GET", "/api/executions", admin, nil); r.get("data", "total") != float64(0) {
		t.Fatalf("a refused form queued a run: %s", r.raw)
	}
	wantStatus(t, "bad variables", b.follow("bad variables", b.post("/runs", url.Values{"variables": {"no equals sign"}}), 200, "is not KEY=value"), 200, `class="alert"`)

	p = b.post("/runs", form)
	loc := p.header.Get("Location")
	if !strings.HasPrefix(loc, "/runs/") {
		t.Fatalf("queue: %d %v %s", p.status, p.header, p.body)
	}
	taskID := strings.TrimPrefix(loc, "/runs/")
	p = b.follow("queue", p, 200, "Run "+taskID+" queued.")
	if !strings.Contains(p.body, `action="/runs/`+taskID+`/cancel"`) || !strings.Contains(p.body, `id="log-search"`) {
		t.Fatalf("a pending run's page: %s", p.body)
	}
	if e := nextEvent(t, live, 10*time.Second); e.name != "execution-updated" || e.data["taskId"] != taskID {
		t.Fatalf("the ticket's socket did not hear of the queued run: %+v", e)
	}
	if r := h.do("GET", "/api/executions/"+taskID, admin, nil); r.str("execution", "folder") != "sleep" ||
		!strings.Contains(r.raw, `"envVarNames":["LINES"]`) {
		t.Fatalf("queued run: %s", r.raw)
	}
	wantStatus(t, "runs list", b.get("/runs"), 200, `<tr data-task="`+taskID+`">`)
	h.waitFor(admin, taskID, 60*time.Second, func(r resp) bool { return r.str("execution", "status") == "RUNNING" })

	// Cancelling the running run.
	b.follow("cancel", b.post("/runs/"+taskID+"/cancel", nil), 200, "Cancellation requested.")
	h.waitFor(admin, taskID, 60*time.Second, final)
	p = b.get("/runs/" + taskID)
	if !strings.Contains(p.body, "CANCELLED") || strings.Contains(p.body, "/cancel\"") || !strings.Contains(p.body, `<details class="confirm">`) {
		t.Fatalf("a cancelled run's page: %s", p.body)
	}
	b.follow("cancel again", b.post("/runs/"+taskID+"/cancel", nil), 200, "Execution already finished")

	// Re-running queues the same image, folder and project again.
	p = b.post("/runs/"+taskID+"/rerun", nil)
	again := strings.TrimPrefix(p.header.Get("Location"), "/runs/")
	if again == "" || again == taskID {
		t.Fatalf("rerun: %d %v", p.status, p.header)
	}
	b.follow("rerun", p, 200, "queued again from "+taskID)
	if r := h.do("GET", "/api/executions/"+again, admin, nil); r.str("execution", "image") != slowImage || r.str("execution", "folder") != "sleep" {
		t.Fatalf("re-run: %s", r.raw)
	}

	// A viewer sees no controls, and a forged form (with the viewer's own valid token) is refused.
	vi := h.join(adminAcc, "vi@example.com", "viewer")
	v := h.withSession(t, vi.token)
	p = v.get("/runs")
	wantStatus(t, "viewer's runs", p, 200, taskID)
	if strings.Contains(p.body, `method="post" action="/runs"`) || strings.Contains(p.body, "Queue a run") {
		t.Fatalf("a viewer sees the queue form: %s", p.body)
	}
	p = v.get("/runs/" + again)
	for _, ctl := range []string{"/cancel", "/rerun", "/delete"} {
		if strings.Contains(p.body, ctl) {
			t.Fatalf("a viewer sees %s: %s", ctl, p.body)
		}
	}
	wantStatus(t, "viewer queues", v.post("/runs", fresh(form)), 403, "Viewers cannot")
	wantStatus(t, "viewer cancels", v.post("/runs/"+again+"/cancel", nil), 403, "Viewers cannot")
	wantStatus(t, "viewer deletes", v.post("/runs/"+taskID+"/delete", nil), 403, "Viewers cannot")
	wantStatus(t, "viewer re-runs", v.post("/runs/"+taskID+"/rerun", nil), 403, "Viewers cannot")
	if st, _, _ := v.socketToken(v.csrf); st != 200 {
		t.Fatalf("a viewer's socket token: %d", st) // viewers follow runs live too
	}

	// Deleting the finished run; the other is cancelled to end the test.
	b.follow("cancel the re-run", b.post("/runs/"+again+"/cancel", nil), 200, "Cancellation requested.")
	b.follow("delete", b.post("/runs/"+taskID+"/delete", nil), 200, "Run "+taskID+" deleted.")
	expect(t, h.do("GET", "/api/executions/"+taskID, admin, nil), 404, "")
	wantStatus(t, "deleted run", b.get("/runs/"+taskID), 404, "Run not found")
	h.waitFor(admin, again, 60*time.Second, final)
}

// Projects are created and edited through the dashboard; secret values never reach the browser
// and an empty secret field keeps the stored value.
func TestWebProjects(t *testing.T) {
	h := newHarness(t, harnessOpts{dialect: "sqlite"})
	b := h.signUpBrowser(t, "pm@example.com", "Projects Co")
	admin := bearer(b.session())
	const secret = "s3cr3t-value-42"
	const secret2 = "an0ther-secret-77"

	wantStatus(t, "projects, empty", b.get("/projects"), 200, "No projects yet")
	form := url.Values{"name": {"Shop"}, "image": {passImage}, "url_staging": {"https://staging.example.com"},
		"defaultFolder": {"smoke"}, "timeoutSeconds": {"600"}, "reportFolders": {"reports/html\n"},
		"variables": {"PLAIN=visible"}, "newSecrets": {"API_TOKEN=" + secret}}
	noCSRF := url.Values{"csrf": {"forged"}}
	for k, vs := range form {
		noCSRF[k] = vs
	}
	wantStatus(t, "create without CSRF", b.post("/projects", noCSRF), 403, "Request refused")
	p := b.post("/projects", form)
	if !strings.HasPrefix(p.header.Get("Location"), "/projects/") {
		t.Fatalf("create: %d %v %s", p.status, p.header, p.body)
	}
	id := strings.TrimPrefix(p.header.Get("Location"), "/projects/")
	p = b.follow("create", p, 200, "Project Shop created.")
	for _, want := range []string{`value="https://staging.example.com"`, "PLAIN=visible", `name="secretKey" value="API_TOKEN"`,
		"********", `value="smoke"`, `value="600"`, "reports/html"} {
		if !strings.Contains(p.body, want) {
			t.Fatalf("project page lacks %q: %s", want, p.body)
		}
	}
	noSecret := func(what string, p page) {
		t.Helper()
		if strings.Contains(p.body, secret) || strings.Contains(p.body, secret2) {
			t.Fatalf("%s shows a secret value: %s", what, p.body)
		}
	}
	noSecret("project page", p)
	noSecret("projects list", b.get("/projects"))
	noSecret("runs page", b.get("/runs"))

	// Editing with the secret field left empty keeps the stored value; the service checks it
	// (a secret sent as the mask with no stored value would be refused).
	edit := url.Values{"name": {"Shop 2"}, "image": {passImage}, "defaultFolder": {"all"}, "timeoutSeconds": {""},
		"variables": {"PLAIN=changed"}, "secretKey": {"API_TOKEN"}, "secretValue": {""}, "newSecrets": {"SECOND=" + secret2}}
	p = b.follow("edit", b.post("/projects/"+id, edit), 200, "Project saved.")
	noSecret("edited project page", p)
	if !strings.Contains(p.body, "PLAIN=changed") || !strings.Contains(p.body, `name="secretKey" value="SECOND"`) || strings.Contains(p.body, "staging.example.com") {
		t.Fatalf("edited project: %s", p.body)
	}
	r := h.do("GET", "/api/projects/"+id, admin, nil)
	if !strings.Contains(r.raw, `"name":"Shop 2"`) || !strings.Contains(r.raw, `"key":"API_TOKEN"`) || strings.Contains(r.raw, secret) {
		t.Fatalf("edited project in the API: %s", r.raw)
	}
	// The kept secret still holds its value: the run's container gets it (checked by the run
	// tests); here, removing it drops it.
	p = b.follow("remove a secret", b.post("/projects/"+id, url.Values{"name": {"Shop 2"}, "secretKey": {"API_TOKEN", "SECOND"},
		"secretValue": {"", ""}, "secretRemove": {"API_TOKEN"}}), 200, "Project saved.")
	if strings.Contains(p.body, `value="API_TOKEN"`) || !strings.Contains(p.body, `value="SECOND"`) {
		t.Fatalf("removing a secret: %s", p.body)
	}
	b.follow("invalid URL", b.post("/projects/"+id, url.Values{"name": {"Shop 2"}, "url_production": {"ftp://x"}}), 200, "must be an http(s) URL")

	// A viewer reads the project, without the form or the secrets, and cannot change it.
	vi := h.join(account{token: b.session()}, "vi@example.com", "viewer")
	v := h.withSession(t, vi.token)
	p = v.get("/projects/" + id)
	wantStatus(t, "viewer's project", p, 200, "SECOND=********")
	noSecret("viewer's project", p)
	if strings.Contains(p.body, `method="post" action="/projects`) {
		t.Fatalf("a viewer sees the project form: %s", p.body)
	}
	if p = v.get("/projects"); strings.Contains(p.body, "Create project") {
		t.Fatalf("a viewer sees the create form: %s", p.body)
	}
	wantStatus(t, "viewer edits", v.post("/projects/"+id, fresh(edit)), 403, "Viewers cannot")
	wantStatus(t, "viewer creates", v.post("/projects", fresh(form)), 403, "Viewers cannot")
	wantStatus(t, "unknown project", b.get("/projects/nope"), 404, "Project not found")
}
