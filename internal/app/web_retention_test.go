//go:build integration

package app_test

import (
	"net/url"
	"strings"
	"testing"
)

// The dashboard's retention: an admin sets and resets the organization's retention through the
// settings form (with its CSRF token), a value out of bounds comes back as the service's
// message, and a viewer sees the days without a form; on a run's page a developer pins and
// unpins it, a viewer has no button and a forged post is refused.
func TestWebRetention(t *testing.T) {
	h := newHarness(t, harnessOpts{dialect: "sqlite", env: map[string]string{"VERDICT_RUNNER": "none"}})
	b := h.signUpBrowser(t, "ada@example.com", "Retention Co")
	admin := account{token: b.session(), email: "ada@example.com"}
	orgID := h.do("GET", "/api/auth/me", bearer(admin.token), nil).str("data", "organization", "id")

	p := b.get("/settings")
	for _, want := range []string{`action="/settings/retention"`, `name="logsDays"`, `name="runsDays"`, `placeholder="14"`,
		`placeholder="90"`, "kept <strong>14 days</strong>", "<strong>90 days</strong>"} {
		if !strings.Contains(p.body, want) {
			t.Fatalf("settings page lacks %q: %s", want, p.body)
		}
	}
	wantStatus(t, "retention without CSRF", b.post("/settings/retention", url.Values{"csrf": {""}, "logsDays": {"3"}}), 403, "Request refused")
	b.follow("save retention", b.post("/settings/retention", url.Values{"logsDays": {"7"}, "runsDays": {"30"}}), 200, "Retention saved.")
	if r := h.org(orgID).Retention; r.LogsDays == nil || *r.LogsDays != 7 || r.RunsDays == nil || *r.RunsDays != 30 {
		t.Fatalf("after saving: %+v", r)
	}
	p = b.get("/settings")
	if !strings.Contains(p.body, `name="logsDays" type="number" min="1" max="14" step="1" value="7"`) ||
		!strings.Contains(p.body, "kept <strong>7 days</strong>") {
		t.Fatalf("the saved retention is not shown: %s", p.body)
	}
	b.follow("above the plan", b.post("/settings/retention", url.Values{"logsDays": {"15"}, "runsDays": {""}}), 200,
		"logsDays may be at most 14, the free plan")
	b.get("/settings")
	b.follow("not a number", b.post("/settings/retention", url.Values{"logsDays": {"a week"}}), 200, "logsDays must be a whole number of days")
	b.get("/settings")
	b.follow("reset", b.post("/settings/retention", url.Values{"logsDays": {""}, "runsDays": {""}}), 200, "Retention saved.")
	if r := h.org(orgID).Retention; r.LogsDays != nil || r.RunsDays != nil {
		t.Fatalf("after the reset: %+v", r)
	}

	viewer := h.withSession(t, h.join(admin, "vic@example.com", "viewer").token)
	p = viewer.get("/settings")
	wantStatus(t, "viewer settings", p, 200, "Only admins change the retention.")
	if strings.Contains(p.body, `action="/settings/retention"`) || !strings.Contains(p.body, "kept <strong>14 days</strong>") {
		t.Fatalf("the viewer's settings page: %s", p.body)
	}
	wantStatus(t, "viewer's forged retention", viewer.post("/settings/retention", url.Values{"logsDays": {"1"}}), 403, "Forbidden")

	// A run's page: pin and unpin.
	dev := h.withSession(t, h.join(admin, "dev@example.com", "developer").token)
	task := h.queue(bearer(admin.token), map[string]any{"image": passImage, "taskId": "keep-me"})
	p = dev.get("/runs/" + task)
	if !strings.Contains(p.body, `action="/runs/keep-me/pin"`) || !strings.Contains(p.body, "under the organization") {
		t.Fatalf("no pin button: %s", p.body)
	}
	p = dev.follow("pin", dev.post("/runs/"+task+"/pin", nil), 200, "Run pinned")
	if !strings.Contains(p.body, "Pinned: kept until unpinned") || !strings.Contains(p.body, `action="/runs/keep-me/unpin"`) {
		t.Fatalf("the pinned run's page: %s", p.body)
	}
	if got := h.do("GET", "/api/executions/"+task, bearer(admin.token), nil); got.get("execution", "pinned") != true {
		t.Fatalf("pinned through the page: %s", got.raw)
	}
	p = viewer.get("/runs/" + task)
	if strings.Contains(p.body, "/unpin\"") || strings.Contains(p.body, "/pin\"") {
		t.Fatalf("a viewer has a pin button: %s", p.body)
	}
	wantStatus(t, "viewer's forged unpin", viewer.post("/runs/"+task+"/unpin", nil), 403, "Viewers cannot pin or unpin runs")
	dev.get("/runs/" + task)
	dev.follow("unpin", dev.post("/runs/"+task+"/unpin", nil), 200, "Run unpinned")
	if got := h.do("GET", "/api/executions/"+task, bearer(admin.token), nil); got.get("execution", "pinned") != false {
		t.Fatalf("unpinned through the page: %s", got.raw)
	}
}
