package web

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"maps"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"verdict/internal/domain"
	"verdict/internal/identity"
	"verdict/internal/integrations"
	"verdict/internal/planning"
	"verdict/internal/ports"
	"verdict/internal/store"
	"verdict/internal/testcases"
)

// The doubles of the test cases, planner and trackers' services refuse as the real ones do
// (viewers cannot write; only admins save tracker settings), so the tests see what a page does
// with a refusal.

type roleIDs struct {
	ids
	role domain.Role
}

func (r roleIDs) AuthenticateClaims(ctx context.Context, userID, orgID string) (*identity.Principal, error) {
	p, err := r.ids.AuthenticateClaims(ctx, userID, orgID)
	p.Role = r.role
	return p, err
}

var errViewer = domain.Forbidden("Forbidden", "Viewers cannot change test cases")

type fakeCases struct {
	ports.TestCases
	created []testcases.Input
	imports [][]byte
	updated []testcases.Input
	deleted []string
}

func (f *fakeCases) Create(_ context.Context, p *identity.Principal, in testcases.Input) (*domain.TestCase, error) {
	if !p.CanWrite() {
		return nil, errViewer
	}
	if strings.TrimSpace(*in.Title) == "" {
		return nil, domain.BadRequest("Missing required fields", "title is required")
	}
	f.created = append(f.created, in)
	return &domain.TestCase{ID: "c9", ProjectID: in.ProjectID, Title: *in.Title}, nil
}

func (f *fakeCases) List(_ context.Context, _ *identity.Principal, fl store.TestCaseFilter) ([]domain.TestCase, int, error) {
	if fl.ProjectID != "p1" {
		return nil, 0, nil
	}
	return []domain.TestCase{{ID: "c1", ProjectID: "p1", Title: "Pay <by card>", Suite: "Checkout", Priority: "high", Tags: []string{"smoke"}},
		{ID: "c2", ProjectID: "p1", Title: "Sign in", Suite: "Auth"}}, 2, nil
}

func (f *fakeCases) Get(_ context.Context, _ *identity.Principal, id string) (*domain.TestCase, error) {
	if id != "c1" {
		return nil, domain.NotFound("Test case not found", "No such test case")
	}
	return &domain.TestCase{ID: "c1", ProjectID: "p1", Title: "Pay", Steps: []domain.TestStep{{Action: "Open", Expected: "Shown"}}}, nil
}

func (f *fakeCases) Update(_ context.Context, p *identity.Principal, id string, in testcases.Input) (*domain.TestCase, error) {
	if !p.CanWrite() {
		return nil, errViewer
	}
	if id != "c1" {
		return nil, domain.NotFound("Test case not found", "No such test case")
	}
	if strings.TrimSpace(*in.Title) == "" {
		return nil, domain.BadRequest("Missing required fields", "title is required")
	}
	f.updated = append(f.updated, in)
	return &domain.TestCase{ID: id, ProjectID: "p1", Title: *in.Title}, nil
}

func (f *fakeCases) Delete(_ context.Context, p *identity.Principal, id string) error {
	if !p.CanWrite() {
		return errViewer
	}
	f.deleted = append(f.deleted, id)
	return nil
}

func (f *fakeCases) Import(_ context.Context, p *identity.Principal, projectID string, file []byte) (*testcases.ImportResult, error) {
	if !p.CanWrite() {
		return nil, errViewer
	}
	f.imports = append(f.imports, file)
	return &testcases.ImportResult{Imported: 2, Updated: 1, Skipped: []testcases.Skip{{Line: 4, Reason: "title is required"}}}, nil
}

type fakePlanner struct {
	ports.Planner
	generated []planning.GenerateInput
	deleted   []string
}

var savedPlan = &domain.AutomationPlan{ID: "plan1", ProjectID: "p1", Framework: "Playwright", DesignPattern: "Page Object",
	TestIDs: []string{"c1"}, Provider: "builtin", Model: "builtin", CreatedAt: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC),
	Markdown: "# Plan\n\nSee **this** and `code`.\n\n<script>alert(1)</script>\n\n- one\n- <b>two</b>\n\n```ts\nconst a = '<img>';\n```\n\n| A | B |\n|---|---|\n| x | <i>y</i> |\n"}

