//go:build integration

package app_test

import (
	"net/url"
	"strings"
	"testing"
)

// A project's repository is set and shown through the dashboard's project form, checked as the
// API checks it.
func TestWebProjectRepository(t *testing.T) {
	h := newHarness(t, harnessOpts{dialect: "sqlite"})
	b := h.signUpBrowser(t, "repo@example.com", "Repo Co")
	admin := bearer(b.session())
	wantStatus(t, "projects", b.get("/projects"), 200, `name="repository"`)
	p := b.post("/projects", url.Values{"name": {"Shop"}, "image": {passImage}, "repository": {" acme/shop "}})
	id := strings.TrimPrefix(p.header.Get("Location"), "/projects/")
	p = b.follow("create", p, 200, "Project Shop created.")
	if !strings.Contains(p.body, `id="repository" name="repository" value="acme/shop"`) {
		t.Fatalf("project page: %s", p.body)
	}
	if r := h.do("GET", "/api/projects/"+id, admin, nil); r.str("project", "repository") != "acme/shop" {
		t.Fatalf("API: %s", r.raw)
	}
	b.follow("a bad repository", b.post("/projects/"+id, url.Values{"name": {"Shop"}, "image": {passImage}, "repository": {"acme/../x"}}),
		200, "repository must be owner/name")
	b.follow("a GitLab path", b.post("/projects/"+id, url.Values{"name": {"Shop"}, "image": {passImage}, "repository": {"acme/web/shop"}}),
		200, "Project saved.")
	if r := h.do("GET", "/api/projects/"+id, admin, nil); r.str("project", "repository") != "acme/web/shop" {
		t.Fatalf("API after the edit: %s", r.raw)
	}
}
