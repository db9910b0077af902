//go:build integration

package app_test

import (
	"encoding/csv"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestAuditLog: an admin reads who changed what (role changes, members, API keys, schedules,
// settings), from where, filtered and paged, and exports it as CSV and JSON lines; a
// developer is refused, another organization's admin sees none of it, and no route changes an
// entry.
func TestAuditLog(t *testing.T) {
	forEachDB(t, func(t *testing.T, h *harness) {
		admin := h.signup("audit-admin@example.com", "Audit Org")
		dev := h.join(admin, "audit-dev@example.com", "developer")
		other := h.signup("audit-other@example.com", "Other Org")

		expect(t, h.do("PATCH", "/api/users/"+dev.id+"/role", bearer(admin.token), map[string]any{"role": "viewer"}), 200, "")
		key := h.do("POST", "/api/auth/api-keys", bearer(admin.token), map[string]any{"name": "ci"})
		expect(t, key, 201, "")
		keyID := key.str("data", "id")
		expect(t, h.do("PATCH", "/api/organization", bearer(admin.token), map[string]any{"name": "Audit Org Renamed"},
			"X-Forwarded-For", "198.51.100.9"), 200, "")
		proj := h.do("POST", "/api/projects", bearer(admin.token), map[string]any{"name": "audited", "image": "alpine:3"})
		expect(t, proj, 201, "")
		projectID := proj.str("project", "id")
		sched := h.do("POST", "/api/projects/"+projectID+"/schedules", bearer(admin.token),
			map[string]any{"name": "nightly", "cron": "0 3 * * *", "timezone": "UTC"})
		expect(t, sched, 201, "")

		all := h.do("GET", "/api/audit?limit=100", bearer(admin.token), nil)
		expect(t, all, 200, "")
		entries := all.get("data", "entries").([]any)
		actions := map[string]map[string]any{}
		for _, e := range entries {
			m := e.(map[string]any)
			actions[m["action"].(string)] = m
		}
		for _, want := range []string{"user.role_changed", "apikey.created", "organization.updated", "schedule.created",
			"invitation.created", "invitation.accepted"} {
			if actions[want] == nil {
				t.Errorf("no %s entry in %s", want, all.raw)
			}
		}
		role := actions["user.role_changed"]
		if role["actorId"] != admin.id || role["actorName"] != "User audit-admin@example.com" ||
			role["target"].(map[string]any)["id"] != dev.id || role["ip"] != "127.0.0.1" || role["createdAt"] == "" {
			t.Errorf("role change entry %v", role)
		}
		if d := role["details"].(map[string]any); d["from"] != "developer" || d["to"] != "viewer" {
			t.Errorf("role change details %v", d)
		}
		if total := all.get("data", "total").(float64); int(total) != len(entries) {
			t.Errorf("total %v, %d entries", total, len(entries))
		}
		if strings.Contains(all.raw, key.str("apiKey")) {
			t.Errorf("the API key's value in the audit log: %s", all.raw)
		}

		// Filters: action (exact and prefix), actor, time, page.
		r := h.do("GET", "/api/audit?action=apikey.created", bearer(admin.token), nil)
		expect(t, r, 200, "")
		if n := len(r.get("data", "entries").([]any)); n != 1 {
			t.Errorf("action filter: %d entries: %s", n, r.raw)
		}
		r = h.do("GET", "/api/audit?action=invitation.*", bearer(admin.token), nil)
		if n := len(r.get("data", "entries").([]any)); n != 2 {
			t.Errorf("action prefix filter: %d entries, want 2: %s", n, r.raw)
		}
		r = h.do("GET", "/api/audit?actor="+dev.id, bearer(admin.token), nil)
		if n := len(r.get("data", "entries").([]any)); n != 1 || r.raw == "" {
			t.Errorf("actor filter (the developer accepted the invitation): %d entries: %s", n, r.raw)
		}
		r = h.do("GET", "/api/audit?until=2000-01-01T00:00:00Z", bearer(admin.token), nil)
		if r.get("data", "total").(float64) != 0 {
			t.Errorf("until in the past: %s", r.raw)
		}
		r = h.do("GET", "/api/audit?limit=2&offset=1", bearer(admin.token), nil)
		page := r.get("data", "entries").([]any)
		if len(page) != 2 || page[0].(map[string]any)["id"] != entries[1].(map[string]any)["id"] {
			t.Errorf("page 2 of 2: %s", r.raw)
		}
		if r.get("data", "total").(float64) != float64(len(entries)) {
			t.Errorf("a page's total: %s", r.raw)
		}
		org := actions["organization.updated"]
		if org["ip"] != "127.0.0.1" {
			t.Errorf("X-Forwarded-For from an untrusted peer was believed: %v", org["ip"])
		}

		for _, bad := range []string{"limit=0", "limit=501", "offset=-1", "since=yesterday", "format=xml",
			"since=2026-03-10T10:00:00Z&until=2026-03-10T09:00:00Z"} {
			expect(t, h.do("GET", "/api/audit?"+bad, bearer(admin.token), nil), 400, "")
		}
		expect(t, h.do("GET", "/api/audit", bearer(dev.token), nil), 403, "")
		expect(t, h.do("GET", "/api/audit?format=csv", bearer(dev.token), nil), 403, "")
		expect(t, h.do("GET", "/api/audit", anon, nil), 401, "")
		o := h.do("GET", "/api/audit", bearer(other.token), nil)
		expect(t, o, 200, "")
		for _, e := range o.get("data", "entries").([]any) {
			if strings.Contains(e.(map[string]any)["actorId"].(string), admin.id) {
				t.Errorf("another organization's entry: %v", e)
			}
		}

		// Exports: every entry, no page.
		csvAns := h.do("GET", "/api/audit?format=csv&limit=1", bearer(admin.token), nil)
		if csvAns.status != 200 || !strings.HasPrefix(csvAns.header.Get("Content-Type"), "text/csv") {
			t.Fatalf("csv export: %d %s", csvAns.status, csvAns.header)
		}
		rows, err := csv.NewReader(strings.NewReader(csvAns.raw)).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != len(entries)+1 || rows[0][0] != "id" || rows[1][0] != entries[0].(map[string]any)["id"] {
			t.Errorf("csv export: %d rows for %d entries: %q", len(rows), len(entries), csvAns.raw)
		}
		jl := h.do("GET", "/api/audit?format=jsonl&action=user.*", bearer(admin.token), nil)
		if jl.status != 200 || jl.header.Get("Content-Type") != "application/x-ndjson" {
			t.Fatalf("jsonl export: %d %s", jl.status, jl.header)
		}
		lines := strings.Split(strings.TrimSpace(jl.raw), "\n")
		for _, l := range lines {
			var e map[string]any
			if err := json.Unmarshal([]byte(l), &e); err != nil || !strings.HasPrefix(e["action"].(string), "user.") {
				t.Errorf("jsonl line %q: %v", l, err)
			}
		}
		if len(lines) != 1 {
			t.Errorf("jsonl export of user.*: %d lines, want 1 (the role change)", len(lines))
		}

		// Revoking the key is audited too; no route changes or deletes entries.
		expect(t, h.do("DELETE", "/api/auth/api-keys/"+keyID, bearer(admin.token), nil), 200, "")
		r = h.do("GET", "/api/audit?action=apikey.revoked", bearer(admin.token), nil)
		if r.get("data", "total").(float64) != 1 {
			t.Errorf("key revocation not audited: %s", r.raw)
		}
		for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
			if r := h.do(m, "/api/audit", bearer(admin.token), nil); r.status != 404 {
				t.Errorf("%s /api/audit: %d, want 404 (no such route)", m, r.status)
			}
		}
	})
}

// TestAuditCSVFormulas: a value a member chose (their name) that a spreadsheet would run as a
// formula is exported behind a quote.
func TestAuditCSVFormulas(t *testing.T) {
	h := newHarness(t, harnessOpts{dialect: "sqlite"})
	r := h.do("POST", "/api/auth/signup", anon, map[string]any{"email": "formula@example.com", "password": password,
		"name": "=HYPERLINK(1)", "organizationName": "Formula Org"})
	expect(t, r, 201, "")
	token := r.str("token")
	expect(t, h.do("POST", "/api/auth/api-keys", bearer(token), map[string]any{"name": "ci"}), 201, "")
	r = h.do("GET", "/api/audit?format=csv", bearer(token), nil)
	rows, err := csv.NewReader(strings.NewReader(r.raw)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[1][4] != "apikey.created" || rows[1][3] != "'=HYPERLINK(1)" {
		t.Fatalf("csv rows %q, want the apikey.created row with its actor's name quoted", rows)
	}
}