func (f *fakePlanner) Generate(_ context.Context, p *identity.Principal, in planning.GenerateInput) (*domain.AutomationPlan, error) {
	if !p.CanWrite() {
		return nil, domain.Forbidden("Forbidden", "Viewers cannot generate automation plans")
	}
	if len(in.TestIDs) == 0 {
		return nil, domain.BadRequest("Validation error", "testIds must name 1 to 30 test cases")
	}
	f.generated = append(f.generated, in)
	return savedPlan, nil
}

func (f *fakePlanner) History(context.Context, *identity.Principal, string) ([]domain.AutomationPlan, error) {
	return []domain.AutomationPlan{*savedPlan}, nil
}

func (f *fakePlanner) Open(_ context.Context, _ *identity.Principal, id string) (*domain.AutomationPlan, error) {
	if id != savedPlan.ID {
		return nil, domain.NotFound("Plan not found", "No such plan in your organization")
	}
	return savedPlan, nil
}

func (f *fakePlanner) Delete(_ context.Context, p *identity.Principal, id string) error {
	if !p.CanWrite() {
		return domain.Forbidden("Forbidden", "Viewers cannot delete automation plans")
	}
	f.deleted = append(f.deleted, id)
	return nil
}

type fakeTrackers struct {
	ports.Trackers
	linear  integrations.Settings
	saved   []integrations.Input
	tickets []integrations.TicketInput
}

func (f *fakeTrackers) Settings(_ context.Context, _ *identity.Principal, provider string) (*integrations.Settings, error) {
	if provider != "linear" {
		return &integrations.Settings{Values: map[string]string{}}, nil
	}
	l := f.linear
	return &l, nil
}

func (f *fakeTrackers) Save(_ context.Context, p *identity.Principal, provider string, in integrations.Input) (*integrations.Settings, error) {
	if err := p.RequireAdmin(); err != nil {
		return nil, err
	}
	if in.APIKey != nil && *in.APIKey == "wrong" {
		return nil, domain.BadRequest("Invalid API key", "Linear refused the API key")
	}
	f.saved = append(f.saved, in)
	f.linear = linearSettings(true, *in.Enabled, in.Values["teamId"])
	return &f.linear, nil
}

func (f *fakeTrackers) CreateTicket(_ context.Context, _ *identity.Principal, provider string, in integrations.TicketInput) (*integrations.Created, error) {
	if provider != "linear" || !f.linear.Enabled {
		return nil, domain.BadRequest("Integration not configured", "Linear is not set up for your organization")
	}
	f.tickets = append(f.tickets, in)
	return &integrations.Created{Ticket: domain.Ticket{Provider: "linear", Identifier: "ENG-1",
		URL: "https://linear.app/acme/issue/ENG-1", Title: "t"}}, nil
}

func linearSettings(configured, enabled bool, team string) integrations.Settings {
	return integrations.Settings{Configured: configured, Enabled: enabled, Values: map[string]string{"teamId": team}}
}

type tools struct {
	cases    *fakeCases
	planner  *fakePlanner
	trackers *fakeTrackers
}

