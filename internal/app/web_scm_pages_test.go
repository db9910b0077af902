//go:build integration

package app_test

import (
	"net/url"
	"regexp"
	"strings"
	"testing"

	"verdict/internal/scm/github"
	"verdict/internal/scm/scmtest"
)

var newHookSecret = regexp.MustCompile(`id="new-hook-secret" class="mono" type="text" readonly value="([0-9a-f]+)"`)

// The dashboard's source-control pages against a fake GitHub on 127.0.0.1 (allowed with
// VERDICT_EGRESS_ALLOW): an admin saves the organization's token through /settings/integrations
// (a refused token and an internal API address come back above the form, the token never shown),
// adds a hook on the project's hooks page and sees its secret once, on the answer to the form (a
// reload does not show it), and the secret shown is the hook's: a ping signed with it is taken.
// A viewer sees the hooks and the token's state without any form; another organization's
// project's hooks page is the 404 page. The hook is deleted and GitHub disconnected from the
// pages.
func TestWebSCMPages(t *testing.T) {
	for _, d := range []string{"sqlite", "postgres"} {
		t.Run(d, func(t *testing.T) {
			h := newHarness(t, harnessOpts{dialect: d, env: map[string]string{"VERDICT_EGRESS_ALLOW": "127.0.0.1", "VERDICT_RUNNER": "none"}})
			gh := scmtest.NewGitHub(t, "ghp_verdict", "acme/shop")
			b := h.signUpBrowser(t, "scm-pages@example.com", "SCM Pages Co")
			admin := account{token: b.session(), email: "scm-pages@example.com"}
			a := bearer(admin.token)

			p := b.get("/settings/integrations")
			wantStatus(t, "integrations", p, 200, `id="github-form"`)
			if !strings.Contains(p.body, "Connect GitLab") {
				t.Fatalf("no GitLab form: %s", p.body)
			}
			p = b.post("/settings/integrations/github", url.Values{"token": {"ghp_wrong"}, "apiUrl": {gh.URL}})
			wantStatus(t, "a refused token", p, 400, "Invalid token")
			if strings.Contains(p.body, "ghp_wrong") || !strings.Contains(p.body, `value="`+gh.URL+`"`) {
				t.Fatalf("a refused token's page: %s", p.body)
			}
			wantStatus(t, "an internal API URL", b.post("/settings/integrations/github",
				url.Values{"token": {"ghp_verdict"}, "apiUrl": {"http://169.254.169.254/api/v3"}}), 400, "Validation error")
			if r := h.do("GET", "/api/integrations/github", a, nil); r.get("data", "configured") != false {
				t.Fatalf("saved after refusals: %s", r.raw)
			}
			p = b.follow("save", b.post("/settings/integrations/github", url.Values{"token": {"ghp_verdict"}, "apiUrl": {gh.URL}}), 200, "GitHub token saved.")
			if !strings.Contains(p.body, "<dt>Token</dt><dd>set</dd>") || !strings.Contains(p.body, "Disconnect GitHub") || strings.Contains(p.body, "ghp_verdict") {
				t.Fatalf("the saved token's page: %s", p.body)
			}
			if r := h.do("GET", "/api/integrations/github", a, nil); r.get("data", "configured") != true || r.str("data", "apiUrl") != gh.URL {
				t.Fatalf("the API after the form: %s", r.raw)
			}

			project := h.project(admin, "Shop")
			path := "/projects/" + project + "/hooks"
			wantStatus(t, "project page", b.get("/projects/"+project), 200, `href="`+path+`"`)
			wantStatus(t, "no hooks", b.get(path), 200, "No hooks yet.")
			p = b.post(path, url.Values{"provider": {"github"}, "branches": {"main, release/*"}, "push": {"on"}, "requests": {"on"},
				"baseUrl": {"https://pr-{pr}.preview.example.com"}})
			wantStatus(t, "create", p, 201, "Copy the secret now")
			m := newHookSecret.FindStringSubmatch(p.body)
			if m == nil || len(m[1]) != 64 || !strings.Contains(p.body, "application/json") {
				t.Fatalf("the answer shows no secret or instructions: %s", p.body)
			}
			secret := m[1]
			list := h.do("GET", "/api/projects/"+project+"/hooks", a, nil)
			hooks, _ := list.get("data", "hooks").([]any)
			if len(hooks) != 1 || strings.Contains(list.raw, secret) {
				t.Fatalf("hooks after the form: %s", list.raw)
			}
			hook := hooks[0].(map[string]any)
			hookURL, id := hook["url"].(string), hook["id"].(string)
			if !strings.Contains(p.body, `value="`+hookURL+`"`) || !strings.Contains(list.raw, `"branches":["main","release/*"]`) {
				t.Fatalf("the hook %s, the page %s", list.raw, p.body)
			}
			ping := []byte(`{"zen":"Keep it logically awesome.","hook_id":1}`)
			expect(t, h.deliverHook(hookURL, ping, "X-GitHub-Event", "ping", "X-GitHub-Delivery", "page-ping",
				"X-Hub-Signature-256", github.Sign(ping, secret)), 200, "")
			p = b.get(path)
			wantStatus(t, "reload", p, 200, hookURL)
			if strings.Contains(p.body, secret) || strings.Contains(p.body, "Copy the secret now") {
				t.Fatalf("a reload shows the secret: %s", p.body)
			}
			wantStatus(t, "create without CSRF", b.post(path, url.Values{"csrf": {""}, "provider": {"github"}, "push": {"on"}}), 403, "Request refused")

			viewer := h.withSession(t, h.join(admin, "vic@example.com", "viewer").token)
			p = viewer.get(path)
			wantStatus(t, "a viewer's hooks page", p, 200, hookURL)
			if strings.Contains(p.body, `action="`+path+`"`) || strings.Contains(p.body, "/delete\"") || strings.Contains(p.body, secret) {
				t.Fatalf("a viewer has forms: %s", p.body)
			}
			p = viewer.get("/settings/integrations")
			wantStatus(t, "a viewer's integrations page", p, 200, "<dt>Token</dt><dd>set</dd>")
			if strings.Contains(p.body, "github-form") || strings.Contains(p.body, "Disconnect GitHub") {
				t.Fatalf("a viewer has source-control forms: %s", p.body)
			}
			wantStatus(t, "a viewer's forged hook", viewer.post(path, url.Values{"provider": {"github"}, "push": {"on"}}), 403, "Viewers cannot change projects")
			wantStatus(t, "a viewer's forged token", viewer.post("/settings/integrations/github", url.Values{"token": {"ghp_verdict"}}), 403, "")

			other := h.withSession(t, h.signup("other-scm@example.com", "Other SCM Co").token)
			wantStatus(t, "another organization's hooks page", other.get(path), 404, "Project not found")
			wantStatus(t, "another organization's delete", other.post(path+"/"+id+"/delete", nil), 404, "")

			b.get(path)
			b.follow("delete", b.post(path+"/"+id+"/delete", nil), 200, "Hook deleted")
			if l := h.do("GET", "/api/projects/"+project+"/hooks", a, nil); !strings.Contains(l.raw, `"hooks":[]`) {
				t.Fatalf("after the delete: %s", l.raw)
			}
			b.get("/settings/integrations")
			b.follow("disconnect", b.post("/settings/integrations/github/remove", nil), 200, "GitHub disconnected.")
			if r := h.do("GET", "/api/integrations/github", a, nil); r.get("data", "configured") != false {
				t.Fatalf("after the disconnect: %s", r.raw)
			}
		})
	}
}
