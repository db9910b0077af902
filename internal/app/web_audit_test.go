//go:build integration

package app_test

import (
	"encoding/csv"
	"strings"
	"testing"
)

// TestWebAuditLog: an admin reads the audit log in the dashboard, filters it by action and
// member, downloads it as CSV; a developer is refused.
func TestWebAuditLog(t *testing.T) {
	h := newHarness(t, harnessOpts{dialect: "sqlite", env: map[string]string{"VERDICT_RUNNER": "none"}})
	b := h.signUpBrowser(t, "ada@example.com", "Audit Co")
	admin := account{token: b.session(), email: "ada@example.com"}
	dev := h.join(admin, "dev@example.com", "developer")
	expect(t, h.do("PATCH", "/api/users/"+dev.id+"/role", bearer(admin.token), map[string]any{"role": "viewer"}), 200, "")

	if p := b.get("/settings"); !strings.Contains(p.body, `href="/settings/audit"`) {
		t.Fatalf("no link to the audit log on the settings page: %s", p.body)
	}
	p := b.get("/settings/audit")
	wantStatus(t, "audit page", p, 200, "user.role_changed")
	for _, want := range []string{"invitation.created", "invitation.accepted", "127.0.0.1", "Entries 1–3 of 3",
		`href="/settings/audit/export?format=csv"`} {
		if !strings.Contains(p.body, want) {
			t.Fatalf("audit page lacks %q: %s", want, p.body)
		}
	}
	p = b.get("/settings/audit?action=invitation.*")
	if strings.Contains(p.body, "user.role_changed") || !strings.Contains(p.body, "Entries 1–2 of 2") {
		t.Fatalf("filtered by action: %s", p.body)
	}
	p = b.get("/settings/audit?actor=" + dev.id)
	if !strings.Contains(p.body, "Entries 1–1 of 1") || !strings.Contains(p.body, "invitation.accepted") {
		t.Fatalf("filtered by member: %s", p.body)
	}
	wantStatus(t, "bad date", b.get("/settings/audit?since=yesterday"), 200, "From must be a date")

	csvPage := b.get("/settings/audit/export?format=csv&action=user.*")
	if csvPage.status != 200 || !strings.HasPrefix(csvPage.header.Get("Content-Type"), "text/csv") {
		t.Fatalf("export: %d %v", csvPage.status, csvPage.header)
	}
	rows, err := csv.NewReader(strings.NewReader(csvPage.body)).ReadAll()
	if err != nil || len(rows) != 2 || rows[1][4] != "user.role_changed" {
		t.Fatalf("export rows %q (%v)", rows, err)
	}
	wantStatus(t, "bad format", b.get("/settings/audit/export?format=xml"), 400, "Invalid export")

	devBrowser := h.withSession(t, h.join(admin, "dev2@example.com", "developer").token)
	wantStatus(t, "developer's audit page", devBrowser.get("/settings/audit"), 403, "Forbidden")
	wantStatus(t, "developer's export", devBrowser.get("/settings/audit/export?format=csv"), 403, "Forbidden")
}
