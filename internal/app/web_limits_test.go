//go:build integration

package app_test

import (
	"bytes"
	"context"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"verdict/internal/api"
	"verdict/internal/domain"
)

// wantLimited fails unless p is the dashboard's 429: a page that says when to try again, and
// Retry-After.
func wantLimited(t *testing.T, what string, p page) {
	t.Helper()
	secs, err := strconv.Atoi(p.header.Get("Retry-After"))
	if p.status != http.StatusTooManyRequests || err != nil || secs < 1 ||
		!strings.Contains(p.body, "Rate limit exceeded") || !strings.Contains(p.body, "try again in "+strconv.Itoa(secs)+" seconds") {
		t.Fatalf("%s: %d, Retry-After %q, want 429 saying when to try again: %.2000s", what, p.status, p.header.Get("Retry-After"), p.body)
	}
}

// enterprise puts the organization on the plan without a member limit (the free plan's three
// seats count pending invitations).
func (h *harness) enterprise(orgID string) {
	h.t.Helper()
	if err := h.app.Store.Organizations().UpdatePlan(context.Background(), orgID, domain.PlanEnterprise, domain.Billing{}); err != nil {
		h.t.Fatal(err)
	}
}

// mailsTo counts the outbox's mails to addresses with prefix.
func (h *harness) mailsTo(prefix string) int {
	n := 0
	for _, m := range h.outbox() {
		for _, to := range m.To {
			if strings.HasPrefix(to, prefix) {
				n++
			}
		}
	}
	return n
}

// The dashboard's invitation form is limited as POST /api/invitations is, with the real limits
// (5 a minute per organization), from the same counter: alone, the sixth in a minute is a 429
// that sends no mail (and then the API's is refused too); after five through the API, the
// dashboard's first is refused. In memory and on Redis.
func TestWebInvitationLimit(t *testing.T) {
	for _, redis := range []bool{false, true} {
		t.Run(map[bool]string{false: "memory", true: "redis"}[redis], func(t *testing.T) {
			h := newHarness(t, harnessOpts{dialect: "sqlite", redis: redis, rateLimits: api.DefaultRateLimits()})

			// Through the dashboard alone.
			admin := h.signup("ada@example.com", "Dashboard Co")
			h.enterprise(admin.orgID)
			b := h.withSession(t, admin.token)
			b.get("/members")
			for i := 1; i <= 5; i++ {
				wantRedirect(t, fmt.Sprintf("invitation %d", i),
					b.post("/members/invite", url.Values{"email": {fmt.Sprintf("guest%d@example.com", i)}, "role": {"viewer"}}), "/members")
			}
			start := time.Now()
			wantLimited(t, "the sixth invitation", b.post("/members/invite", url.Values{"email": {"guest6@example.com"}, "role": {"viewer"}}))
			if n := h.mailsTo("guest"); n != 5 {
				t.Fatalf("%d invitation mails, want 5 (the sixth is refused before any)", n)
			}
			expect(t, h.do("POST", "/api/invitations", bearer(admin.token), map[string]any{"email": "api@example.com", "role": "viewer"}), 429, "Rate limit exceeded")
			t.Logf("sixth invitation refused in %v", time.Since(start).Round(time.Millisecond))

			// Five through the API, then the dashboard.
			other := h.signup("bea@example.com", "API Co")
			h.enterprise(other.orgID)
			for i := 1; i <= 5; i++ {
				expect(t, h.do("POST", "/api/invitations", bearer(other.token), map[string]any{"email": fmt.Sprintf("member%d@example.com", i), "role": "viewer"}), 201, "")
			}
			ob := h.withSession(t, other.token)
			ob.get("/members")
			wantLimited(t, "a dashboard invitation after five through the API", ob.post("/members/invite", url.Values{"email": {"member6@example.com"}, "role": {"viewer"}}))
			if n := h.mailsTo("member"); n != 5 {
				t.Fatalf("%d invitation mails, want 5", n)
			}
			// The first organization's bucket is its own.
			if n := h.mailsTo("guest"); n != 5 {
				t.Fatalf("%d mails to the first organization's guests, want 5", n)
			}
		})
	}
}