func toolServer(role domain.Role, run *domain.Execution) (*Server, *tools) {
	t := &tools{cases: &fakeCases{}, planner: &fakePlanner{}, trackers: &fakeTrackers{}}
	s := New(Deps{Identity: roleIDs{role: role}, Executions: execs{run: run}, JWT: tokens{}, CSRFKey: []byte("k"),
		TestCases: t.cases, Planner: t.planner, Trackers: t.trackers, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	return s, t
}

// post sends a form with the session's CSRF token (none when csrf is false).
func post(t *testing.T, s *Server, path string, form url.Values, csrf bool) (*http.Response, string) {
	t.Helper()
	form = maps.Clone(form)
	if csrf {
		form.Set("csrf", s.csrfToken("session", "good"))
	}
	req := httptest.NewRequest("POST", path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return serve(s, req)
}

func serve(s *Server, req *http.Request) (*http.Response, string) {
	req.AddCookie(&http.Cookie{Name: SessionCookie, Value: "good"})
	w := httptest.NewRecorder()
	s.ServeHTTP(w, req)
	body, _ := io.ReadAll(w.Result().Body)
	return w.Result(), string(body)
}

func wantStatus(t *testing.T, what string, res *http.Response, body string, status int, location string) {
	t.Helper()
	if res.StatusCode != status || (location != "" && res.Header.Get("Location") != location) {
		t.Fatalf("%s: %d (Location %q), want %d %q: %s", what, res.StatusCode, res.Header.Get("Location"), status, location, body)
	}
}

func TestTestCasesPages(t *testing.T) {
	viewer, vt := toolServer(domain.RoleViewer, nil)
	res, body := get(t, viewer, "/test-cases")
	wantStatus(t, "list", res, body, 200, "")
	if !strings.Contains(body, "Pay &lt;by card&gt;") || !strings.Contains(body, `href="/test-cases/c1"`) || strings.Contains(body, "new-case-form") ||
		strings.Contains(body, "import-form") {
		t.Fatalf("a viewer's list: %s", body)
	}
	if res, body := get(t, viewer, "/test-cases?project=p2"); res.StatusCode != 200 || !strings.Contains(body, "No test cases in") {
		t.Fatalf("an empty project: %d %s", res.StatusCode, body)
	}
	form := url.Values{"project": {"p1"}, "title": {"Refund"}, "tags": {"smoke, , pay"}, "steps": {"Open the order | Shown\nRefund\n"}}
	res, body = post(t, viewer, "/test-cases", form, false)
	wantStatus(t, "no CSRF token", res, body, 403, "")
	res, body = post(t, viewer, "/test-cases", form, true)
	wantStatus(t, "a viewer creates", res, body, 403, "")
	if len(vt.cases.created) != 0 {
		t.Fatal("a refused form created a test case")
	}

	dev, dt := toolServer(domain.RoleDeveloper, nil)
	if _, body := get(t, dev, "/test-cases"); !strings.Contains(body, "new-case-form") || !strings.Contains(body, "import-form") {
		t.Fatalf("a developer's list has no forms: %s", body)
	}
	res, body = post(t, dev, "/test-cases", form, true)
	wantStatus(t, "create", res, body, 303, "/test-cases?project=p1")
	in := dt.cases.created[0]
	if in.ProjectID != "p1" || *in.Title != "Refund" || strings.Join(*in.Tags, "/") != "smoke/pay" || len(*in.Steps) != 2 ||
		(*in.Steps)[0] != (domain.TestStep{Action: "Open the order", Expected: "Shown"}) || (*in.Steps)[1].Action != "Refund" {
		t.Fatalf("create input: %+v %+v", in, *in.Steps)
	}
	form.Set("title", " ")
	form.Set("suite", "Kept <suite>")
	res, body = post(t, dev, "/test-cases", form, true)
	wantStatus(t, "a refused form", res, body, 400, "")
	if !strings.Contains(body, "Missing required fields") || !strings.Contains(body, `value="Kept &lt;suite&gt;"`) {
		t.Fatalf("a refused form is not shown again with its error: %s", body)
	}
	// A test case's page: its form, filled in, for writers; its facts for viewers.
	if res, body := get(t, dev, "/test-cases/c1"); res.StatusCode != 200 || !strings.Contains(body, "Open | Shown</textarea>") ||
		!strings.Contains(body, `action="/test-cases/c1/delete"`) {
		t.Fatalf("a test case's page: %d %s", res.StatusCode, body)
	}
	if _, body := get(t, viewer, "/test-cases/c1"); strings.Contains(body, "case-form") || strings.Contains(body, "/delete") {
		t.Fatalf("a viewer's test case page: %s", body)
	}
	edit := url.Values{"title": {"Pay again"}, "steps": {"Open | Shown"}}
	res, body = post(t, dev, "/test-cases/c1", edit, false)
	wantStatus(t, "edit without a token", res, body, 403, "")
	res, body = post(t, viewer, "/test-cases/c1", edit, true)
	wantStatus(t, "a viewer edits", res, body, 403, "")
	res, body = post(t, dev, "/test-cases/c1", edit, true)
	wantStatus(t, "edit", res, body, 303, "/test-cases/c1")
	if u := dt.cases.updated; len(u) != 1 || *u[0].Title != "Pay again" || u[0].ProjectID != "" {
		t.Fatalf("update input: %+v", u)
	}
	res, body = post(t, dev, "/test-cases/c1", url.Values{"title": {""}, "suite": {"S<1>"}}, true)
	wantStatus(t, "a refused edit", res, body, 400, "")
	if !strings.Contains(body, "title is required") || !strings.Contains(body, `value="S&lt;1&gt;"`) {
		t.Fatalf("a refused edit: %s", body)
	}
	res, body = post(t, viewer, "/test-cases/c1/delete", url.Values{}, true)
	wantStatus(t, "a viewer deletes", res, body, 403, "")
	res, body = post(t, dev, "/test-cases/c1/delete", url.Values{}, true)
	wantStatus(t, "delete", res, body, 303, "/test-cases?project=p1")

	// The CSV import: a multipart form, its token among the fields.
	upload := func(s *Server, csrf bool) (*http.Response, string) {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		if csrf {
			_ = mw.WriteField("csrf", s.csrfToken("session", "good"))
		}
		_ = mw.WriteField("project", "p1")
		fw, _ := mw.CreateFormFile("file", "cases.csv")
		_, _ = fw.Write([]byte("Title\nA\n"))
		_ = mw.Close()
		req := httptest.NewRequest("POST", "/test-cases/import", &buf)
		req.Header.Set("Content-Type", mw.FormDataContentType())
		return serve(s, req)
	}
	res, body = upload(dev, false)
	wantStatus(t, "import without a token", res, body, 403, "")
	res, body = upload(viewer, true)
	wantStatus(t, "a viewer imports", res, body, 403, "")
	res, body = upload(dev, true)
	wantStatus(t, "import", res, body, 200, "")
	if len(dt.cases.imports) != 1 || string(dt.cases.imports[0]) != "Title\nA\n" || !strings.Contains(body, "<strong>2</strong> imported, <strong>1</strong> updated, <strong>1</strong> skipped") ||
		!strings.Contains(body, "<td>4</td><td>title is required</td>") {
		t.Fatalf("import: %d files; page %s", len(dt.cases.imports), body)
	}
}

func TestPlannerPages(t *testing.T) {
	viewer, vt := toolServer(domain.RoleViewer, nil)
	res, body := get(t, viewer, "/planner")
	wantStatus(t, "planner", res, body, 200, "")
	if !strings.Contains(body, `href="/planner/plan1"`) || strings.Contains(body, "plan-form") {
		t.Fatalf("a viewer's planner: %s", body)
	}
	form := url.Values{"project": {"p1"}, "all": {"on"}, "framework": {"Playwright"}, "designPattern": {"Page Object"}}
	res, body = post(t, viewer, "/planner", form, false)
	wantStatus(t, "no CSRF token", res, body, 403, "")
	res, body = post(t, viewer, "/planner", form, true)
	wantStatus(t, "a viewer generates", res, body, 403, "")
	res, body = post(t, viewer, "/planner/plan1/delete", url.Values{}, true)
	wantStatus(t, "a viewer deletes", res, body, 403, "")
	if len(vt.planner.generated)+len(vt.planner.deleted) != 0 {
		t.Fatal("a refused form reached the planner")
	}

	dev, dt := toolServer(domain.RoleDeveloper, nil)
	if _, body := get(t, dev, "/planner"); !strings.Contains(body, "plan-form") || !strings.Contains(body, `value="c2"`) {
		t.Fatalf("a developer's planner: %s", body)
	}
	res, body = post(t, dev, "/planner", form, true)
	wantStatus(t, "generate all", res, body, 303, "/planner/plan1")
	if g := dt.planner.generated[0]; strings.Join(g.TestIDs, ",") != "c1,c2" || g.Framework != "Playwright" || g.DesignPattern != "Page Object" {
		t.Fatalf("generate input: %+v", g)
	}
	res, body = post(t, dev, "/planner", url.Values{"project": {"p1"}, "framework": {"Playwright"}, "designPattern": {"Fixture"}}, true)
	wantStatus(t, "no case chosen", res, body, 400, "")
	if !strings.Contains(body, "testIds must name 1 to 30 test cases") {
		t.Fatalf("the refusal is not shown: %s", body)
	}
	res, body = post(t, dev, "/planner", url.Values{"project": {"p1"}, "case": {"c2"}, "framework": {"Jest"}, "designPattern": {"Fixture"}}, true)
	wantStatus(t, "generate chosen", res, body, 303, "/planner/plan1")
	if g := dt.planner.generated[1]; strings.Join(g.TestIDs, ",") != "c2" {
		t.Fatalf("generate input: %+v", g)
	}

	// The plan's Markdown is shown with its structure, and none of its HTML.
	res, body = get(t, dev, "/planner/plan1")
	wantStatus(t, "plan", res, body, 200, "")
	for _, want := range []string{"<h2>Plan</h2>", "See <strong>this</strong> and <code>code</code>.", "&lt;script&gt;alert(1)&lt;/script&gt;",
		"<li>&lt;b&gt;two&lt;/b&gt;</li>", "const a = &#39;&lt;img&gt;&#39;;", "<th scope=\"col\">A</th>", "<td>&lt;i&gt;y&lt;/i&gt;</td>"} {
		if !strings.Contains(body, want) {
			t.Fatalf("plan page lacks %q: %s", want, body)
		}
	}
	if strings.Contains(body, "<script>alert") || strings.Contains(body, "<b>two") || strings.Contains(body, "<i>y") {
		t.Fatal("the plan's HTML reached the page")
	}
	if res, body := get(t, dev, "/planner/other"); res.StatusCode != 404 {
		t.Fatalf("another plan: %d %s", res.StatusCode, body)
	}
	res, body = post(t, dev, "/planner/plan1/delete", url.Values{}, false)
	wantStatus(t, "delete without a token", res, body, 403, "")
	res, body = post(t, dev, "/planner/plan1/delete", url.Values{}, true)
	wantStatus(t, "delete", res, body, 303, "/planner")
	if strings.Join(dt.planner.deleted, ",") != "plan1" {
		t.Fatalf("deleted %v", dt.planner.deleted)
	}
}

func TestIntegrationsPage(t *testing.T) {
	form := url.Values{"apiKey": {"lin_api_SECRET"}, "teamId": {"team-1"}, "enabled": {"on"}}
	dev, dt := toolServer(domain.RoleDeveloper, nil)
	res, body := get(t, dev, "/settings/integrations")
	wantStatus(t, "integrations", res, body, 200, "")
	if strings.Contains(body, "linear-form") || !strings.Contains(body, "Only admins change these settings.") {
		t.Fatalf("a developer's integrations page: %s", body)
	}
	res, body = post(t, dev, "/settings/integrations/linear", form, true)
	wantStatus(t, "a developer saves", res, body, 403, "")
	if len(dt.trackers.saved) != 0 {
		t.Fatal("a refused form saved settings")
	}

	admin, at := toolServer(domain.RoleAdmin, nil)
	if _, body := get(t, admin, "/settings/integrations"); !strings.Contains(body, "linear-form") || !strings.Contains(body, "Connect Linear") {
		t.Fatalf("an admin's integrations page: %s", body)
	}
	res, body = post(t, admin, "/settings/integrations/linear", form, false)
	wantStatus(t, "no CSRF token", res, body, 403, "")
	bad := url.Values{"apiKey": {"wrong"}, "teamId": {"team-1"}, "enabled": {"on"}}
	res, body = post(t, admin, "/settings/integrations/linear", bad, true)
	wantStatus(t, "a refused key", res, body, 400, "")
	if !strings.Contains(body, "Linear refused the API key") || strings.Contains(body, `value="wrong"`) {
		t.Fatalf("a refused key: %s", body)
	}
	res, body = post(t, admin, "/settings/integrations/linear", form, true)
	wantStatus(t, "save", res, body, 303, "/settings/integrations")
	if s := at.trackers.saved[0]; s.APIKey == nil || *s.APIKey != "lin_api_SECRET" || s.Values["teamId"] != "team-1" || !*s.Enabled {
		t.Fatalf("save input: %+v", s)
	}
	res, body = get(t, admin, "/settings/integrations")
	if res.StatusCode != 200 || !strings.Contains(body, "<dt>API key</dt><dd>set</dd>") || strings.Contains(body, "SECRET") || !strings.Contains(body, "Disconnect Linear") {
		t.Fatalf("configured page: %s", body)
	}
	// An empty key field keeps the stored key.
	res, body = post(t, admin, "/settings/integrations/linear", url.Values{"teamId": {"team-2"}}, true)
	wantStatus(t, "save without a key", res, body, 303, "/settings/integrations")
	if s := at.trackers.saved[1]; s.APIKey != nil || *s.Enabled {
		t.Fatalf("save input: %+v", s)
	}
}

func TestRunTicketButtons(t *testing.T) {
	start := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	run := &domain.Execution{TaskID: "r-1", OrganizationID: "o1", Image: "shop/tests:1", Status: domain.ExecFailed, QueuedAt: start,
		Tickets: []domain.Ticket{{Provider: "linear", Identifier: "ENG-7", URL: "https://linear.app/acme/issue/ENG-7", Title: "Old"}}}
	viewer, vt := toolServer(domain.RoleViewer, run)
	if _, body := get(t, viewer, "/runs/r-1"); strings.Contains(body, "/tickets/") || !strings.Contains(body, `href="https://linear.app/acme/issue/ENG-7"`) {
		t.Fatalf("no tracker on: %s", body)
	}
	vt.trackers.linear = linearSettings(true, true, "t")
	_, body := get(t, viewer, "/runs/r-1")
	if !strings.Contains(body, `action="/runs/r-1/tickets/linear"`) || strings.Contains(body, "/tickets/monday") {
		t.Fatalf("ticket buttons: %s", body)
	}
	res, body := post(t, viewer, "/runs/r-1/tickets/linear", url.Values{}, false)
	wantStatus(t, "no CSRF token", res, body, 403, "")
	if len(vt.trackers.tickets) != 0 {
		t.Fatal("a refused form created a ticket")
	}
	// Every member may file a ticket (the service decides): a viewer's button works.
	res, body = post(t, viewer, "/runs/r-1/tickets/linear", url.Values{}, true)
	wantStatus(t, "ticket", res, body, 303, "/runs/r-1")
	if len(vt.trackers.tickets) != 1 || vt.trackers.tickets[0].TaskID != "r-1" {
		t.Fatalf("tickets %+v", vt.trackers.tickets)
	}
	if res, body := post(t, viewer, "/runs/r-1/tickets/youtrack", url.Values{}, true); res.StatusCode != 404 {
		t.Fatalf("an unknown tracker: %d %s", res.StatusCode, body)
	}
	vt.trackers.linear.Enabled = false
	res, body = post(t, viewer, "/runs/r-1/tickets/linear", url.Values{}, true)
	wantStatus(t, "tracker turned off", res, body, 303, "/runs/r-1")

	running := *run
	running.Status = domain.ExecRunning
	s, st := toolServer(domain.RoleDeveloper, &running)
	st.trackers.linear = linearSettings(true, true, "")
	if _, body := get(t, s, "/runs/r-1"); strings.Contains(body, "/tickets/linear") {
		t.Fatalf("a running run has ticket buttons: %s", body)
	}
}
