package web

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"verdict/internal/domain"
	"verdict/internal/identity"
	"verdict/internal/ports"
	"verdict/internal/scm"
)

// The source-control double refuses as scm.Service does: only admins save a token, a token the
// host refuses is 400 Invalid token, an internal API address 400; viewers cannot add or delete
// hooks; another organization's project (anything but p1) is 404.

type fakeSCM struct {
	ports.SourceControl
	settings map[string]scm.Settings
	saved    []scm.SaveInput
	created  []scm.HookInput
	hooks    []scm.HookInfo
}

func (f *fakeSCM) Settings(_ context.Context, _ *identity.Principal, provider string) (*scm.Settings, error) {
	st := f.settings[provider]
	return &st, nil
}

func (f *fakeSCM) Save(_ context.Context, p *identity.Principal, provider string, in scm.SaveInput) (*scm.Settings, error) {
	if err := p.RequireAdmin(); err != nil {
		return nil, err
	}
	switch {
	case in.Token == "ghp_wrong":
		return nil, domain.BadRequest("Invalid token", "GitHub refused this token; nothing was saved")
	case strings.Contains(in.APIURL, "169.254.169.254"):
		return nil, domain.BadRequest("Validation error", "apiUrl is a link-local address")
	}
	f.saved = append(f.saved, in)
	f.settings[provider] = scm.Settings{Configured: true, APIURL: in.APIURL}
	st := f.settings[provider]
	return &st, nil
}

var errProject = domain.NotFound("Project not found", "No such project in your organization")

func (f *fakeSCM) CreateHook(_ context.Context, p *identity.Principal, projectID string, in scm.HookInput) (*scm.CreatedHook, error) {
	if !p.CanWrite() {
		return nil, domain.Forbidden("Forbidden", "Viewers cannot change projects' hooks")
	}
	if projectID != "p1" {
		return nil, errProject
	}
	if in.Provider != domain.ProviderGitHub && in.Provider != domain.ProviderGitLab {
		return nil, domain.BadRequest("Validation error", "provider must be github or gitlab")
	}
	f.created = append(f.created, in)
	id := "h" + string(rune('0'+len(f.created)))
	info := scm.HookInfo{Hook: domain.Hook{ID: id, ProjectID: projectID, Provider: in.Provider, Branches: in.Branches, Events: in.Events,
		BaseURLTemplate: in.BaseURL, CreatedAt: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)}, URL: "https://verdict.example.com/api/hooks/" + in.Provider + "/" + id}
	f.hooks = append(f.hooks, info)
	return &scm.CreatedHook{HookInfo: info, Secret: "s3cret-shown-once-" + id}, nil
}

func (f *fakeSCM) ListHooks(_ context.Context, _ *identity.Principal, projectID string) ([]scm.HookInfo, error) {
	if projectID != "p1" {
		return nil, errProject
	}
	return f.hooks, nil
}

func (f *fakeSCM) DeleteHook(_ context.Context, p *identity.Principal, projectID, hookID string) error {
	if !p.CanWrite() {
		return domain.Forbidden("Forbidden", "Viewers cannot change projects' hooks")
	}
	if projectID != "p1" {
		return errProject
	}
	i := slices.IndexFunc(f.hooks, func(h scm.HookInfo) bool { return h.ID == hookID })
	if i < 0 {
		return domain.NotFound("Hook not found", "No such hook on this project")
	}
	f.hooks = slices.Delete(f.hooks, i, i+1)
	return nil
}

// projectExecs knows the project p1 of the organization o1.
type projectExecs struct{ execs }

func (projectExecs) GetProject(_ context.Context, p *identity.Principal, id string) (*domain.Project, error) {
	if id != "p1" || p.OrgID != "o1" {
		return nil, errProject
	}
	return &domain.Project{ID: "p1", OrganizationID: "o1", Name: "Shop", Repository: "acme/shop"}, nil
}

