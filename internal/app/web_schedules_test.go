//go:build integration

package app_test

import (
	"net/url"
	"strings"
	"testing"
)

// The dashboard's schedules page: a developer adds a schedule through the form (its CSRF token
// checked), sees its next fire times, pauses, resumes and deletes it; a malformed cron comes back
// as the service's words; a viewer reads the page without forms and a forged post is refused;
// another organization's project is the 404 page; secrets are never shown.
func TestWebSchedules(t *testing.T) {
	h := newHarness(t, harnessOpts{dialect: "sqlite", env: map[string]string{"VERDICT_RUNNER": "none"}})
	b := h.signUpBrowser(t, "ada@example.com", "Schedule Pages Co")
	admin := account{token: b.session(), email: "ada@example.com"}
	project := h.project(admin, "Web")
	path := "/projects/" + project + "/schedules"

	p := b.get("/projects/" + project)
	if !strings.Contains(p.body, `href="`+path+`"`) {
		t.Fatalf("the project page has no link to its schedules: %s", p.body)
	}
	dev := h.withSession(t, h.join(admin, "dev@example.com", "developer").token)
	p = dev.get(path)
	wantStatus(t, "empty schedules page", p, 200, "No schedules yet.")
	if !strings.Contains(p.body, `action="`+path+`"`) {
		t.Fatalf("no form for a developer: %s", p.body)
	}
	wantStatus(t, "create without CSRF", dev.post(path, url.Values{"csrf": {""}, "name": {"Nightly"}}), 403, "Request refused")
	dev.follow("bad cron", dev.post(path, url.Values{"name": {"Nightly"}, "cron": {"at two"}, "timezone": {"UTC"}}), 200,
		`Invalid cron: cron &#34;at two&#34; must have 5 fields`)
	dev.get(path)
	dev.follow("bad zone", dev.post(path, url.Values{"name": {"Nightly"}, "cron": {"0 2 * * *"}, "timezone": {"Paris"}}), 200,
		`Invalid timezone: timezone &#34;Paris&#34; is not an IANA time zone`)
	dev.get(path)
	// The harness's clock stands at Tuesday 2026-03-10 09:00 UTC.
	p = dev.follow("create", dev.post(path, url.Values{"name": {"Nightly"}, "cron": {"30 2 * * *"}, "timezone": {"Europe/Paris"},
		"labels": {"suite:nightly"}, "variables": {"MODE=full"}, "secrets": {"API_TOKEN=s3cr3t-page-value"}}), 200, "Schedule Nightly created.")
	for _, want := range []string{"2026-03-11 01:30 UTC", "2026-03-12 01:30 UTC", "2026-03-13 01:30 UTC", "30 2 * * *", "Europe/Paris",
		"suite:nightly", "MODE=full", "API_TOKEN=********", `/pause"`} {
		if !strings.Contains(p.body, want) {
			t.Fatalf("the schedules page lacks %q: %s", want, p.body)
		}
	}
	if strings.Contains(p.body, "s3cr3t-page-value") {
		t.Fatal("the page shows a secret")
	}
	list := h.do("GET", "/api/projects/"+project+"/schedules", bearer(admin.token), nil)
	items, _ := list.get("data", "schedules").([]any)
	if len(items) != 1 {
		t.Fatalf("after the form: %s", list.raw)
	}
	id := items[0].(map[string]any)["id"].(string)

	p = dev.follow("pause", dev.post(path+"/"+id+"/pause", nil), 200, "Schedule Nightly paused.")
	if !strings.Contains(p.body, "none while paused") || !strings.Contains(p.body, `/resume"`) {
		t.Fatalf("the paused schedule: %s", p.body)
	}
	dev.follow("resume", dev.post(path+"/"+id+"/resume", nil), 200, "Schedule Nightly resumed.")

	viewer := h.withSession(t, h.join(admin, "vic@example.com", "viewer").token)
	p = viewer.get(path)
	wantStatus(t, "viewer's page", p, 200, "Nightly")
	if strings.Contains(p.body, `action="`+path+`"`) || strings.Contains(p.body, "/pause\"") || strings.Contains(p.body, "/delete\"") {
		t.Fatalf("a viewer has forms: %s", p.body)
	}
	wantStatus(t, "viewer's forged delete", viewer.post(path+"/"+id+"/delete", nil), 403, "Viewers cannot create, change or delete schedules")

	other := h.withSession(t, h.signup("bea@example.com", "Other Co").token)
	wantStatus(t, "another organization's project", other.get(path), 404, "Project not found")
	wantStatus(t, "another organization's delete", other.post(path+"/"+id+"/delete", nil), 404, "Project not found")

	dev.get(path)
	dev.follow("delete", dev.post(path+"/"+id+"/delete", nil), 200, "Schedule deleted.")
	if l := h.do("GET", "/api/projects/"+project+"/schedules", bearer(admin.token), nil); !strings.Contains(l.raw, `"schedules":[]`) {
		t.Fatalf("after the delete: %s", l.raw)
	}
}