// postMultipart posts the CSV import's form with the page's CSRF token.
func (b *browser) postMultipart(path string, fields map[string]string, file string) page {
	b.t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	_ = mw.WriteField("csrf", b.csrf)
	for k, v := range fields {
		_ = mw.WriteField(k, v)
	}
	fw, _ := mw.CreateFormFile("file", "cases.csv")
	_, _ = fw.Write([]byte(file))
	_ = mw.Close()
	req, _ := http.NewRequest("POST", b.h.srv.URL+path, &buf)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	return b.send(req)
}

// limitedAction is a dashboard action and its API twin: the route doing the same, whose
// rate-limit bucket the action must take from.
type limitedAction struct {
	page   string     // "POST /path" (or "GET /path") of the dashboard
	form   url.Values // nil: none
	file   bool       // posted as the CSV import's multipart form
	twin   string     // "METHOD /api/path"
	bucket string     // the twin's, for the failure message
	// count, when set, is what the action would change: the same before and after the refusal.
	count func() int
}

// unlimitedActions are dashboard POST routes that take from no bucket: logout only clears the
// session cookie, calls no service, and must always work.
var unlimitedActions = []string{"POST /logout"}

// Every dashboard action that has an API twin takes from the twin's bucket, under the same key:
// once the twin's bucket is emptied through the API, the action is a 429 (saying when to try
// again, with Retry-After) that changes nothing. Each action's bucket is found this way, not
// by counting (the harness's buckets all allow two), so an action drawing from another bucket
// fails. Every POST route of internal/web is in the table, or named as not limited.
func TestWebActionsShareAPIRateLimits(t *testing.T) {
	h := newHarness(t, harnessOpts{dialect: "sqlite", rateLimits: limitsAt(2)})
	admin := h.signup("ada@example.com", "Limits Co")
	h.enterprise(admin.orgID)
	a := bearer(admin.token)
	b := h.withSession(t, admin.token)
	project := h.do("POST", "/api/projects", a, map[string]any{"name": "Shop", "image": "alpine:3"}).str("project", "id")
	runs := func() int {
		f, ok := h.do("GET", "/api/executions", a, nil).get("data", "total").(float64)
		if !ok {
			return -1
		}
		return int(f)
	}
	list := func(path string, key ...string) int {
		l, ok := h.do("GET", path, a, nil).get(key...).([]any)
		if !ok {
			return -1
		}
		return len(l)
	}
	projects := func() int { return list("/api/projects", "projects") }
	keys := func() int { return list("/api/auth/api-keys", "data") }
	cases := func() int {
		f, ok := h.do("GET", "/api/test-cases?projectId="+project, a, nil).get("data", "total").(float64)
		if !ok {
			return -1
		}
		return int(f)
	}
	invitations := func() int { return list("/api/invitations", "invitations") }
	name := func() int { return len(h.do("GET", "/api/organization", a, nil).str("organization", "name")) }
	for what, c := range map[string]struct {
		count func() int
		want  int
	}{"runs": {runs, 0}, "projects": {projects, 1}, "keys": {keys, 0}, "cases": {cases, 0}, "invitations": {invitations, 0}, "name": {name, 9}} {
		h.clock.Advance(time.Minute) // the buckets allow two requests
		if got := c.count(); got != c.want || project == "" {
			t.Fatalf("project %q; %s: %d, want %d", project, what, got, c.want)
		}
	}

	// Another organization's invitation, for the signed-in accept.
	other := h.signup("bea@example.com", "Other Co")
	_, inviteToken := h.invite(other, admin.email, "viewer")

	actions := []limitedAction{
		{page: "POST /login", form: url.Values{"email": {admin.email}, "password": {password}}, twin: "POST /api/auth/login", bucket: "login"},
		{page: "POST /signup", form: url.Values{"email": {"new@example.com"}, "password": {password}, "name": {"N"}, "organizationName": {"N"}},
			twin: "POST /api/auth/signup", bucket: "signup"},
		{page: "POST /runs", form: url.Values{"image": {"alpine:3"}}, twin: "POST /api/executions", bucket: "executions", count: runs},
		{page: "POST /runs/r-none/cancel", twin: "POST /api/executions/r-none/cancel", bucket: "executions"},
		{page: "POST /runs/r-none/rerun", twin: "POST /api/executions", bucket: "executions", count: runs},
		{page: "POST /runs/r-none/delete", twin: "DELETE /api/executions/r-none", bucket: "executions"},
		{page: "POST /runs/r-none/pin", twin: "PUT /api/executions/r-none/pin", bucket: "executions"},
		{page: "POST /runs/r-none/unpin", twin: "DELETE /api/executions/r-none/pin", bucket: "executions"},
		{page: "POST /runs/r-none/analysis", twin: "POST /api/executions/r-none/analysis", bucket: "executions"},
		{page: "POST /runs/r-none/triage", form: url.Values{"category": {"flaky"}}, twin: "PATCH /api/executions/r-none/analysis", bucket: "executions"},
		{page: "POST /runs/r-none/tickets/linear", twin: "POST /api/linear/issues", bucket: "api"},
		{page: "GET /runs/folders?image=alpine:3", twin: "GET /api/tests-structure", bucket: "api"},
		{page: "POST /projects", form: url.Values{"name": {"Shop"}, "image": {"alpine:3"}}, twin: "POST /api/projects", bucket: "api", count: projects},
		{page: "POST /projects/p-none", form: url.Values{"name": {"Shop"}}, twin: "PATCH /api/projects/p-none", bucket: "api"},
		{page: "POST /projects/p-none/gate", form: url.Values{"minTests": {"1"}}, twin: "PUT /api/projects/p-none/gate", bucket: "api"},
		{page: "POST /projects/p-none/schedules", form: url.Values{"name": {"N"}, "cron": {"* * * * *"}, "timezone": {"UTC"}}, twin: "POST /api/projects/p-none/schedules", bucket: "api"},
		{page: "POST /projects/p-none/schedules/s-none/pause", twin: "PATCH /api/projects/p-none/schedules/s-none", bucket: "api"},
		{page: "POST /projects/p-none/schedules/s-none/resume", twin: "PATCH /api/projects/p-none/schedules/s-none", bucket: "api"},
		{page: "POST /projects/p-none/schedules/s-none/delete", twin: "DELETE /api/projects/p-none/schedules/s-none", bucket: "api"},
		{page: "POST /projects/p-none/notifications", form: url.Values{"kind": {"webhook"}, "url": {"https://hooks.example.com/x"}, "on": {"always"}},
			twin: "POST /api/projects/p-none/notifications", bucket: "strict"},
		{page: "POST /projects/p-none/notifications/n-none/delete", twin: "DELETE /api/projects/p-none/notifications/n-none", bucket: "strict"},
		{page: "POST /projects/p-none/notifications/n-none/deliveries/d-none/redeliver",
			twin: "POST /api/projects/p-none/notifications/n-none/deliveries/d-none/redeliver", bucket: "strict"},
		{page: "POST /projects/p-none/hooks", form: url.Values{"provider": {"github"}, "push": {"on"}}, twin: "POST /api/projects/p-none/hooks", bucket: "api"},
		{page: "POST /projects/p-none/hooks/h-none/delete", twin: "DELETE /api/projects/p-none/hooks/h-none", bucket: "api"},
		{page: "POST /tests/t-none/quarantine", form: url.Values{"reason": {"r"}, "until": {"2026-03-20"}}, twin: "PUT /api/tests/t-none/quarantine", bucket: "api"},
		{page: "POST /tests/t-none/unquarantine", twin: "DELETE /api/tests/t-none/quarantine", bucket: "api"},
		{page: "POST /members/invite", form: url.Values{"email": {"x@example.com"}, "role": {"viewer"}}, twin: "POST /api/invitations", bucket: "invite", count: invitations},
		{page: "POST /members/u-none/role", form: url.Values{"role": {"viewer"}}, twin: "PATCH /api/users/u-none/role", bucket: "strict"},
		{page: "POST /members/u-none/status", form: url.Values{"status": {"suspended"}}, twin: "PATCH /api/users/u-none/status", bucket: "strict"},
		{page: "POST /members/u-none/delete", twin: "DELETE /api/users/u-none", bucket: "strict"},
		{page: "POST /members/invitations/i-none/revoke", twin: "DELETE /api/invitations/i-none", bucket: "invitations"},
		{page: "POST /settings/api-keys", form: url.Values{"name": {"ci"}}, twin: "POST /api/auth/api-keys", bucket: "strict", count: keys},
		{page: "POST /settings/api-keys/k-none/revoke", twin: "DELETE /api/auth/api-keys/k-none", bucket: "strict"},
		{page: "POST /settings/organization", form: url.Values{"name": {"A much longer name"}}, twin: "PATCH /api/organization", bucket: "strict", count: name},
		{page: "POST /settings/retention", form: url.Values{"logsDays": {"7"}}, twin: "PATCH /api/organization/retention", bucket: "strict"},
		{page: "POST /settings/ai/model", form: url.Values{"defaultModel": {"gpt-4o"}}, twin: "PATCH /api/organization/ai-config", bucket: "strict"},
		{page: "POST /settings/sso", form: url.Values{"issuer": {"ftp://x"}}, twin: "PUT /api/organization/sso", bucket: "strict"},
		{page: "POST /settings/erase", form: url.Values{"confirm": {"not-the-slug"}}, twin: "DELETE /api/organization", bucket: "strict"},
		{page: "POST /settings/erase/cancel", twin: "POST /api/organization/erase/cancel", bucket: "strict"},
		{page: "POST /settings/ai/key", form: url.Values{"provider": {"openai"}, "apiKey": {"sk-x"}}, twin: "PATCH /api/organization/ai-config", bucket: "strict"},
		{page: "POST /settings/ai/remove-key", form: url.Values{"provider": {"openai"}}, twin: "PATCH /api/organization/ai-config", bucket: "strict"},
		{page: "POST /settings/billing/checkout", form: url.Values{"plan": {"team"}}, twin: "POST /api/billing/checkout", bucket: "strict"},
		{page: "POST /settings/billing/portal", twin: "POST /api/billing/portal", bucket: "strict"},
		{page: "POST /settings/integrations/linear", form: url.Values{"apiKey": {"lin_x"}, "teamId": {"t"}}, twin: "PUT /api/integrations/linear", bucket: "strict"},
		{page: "POST /settings/integrations/monday", form: url.Values{"apiKey": {"m_x"}, "boardId": {"1"}}, twin: "PUT /api/integrations/monday", bucket: "strict"},
		{page: "POST /settings/integrations/github", form: url.Values{"token": {"ghp_x"}}, twin: "PUT /api/integrations/github", bucket: "strict"},
		{page: "POST /settings/integrations/gitlab", form: url.Values{"token": {"glpat-x"}}, twin: "PUT /api/integrations/gitlab", bucket: "strict"},
		{page: "POST /settings/integrations/linear/remove", twin: "DELETE /api/integrations/linear", bucket: "strict"},
		{page: "POST /test-cases", form: url.Values{"project": {project}, "title": {"T"}}, twin: "POST /api/test-cases", bucket: "api", count: cases},
		{page: "POST /test-cases/import", form: url.Values{"project": {project}}, file: true, twin: "POST /api/test-cases/import", bucket: "api", count: cases},
		{page: "POST /test-cases/c-none", form: url.Values{"title": {"T"}}, twin: "PATCH /api/test-cases/c-none", bucket: "api"},
		{page: "POST /test-cases/c-none/delete", twin: "DELETE /api/test-cases/c-none", bucket: "api"},
		{page: "POST /planner", form: url.Values{"project": {project}, "all": {"on"}}, twin: "POST /api/ai/automation-planner/generate", bucket: "strict"},
		{page: "POST /planner/pl-none/delete", twin: "DELETE /api/ai/automation-planner/history/pl-none", bucket: "api"},
		// Last: accepted, it would move the session to the other organization.
		{page: "POST /accept-invitation", form: url.Values{"token": {inviteToken}}, twin: "POST /api/invitations/accept", bucket: "invitations"},
	}

	// Every POST route the dashboard registers is here, or named as not limited.
	routes := dashboardPostRoutes(t)
	for _, r := range routes {
		covered := slices.Contains(unlimitedActions, r) || slices.ContainsFunc(actions, func(a limitedAction) bool {
			return routeMatches(r, a.page)
		})
		if !covered {
			t.Errorf("the dashboard route %q is not in the table: which API route does the same, and which bucket does it take from?", r)
		}
	}
	// And every POST of the table is a route found there (one route may serve several rows: a
	// tracker's form is /settings/integrations/{provider} for every tracker).
	for _, a := range actions {
		if !strings.HasPrefix(a.page, "POST ") {
			continue
		}
		if !slices.ContainsFunc(routes, func(r string) bool { return routeMatches(r, a.page) }) {
			t.Fatalf("the table's %q is none of the POST routes found in internal/web: %v", a.page, routes)
		}
	}

	b.get("/members") // the session's CSRF token
	for _, act := range actions {
		h.clock.Advance(time.Minute) // every bucket full again
		before := 0
		if act.count != nil {
			before = act.count()
		}
		// Empty the twin's bucket through the API (the limit is taken before the route reads
		// its body, so an empty one does).
		method, path, _ := strings.Cut(act.twin, " ")
		auth := a
		if act.bucket == "login" || act.bucket == "signup" {
			auth = anon
		}
		for i := 0; h.do(method, path, auth, map[string]any{}).status != 429; i++ {
			if i == 5 {
				t.Fatalf("%s: the twin %s is not limited after 5 requests (its bucket %q allows 2)", act.page, act.twin, act.bucket)
			}
		}
		var p page
		pm, pp, _ := strings.Cut(act.page, " ")
		switch {
		case pm == "GET":
			p = b.get(pp)
		case act.file:
			p = b.postMultipart(pp, map[string]string{"project": act.form.Get("project")}, "Title\nNew case\n")
		default:
			p = b.post(pp, act.form)
		}
		if p.status != http.StatusTooManyRequests || p.header.Get("Retry-After") == "" {
			t.Errorf("%s: %d (Retry-After %q) with the bucket %q of %s empty, want 429: %.500s", act.page, p.status, p.header.Get("Retry-After"), act.bucket, act.twin, p.body)
			continue
		}
		if pm == "GET" {
			// The folder suggestions answer their parts, the refusal as the note.
			if !strings.Contains(p.body, "Rate limit exceeded: Too many requests; try again in") {
				t.Errorf("%s: %s", act.page, p.body)
			}
		} else if act.bucket == "login" || act.bucket == "signup" || act.page == "POST /accept-invitation" {
			// The form again, the refusal above it.
			wantStatus(t, act.page, p, 429, "Rate limit exceeded")
		} else {
			wantLimited(t, act.page, p)
		}
		if act.count != nil {
			h.clock.Advance(time.Minute) // for the count's own requests
			if after := act.count(); after != before {
				t.Errorf("%s: refused, yet it changed what it acts on (%d before, %d after)", act.page, before, after)
			}
		}
	}

	// htmx swaps in no error answer: the 429 sends the browser back to its page, the refusal in
	// the flash message.
	h.clock.Advance(time.Minute)
	b.get("/settings/billing")
	for range 3 {
		h.do("POST", "/api/billing/portal", a, map[string]any{})
	}
	req, _ := http.NewRequest("POST", h.srv.URL+"/settings/billing/portal", strings.NewReader(""))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("HX-Request", "true")
	req.Header.Set("HX-Current-URL", h.srv.URL+"/settings/billing")
	req.Header.Set("X-CSRF-Token", b.csrf)
	p := b.send(req)
	if p.status != 429 || p.header.Get("HX-Redirect") != "/settings/billing" || p.header.Get("Retry-After") == "" {
		t.Fatalf("htmx portal: %d %v", p.status, p.header)
	}
	wantStatus(t, "the billing page after an htmx 429", b.get("/settings/billing"), 200, "Rate limit exceeded: Too many requests; try again in")
}

// routeMatches reports whether the request "METHOD /path" is one the pattern route serves.
func routeMatches(route, request string) bool {
	return regexp.MustCompile(`^` + regexp.MustCompile(`\\\{[^}]+\\\}`).ReplaceAllString(regexp.QuoteMeta(route), `[^/]+`) + `$`).MatchString(request)
}

// dashboardPostRoutes lists the POST patterns that internal/web registers, from its source.
func dashboardPostRoutes(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../web/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("internal/web's sources: %v", err)
	}
	var routes []string
	re := regexp.MustCompile(`HandleFunc\("(POST /[^"]*)"`)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllSubmatch(src, -1) {
			routes = append(routes, string(m[1]))
		}
	}
	return routes
}