// removingTrackers is the trackers' double with Remove, which the disconnect button calls.
type removingTrackers struct {
	*fakeTrackers
	removed []string
}

func (f *removingTrackers) Remove(_ context.Context, p *identity.Principal, provider string) (bool, error) {
	if err := p.RequireAdmin(); err != nil {
		return false, err
	}
	f.removed = append(f.removed, provider)
	return true, nil
}

func scmServer(role domain.Role) (*Server, *fakeSCM, *removingTrackers) {
	f := &fakeSCM{settings: map[string]scm.Settings{}}
	tr := &removingTrackers{fakeTrackers: &fakeTrackers{}}
	s := New(Deps{Identity: roleIDs{role: role}, Executions: projectExecs{}, JWT: tokens{}, CSRFKey: []byte("k"),
		Trackers: tr, SourceControl: f, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	return s, f, tr
}

// The Source control part of /settings/integrations: every member sees whether a token is set
// and the API URL; admins save a token (never shown again) and disconnect; the service's
// refusals are shown above the form with the API URL typed, never the token.
func TestSourceControlSettingsPage(t *testing.T) {
	dev, df, _ := scmServer(domain.RoleDeveloper)
	df.settings["gitlab"] = scm.Settings{Configured: true, APIURL: "https://gitlab.example.com"}
	res, body := get(t, dev, "/settings/integrations")
	wantStatus(t, "a developer's page", res, body, 200, "")
	for _, want := range []string{"Source control", `id="github-state"`, "<dt>Token</dt><dd><span class=\"muted\">not set</span></dd>",
		"<dt>Token</dt><dd>set</dd>", "https://gitlab.example.com"} {
		if !strings.Contains(body, want) {
			t.Fatalf("a developer's page lacks %q: %s", want, body)
		}
	}
	if strings.Contains(body, "github-form") || strings.Contains(body, "Disconnect GitLab") {
		t.Fatalf("a developer has source-control forms: %s", body)
	}
	res, body = post(t, dev, "/settings/integrations/github", url.Values{"token": {"ghp_good"}}, true)
	wantPage(t, "a developer saves", res, body, 403, "Forbidden")
	if len(df.saved) != 0 {
		t.Fatal("a refused form saved a token")
	}

	admin, af, tr := scmServer(domain.RoleAdmin)
	if _, body := get(t, admin, "/settings/integrations"); !strings.Contains(body, `id="github-form"`) || !strings.Contains(body, "Connect GitLab") ||
		strings.Contains(body, "Disconnect GitHub") {
		t.Fatalf("an admin's page: %s", body)
	}
	res, body = post(t, admin, "/settings/integrations/github", url.Values{"token": {"ghp_good"}}, false)
	wantStatus(t, "no CSRF token", res, body, 403, "")
	res, body = post(t, admin, "/settings/integrations/github", url.Values{"token": {"ghp_wrong"}, "apiUrl": {"https://ghe.example.com/api/v3"}}, true)
	wantPage(t, "a refused token", res, body, 400, "GitHub refused this token; nothing was saved")
	if strings.Contains(body, "ghp_wrong") || !strings.Contains(body, `value="https://ghe.example.com/api/v3"`) {
		t.Fatalf("a refused token's page: %s", body)
	}
	res, body = post(t, admin, "/settings/integrations/gitlab", url.Values{"token": {"glpat-x"}, "apiUrl": {"http://169.254.169.254"}}, true)
	wantPage(t, "an internal API URL", res, body, 400, "apiUrl is a link-local address")
	if len(af.saved) != 0 {
		t.Fatalf("refused forms saved: %+v", af.saved)
	}
	res, body = post(t, admin, "/settings/integrations/github", url.Values{"token": {"ghp_SECRET"}, "apiUrl": {" https://ghe.example.com/api/v3 "}}, true)
	wantStatus(t, "save", res, body, 303, "/settings/integrations")
	if len(af.saved) != 1 || af.saved[0].Token != "ghp_SECRET" || af.saved[0].APIURL != "https://ghe.example.com/api/v3" {
		t.Fatalf("saved %+v", af.saved)
	}
	res, body = get(t, admin, "/settings/integrations")
	if res.StatusCode != 200 || strings.Contains(body, "SECRET") ||
		!strings.Contains(body, "Disconnect GitHub") || !strings.Contains(body, "Save GitHub token") {
		t.Fatalf("configured page: %s", body)
	}
	res, body = post(t, admin, "/settings/integrations/github/remove", url.Values{}, true)
	wantStatus(t, "disconnect", res, body, 303, "/settings/integrations")
	if !slices.Equal(tr.removed, []string{"github"}) {
		t.Fatalf("removed %v", tr.removed)
	}
	if c := res.Cookies(); len(c) != 1 || c[0].Name != "verdict_flash" || takeFlash(httptest.NewRecorder(), flashRequest(c[0]), false).Text != "GitHub disconnected." {
		t.Fatalf("the disconnect's flash: %v", c)
	}

	// A server without the source-control service has no such part, and no such form.
	bare, _ := toolServer(domain.RoleAdmin, nil)
	if _, body := get(t, bare, "/settings/integrations"); strings.Contains(body, "Source control") {
		t.Fatalf("no service, yet a part: %s", body)
	}
	res, body = post(t, bare, "/settings/integrations/github", url.Values{"token": {"ghp_good"}}, true)
	wantStatus(t, "no service", res, body, 503, "")
}

// A project's hooks page: every member reads the hooks (never a secret); admins and developers
// add one, and the answer to the form is the page showing its secret once, with where to paste
// it; a reload does not show it. Refusals are shown above the form with what was typed; another
// organization's project is the 404 page.
func TestHooksPage(t *testing.T) {
	viewer, vf, _ := scmServer(domain.RoleViewer)
	res, body := get(t, viewer, "/projects/p1/hooks")
	wantPage(t, "a viewer's empty page", res, body, 200, "No hooks yet.")
	if strings.Contains(body, `action="/projects/p1/hooks"`) {
		t.Fatalf("a viewer has the form: %s", body)
	}
	res, body = post(t, viewer, "/projects/p1/hooks", url.Values{"provider": {"github"}, "push": {"on"}}, true)
	wantPage(t, "a viewer's forged form", res, body, 403, "Viewers cannot change projects&#39; hooks")
	if len(vf.created) != 0 || strings.Contains(body, "s3cret") {
		t.Fatal("a refused form created a hook")
	}

	dev, f, _ := scmServer(domain.RoleDeveloper)
	res, body = get(t, dev, "/projects/p1/hooks")
	wantPage(t, "a developer's page", res, body, 200, `action="/projects/p1/hooks"`)
	res, body = post(t, dev, "/projects/p1/hooks", url.Values{"provider": {"github"}, "push": {"on"}, "requests": {"on"}}, false)
	wantStatus(t, "no CSRF token", res, body, 403, "")

	form := url.Values{"provider": {"github"}, "branches": {"main, release/*\nhotfix/**"}, "push": {"on"}, "requests": {"on"},
		"baseUrl": {" https://pr-{pr}.preview.example.com "}}
	res, body = post(t, dev, "/projects/p1/hooks", form, true)
	wantPage(t, "create", res, body, 201, "s3cret-shown-once-h1")
	for _, want := range []string{`value="https://verdict.example.com/api/hooks/github/h1"`, "Settings → Webhooks → Add webhook",
		"application/json", `data-copy="new-hook-secret"`, `src="/static/copy.js"`, "main, release/*, hotfix/**", "https://pr-{pr}.preview.example.com"} {
		if !strings.Contains(body, want) {
			t.Fatalf("the answer lacks %q: %s", want, body)
		}
	}
	if in := f.created[0]; !slices.Equal(in.Branches, []string{"main", "release/*", "hotfix/**"}) || in.Events != nil ||
		in.BaseURL != "https://pr-{pr}.preview.example.com" || in.Provider != "github" {
		t.Fatalf("hook input %+v", in)
	}
	if res.Header.Get("Location") != "" || len(res.Cookies()) != 0 {
		t.Fatalf("the secret's answer redirects or sets a cookie: %v %v", res.Header, res.Cookies())
	}
	res, body = get(t, dev, "/projects/p1/hooks")
	if res.StatusCode != 200 || strings.Contains(body, "s3cret") || !strings.Contains(body, "https://verdict.example.com/api/hooks/github/h1") {
		t.Fatalf("the reload: %d %s", res.StatusCode, body)
	}

	// The events ticked become the host's event names; none is refused here.
	res, body = post(t, dev, "/projects/p1/hooks", url.Values{"provider": {"gitlab"}, "requests": {"on"}}, true)
	wantPage(t, "merge requests only", res, body, 201, "Secret token")
	if in := f.created[1]; !slices.Equal(in.Events, []string{"merge_request"}) || in.Branches != nil {
		t.Fatalf("gitlab hook input %+v", in)
	}
	res, body = post(t, dev, "/projects/p1/hooks", url.Values{"provider": {"github"}, "push": {"on"}}, true)
	wantStatus(t, "pushes only", res, body, 201, "")
	if in := f.created[2]; !slices.Equal(in.Events, []string{"push"}) {
		t.Fatalf("push hook input %+v", in)
	}
	res, body = post(t, dev, "/projects/p1/hooks", url.Values{"provider": {"gitlab"}, "branches": {"main"}}, true)
	wantPage(t, "no event", res, body, 400, "Tick at least one event")
	if !strings.Contains(body, `<option value="gitlab" selected>`) || !strings.Contains(body, `value="main"`) {
		t.Fatalf("the refused form lost what was typed: %s", body)
	}
	res, body = post(t, dev, "/projects/p1/hooks", url.Values{"provider": {"svn"}, "push": {"on"}}, true)
	wantPage(t, "a refused provider", res, body, 400, "provider must be github or gitlab")
	if len(f.created) != 3 {
		t.Fatalf("refused forms created hooks: %+v", f.created)
	}

	res, body = post(t, dev, "/projects/p1/hooks/h1/delete", url.Values{}, true)
	wantStatus(t, "delete", res, body, 303, "/projects/p1/hooks")
	if len(f.hooks) != 2 || f.hooks[0].ID != "h2" {
		t.Fatalf("after the delete: %+v", f.hooks)
	}
	res, body = post(t, dev, "/projects/p1/hooks/h1/delete", url.Values{}, true)
	wantPage(t, "delete again", res, body, 404, "Hook not found")

	res, body = get(t, dev, "/projects/p2/hooks")
	wantPage(t, "another organization's project", res, body, 404, "Project not found")
	res, body = post(t, dev, "/projects/p2/hooks", url.Values{"provider": {"github"}, "push": {"on"}}, true)
	wantPage(t, "a hook on another organization's project", res, body, 404, "Project not found")

	bare, _ := toolServer(domain.RoleAdmin, nil)
	res, body = get(t, bare, "/projects/p1/hooks")
	wantPage(t, "no service", res, body, 404, "Page not found")
}

// wantPage checks an answer's status and that its body holds text.
func wantPage(t *testing.T, what string, res *http.Response, body string, status int, text string) {
	t.Helper()
	if res.StatusCode != status || !strings.Contains(body, text) {
		t.Fatalf("%s: %d, want %d with %q: %s", what, res.StatusCode, status, text, body)
	}
}

func flashRequest(c *http.Cookie) *http.Request {
	r := httptest.NewRequest("GET", "/", nil)
	r.AddCookie(c)
	return r
}
