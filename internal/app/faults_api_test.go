//go:build integration

package app_test

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"verdict/internal/testenv"
)

// TestDatabaseOutageAnswers503: while the database refuses the service, every request that
// needs it answers 503 with Retry-After and the API's error body naming the database (never a
// 500, and never a 401 that would sign a client out), the dashboard shows a 503 page and keeps
// its session, a socket is told to come back later, and /metrics counts the refusals; once the database is back, the same requests succeed without
// a restart.
func TestDatabaseOutageAnswers503(t *testing.T) {
	dsn := testenv.PostgresDB(t)
	h := newHarness(t, harnessOpts{dialect: "postgres", databaseURL: dsn})
	admin := h.signup("outage@example.com", "Outage Co")
	a := bearer(admin.token)
	task := h.do("POST", "/api/executions", a, map[string]any{"image": passImage})
	expect(t, task, 201, "")
	taskID := task.str("execution", "taskId")
	b := h.browser(t)
	b.get("/login")
	wantRedirect(t, "sign in", b.post("/login", url.Values{"email": {admin.email}, "password": {password}}), "/runs")
	before, _ := h.scrape("")

	restore := testenv.RefuseConnections(t, dsn)
	calls := []struct {
		method, path string
		auth         auth
		body         any
	}{
		{"GET", "/api/executions", a, nil},
		{"GET", "/api/executions/" + taskID, a, nil},
		{"GET", "/api/executions/" + taskID + "/logs", a, nil},
		{"POST", "/api/executions", a, map[string]any{"image": passImage}},
		{"POST", "/api/executions/" + taskID + "/cancel", a, nil},
		{"GET", "/api/organization/usage", a, nil},
		{"GET", "/api/projects", a, nil},
		{"POST", "/api/auth/login", anon, map[string]any{"email": admin.email, "password": password}},
	}
	for _, c := range calls {
		r := h.do(c.method, c.path, c.auth, c.body)
		expect(t, r, 503, "Service unavailable")
		if got := r.header.Get("Retry-After"); got != "5" {
			t.Errorf("%s %s: Retry-After %q, want 5", c.method, c.path, got)
		}
		if !strings.Contains(r.str("message"), "database") || r.get("retryAfter") != 5.0 {
			t.Errorf("%s %s: body %s", c.method, c.path, r.raw)
		}
	}
	p := b.get("/runs")
	if p.status != 503 || p.header.Get("Retry-After") != "5" || !strings.Contains(p.body, "database is unavailable") {
		t.Errorf("dashboard during the outage: %d %q %s", p.status, p.header.Get("Retry-After"), p.body)
	}
	// A socket's credential cannot be checked either: auth-error says so, and when to come back.
	if e := nextEvent(t, dialSocket(t, h.srv.URL, admin.token), 15*time.Second); e.name != "auth-error" ||
		e.data["error"] != "Service unavailable" || e.data["retryAfter"] != 5.0 {
		t.Errorf("socket during the outage: %s %v", e.name, e.data)
	}
	ready := h.do("GET", "/readyz", anon, nil)
	if ready.status != 503 {
		t.Errorf("/readyz during the outage: %d %s", ready.status, ready.raw)
	}
	during, _ := h.scrape("")
	moved(t, before, during, `verdict_unavailable_total{dependency="database"}`, float64(len(calls)+1))
	if n := during[`verdict_http_requests_total{code="500",route="GET /api/executions"}`]; n != 0 {
		t.Errorf("%v answers 500 during the outage", n)
	}

	restore()
	// The pool reconnects on the next request; nothing is restarted.
	deadline := time.Now().Add(10 * time.Second)
	for r := h.do("GET", "/api/executions", a, nil); r.status != 200; r = h.do("GET", "/api/executions", a, nil) {
		if time.Now().After(deadline) {
			t.Fatalf("after the outage: %d %s", r.status, r.raw)
		}
		time.Sleep(100 * time.Millisecond)
	}
	expect(t, h.do("GET", "/api/executions/"+taskID, a, nil), 200, "")
	expect(t, h.do("POST", "/api/executions", a, map[string]any{"image": passImage}), 201, "")
	expect(t, h.do("GET", "/readyz", anon, nil), 200, "")
	if p := b.get("/runs"); p.status != 200 {
		t.Errorf("dashboard after the outage: %d", p.status)
	}
	if e := nextEvent(t, dialSocket(t, h.srv.URL, admin.token), 15*time.Second); e.name != "auth-success" {
		t.Errorf("socket after the outage: %s %v", e.name, e.data)
	}
}
