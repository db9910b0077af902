//go:build integration

package app_test

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
)

// syncBuffer is a log destination written by the server's goroutines and read by the test.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestAccessLogKeepsSecretsOut sends a request with each kind of credential (a bearer JWT, an
// API key, the dashboard's session cookie, a report link's token in the path and in the query,
// an invitation token in the API's path and in the dashboard's query, a password in a body):
// each request leaves one JSON access line with its method, route pattern, status, duration,
// request ID and, when the API authenticated it, the organization, and no secret anywhere.
func TestAccessLogKeepsSecretsOut(t *testing.T) {
	logs := &syncBuffer{}
	h := newHarness(t, harnessOpts{dialect: "sqlite", log: logs})
	admin := h.signup("logs@example.com", "Log Co")
	key := h.do("POST", "/api/auth/api-keys", bearer(admin.token), map[string]any{"name": "ci"}).str("apiKey")
	_, invitation := h.invite(admin, "guest@example.com", "viewer")
	linkToken, queryToken := "~linktoken0123456789abcdef", "querytoken0123456789abcdef"
	secrets := map[string]string{"jwt": admin.token, "api key": key, "invitation": invitation,
		"report link": linkToken, "report query": queryToken, "password": password}

	type sent struct {
		method, path, route string
		status              int
		org                 bool
		hdr                 []string
	}
	for _, s := range []sent{
		{"GET", "/api/auth/me", "GET /api/auth/me", 200, true, []string{"Authorization", "Bearer " + admin.token}},
		{"GET", "/api/executions", "GET /api/executions", 200, true, []string{"X-Api-Key", key}},
		{"GET", "/api/auth/me", "GET /api/auth/me", 401, false, []string{"Authorization", "Bearer " + admin.token + "x"}},
		{"GET", "/runs", "GET /runs", 200, false, []string{"Cookie", "verdict_session=" + admin.token}},
		{"GET", "/reports/" + admin.orgID + "/run-1/" + linkToken + "/index.html?token=" + queryToken,
			"GET /reports/{org}/{task}/{path...}", 404, false, nil},
		{"GET", "/api/invitations/validate/" + invitation, "GET /api/invitations/validate/{token}", 200, false, nil},
		{"GET", "/accept-invitation?token=" + invitation, "GET /accept-invitation", 200, false, nil},
		{"POST", "/api/auth/login", "POST /api/auth/login", 200, false, nil},
	} {
		logs.mu.Lock()
		logs.b.Reset()
		logs.mu.Unlock()
		var body any
		if s.method == "POST" {
			body = map[string]any{"email": admin.email, "password": password}
		}
		r := h.do(s.method, s.path, anon, body, s.hdr...)
		if r.status != s.status {
			t.Fatalf("%s %s: %d, want %d: %s", s.method, s.route, r.status, s.status, r.raw)
		}
		out := logs.String()
		for kind, secret := range secrets {
			if strings.Contains(out, secret) {
				t.Fatalf("%s %s: the log shows the %s:\n%s", s.method, s.route, kind, out)
			}
		}
		var lines []map[string]any
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("a log line is not JSON: %q", l)
			}
			if m["msg"] == "request" {
				lines = append(lines, m)
			}
		}
		if len(lines) != 1 {
			t.Fatalf("%s %s: %d access lines, want 1:\n%s", s.method, s.route, len(lines), out)
		}
		l := lines[0]
		if l["level"] != "INFO" || l["method"] != s.method || l["route"] != s.route || l["status"] != float64(s.status) ||
			l["request_id"] != r.header.Get("X-Request-Id") || len(r.header.Get("X-Request-Id")) != 16 {
			t.Errorf("%s %s: access line %v (X-Request-Id %q)", s.method, s.route, l, r.header.Get("X-Request-Id"))
		}
		if d, ok := l["duration_ms"].(float64); !ok || d < 0 {
			t.Errorf("%s %s: duration_ms %v", s.method, s.route, l["duration_ms"])
		}
		if org, _ := l["org"].(string); (org == admin.orgID) != s.org || (!s.org && org != "") {
			t.Errorf("%s %s: org %q, want it only when the API authenticated the caller", s.method, s.route, org)
		}
		for _, k := range []string{"path", "url", "query", "authorization", "cookie"} {
			if _, ok := l[k]; ok {
				t.Errorf("%s %s: the access line has %q", s.method, s.route, k)
			}
		}
	}
}
