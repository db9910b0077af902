package web

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"verdict/internal/auth"
	"verdict/internal/domain"
	"verdict/internal/identity"
	"verdict/internal/ports"
	"verdict/internal/store"
)

// The doubles below stand in for the services; the end-to-end tests (internal/app) use the
// real ones.

type tokens struct{}

func (tokens) Verify(tok string) (auth.Claims, error) {
	if tok != "good" {
		return auth.Claims{}, errors.New("bad token")
	}
	return auth.Claims{UserID: "u1", OrganizationID: "o1"}, nil
}

type ids struct{ ports.Identity }

func (ids) AuthenticateClaims(_ context.Context, userID, orgID string) (*identity.Principal, error) {
	return &identity.Principal{UserID: userID, OrgID: orgID, Role: domain.RoleViewer,
		User: &domain.User{ID: userID, Name: "Vi", Email: "vi@example.com"}}, nil
}

func (ids) Me(context.Context, *identity.Principal) (*domain.User, *domain.Organization, int, error) {
	return nil, &domain.Organization{ID: "o1", Name: "Org One"}, 1, nil
}

type execs struct {
	ports.Executions
	run *domain.Execution
	log string
}

func (e execs) Get(_ context.Context, p *identity.Principal, taskID string) (*domain.Execution, error) {
	if e.run == nil || taskID != e.run.TaskID || p.OrgID != e.run.OrganizationID {
		return nil, domain.NotFound("Execution not found", "No such run")
	}
	return e.run, nil
}

func (e execs) GetListed(ctx context.Context, p *identity.Principal, taskID string) (*domain.Execution, error) {
	return e.Get(ctx, p, taskID)
}

func (e execs) ReadLog(_ context.Context, _ *identity.Principal, _ *domain.Execution, from, limit int64, fn func([]byte) error) (int64, error) {
	b := []byte(e.log)[min(from, int64(len(e.log))):]
	b = b[:min(limit, int64(len(b)))]
	return int64(len(b)), fn(b)
}

func (execs) ListProjects(context.Context, *identity.Principal) ([]domain.Project, error) {
	return []domain.Project{{ID: "p1", Name: "Shop"}}, nil
}

func (execs) List(context.Context, *identity.Principal, store.ExecutionFilter) ([]domain.Execution, int, error) {
	return nil, 0, nil
}

func get(t *testing.T, s *Server, path string) (*http.Response, string) {
	t.Helper()
	req := httptest.NewRequest("GET", path, nil)
	req.AddCookie(&http.Cookie{Name: SessionCookie, Value: "good"})
	w := httptest.NewRecorder()
	s.ServeHTTP(w, req)
	body, _ := io.ReadAll(w.Result().Body)
	return w.Result(), string(body)
}

// A run's page lists its failures first with their messages, shows the analysis and the log,
// escaped.
func TestRunPage(t *testing.T) {
	start := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	end := start.Add(90 * time.Second)
	run := &domain.Execution{TaskID: "r-1", OrganizationID: "o1", ProjectID: "p1", Image: "shop/tests:1",
		Status: domain.ExecFailed, QueuedAt: start, StartedAt: &start, FinishedAt: &end,
		Tests: []domain.TestResult{{Name: "opens home", Status: domain.TestPassed},
			{Name: "pays", Status: domain.TestFailed, Error: "expected 200, got <500>"},
			{Name: "retries", Status: domain.TestFlaky}},
		Analysis: &domain.Analysis{Category: "product_bug", Summary: "Checkout answers 500", Confidence: 0.8, Provider: "builtin"}}
	s := New(Deps{Identity: ids{}, Executions: execs{run: run, log: "step 1\n<script>x</script>\n"}, JWT: tokens{},
		CSRFKey: []byte("k"), ReportLink: func(context.Context, *identity.Principal, *domain.Execution) string {
			return "/reports/o1/r-1/html/index.html?token=t"
		}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	res, body := get(t, s, "/runs/r-1")
	if res.StatusCode != 200 {
		t.Fatalf("status %d: %s", res.StatusCode, body)
	}
	pays, flaky, home := strings.Index(body, "pays"), strings.Index(body, "retries"), strings.Index(body, "opens home")
	if pays < 0 || pays > flaky || flaky > home {
		t.Fatalf("tests not failures first: %s", body)
	}
	for _, want := range []string{"expected 200, got &lt;500&gt;", "Checkout answers 500", "80%", "Shop", "1 min 30 s",
		"&lt;script&gt;x&lt;/script&gt;", `href="/reports/o1/r-1/html/index.html?token=t"`, "Org One"} {
		if !strings.Contains(body, want) {
			t.Fatalf("run page lacks %q: %s", want, body)
		}
	}
	if strings.Contains(body, "<script>x") {
		t.Fatal("the log is not escaped")
	}
	if res, body := get(t, s, "/runs/other"); res.StatusCode != 404 || !strings.Contains(body, "Run not found") {
		t.Fatalf("unknown run: %d %s", res.StatusCode, body)
	}
	if res, _ := get(t, s, "/runs"); res.Header.Get("Content-Security-Policy") != ContentSecurityPolicy {
		t.Fatalf("runs: CSP %q", res.Header.Get("Content-Security-Policy"))
	}
}

// The CSRF token is bound to the session: another session's token is refused.
func TestCSRFBoundToSession(t *testing.T) {
	s := New(Deps{Identity: ids{}, Executions: execs{}, JWT: tokens{}, CSRFKey: []byte("k")})
	if s.csrfToken("session", "a") == s.csrfToken("session", "b") || s.csrfToken("session", "a") == s.csrfToken("presession", "a") {
		t.Fatal("tokens are not bound to what they protect")
	}
	other := New(Deps{Identity: ids{}, Executions: execs{}, JWT: tokens{}, CSRFKey: []byte("other key")})
	req := httptest.NewRequest("POST", "/logout", strings.NewReader("csrf="+other.csrfToken("session", "good")))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(&http.Cookie{Name: SessionCookie, Value: "good"})
	w := httptest.NewRecorder()
	s.ServeHTTP(w, req)
	if w.Code != 403 {
		t.Fatalf("a token of another key: %d", w.Code)
	}
	req = httptest.NewRequest("POST", "/logout", strings.NewReader("csrf="+s.csrfToken("session", "good")))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(&http.Cookie{Name: SessionCookie, Value: "good"})
	w = httptest.NewRecorder()
	s.ServeHTTP(w, req)
	if w.Code != 303 || w.Header().Get("Location") != "/login" {
		t.Fatalf("logout: %d %v", w.Code, w.Header())
	}
}

// A sign-in link's next leads only to a path on this site.
func TestLocalPath(t *testing.T) {
	for next, want := range map[string]string{
		"/accept-invitation?token=abc": "/accept-invitation?token=abc",
		"/runs":                        "/runs",
		"":                             "",
		"runs":                         "",
		"//evil.example/x":             "",
		"/\\evil.example":              "",
		"https://evil.example/":        "",
		"/runs\r\nSet-Cookie: x=1":     "",
	} {
		if got := localPath(next); got != want {
			t.Errorf("localPath(%q) = %q, want %q", next, got, want)
		}
	}
}

func FuzzLocalPath(f *testing.F) {
	for _, s := range []string{"/runs", "//x", "/\\x", "https://x/", "/a?b=//c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, next string) {
		got := localPath(next)
		if got == "" {
			return
		}
		u, err := url.Parse(got)
		if err != nil || u.Host != "" || u.Scheme != "" || !strings.HasPrefix(got, "/") || strings.HasPrefix(got, "//") {
			t.Fatalf("localPath(%q) = %q leaves the site", next, got)
		}
	})
}

// The usage bars take the usage alerts' bands: info from 50 %, warning from 80 %, critical at
// the limit; an unlimited resource has no meter.
func TestUsageBars(t *testing.T) {
	u := &identity.Usage{RunsUsed: 85, ActiveUsers: 5, Projects: 12, StorageUsed: 600,
		Limits: domain.Limits{MaxTestRuns: 100, MaxUsers: 10, MaxProjects: 10, MaxStorageBytes: -1}}
	got := usageBars(u)
	want := []struct {
		band    domain.AlertType
		percent int
		max     int64
	}{{domain.AlertWarning, 85, 100}, {domain.AlertInfo, 50, 10}, {domain.AlertCritical, 120, 10}, {"", 0, 0}}
	for i, w := range want {
		if g := got[i]; g.Band != w.band || g.Percent != w.percent || g.Max != w.max || (g.Max > 0 && g.Value > g.Max) {
			t.Errorf("%s: %+v, want band %q at %d%% of %d", g.Name, g, w.band, w.percent, w.max)
		}
	}
	if got[3].Limit != "unlimited" {
		t.Errorf("unlimited storage shown as %q", got[3].Limit)
	}
}

// The run page says how much of the log it holds, and /runs/{taskId}/log answers the rest from
// there, for the run's organization only.
func TestRunLogFrom(t *testing.T) {
	run := &domain.Execution{TaskID: "r-1", OrganizationID: "o1", Status: domain.ExecRunning}
	s := New(Deps{Identity: ids{}, Executions: execs{run: run, log: "line 1\nline 2\n"}, JWT: tokens{}, CSRFKey: []byte("k"),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if _, body := get(t, s, "/runs/r-1"); !strings.Contains(body, `data-offset="14"`) {
		t.Fatalf("the run page does not say how much log it holds: %s", body)
	}
	res, body := get(t, s, "/runs/r-1/log?from=7")
	if res.StatusCode != 200 || body != "line 2\n" || res.Header.Get("X-Log-Next") != "14" || res.Header.Get("X-Log-Complete") != "false" ||
		!strings.HasPrefix(res.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("log from 7: %d %q %v", res.StatusCode, body, res.Header)
	}
	// A script's fetch does not take the flash meant for the page it leads to.
	req := httptest.NewRequest("GET", "/runs/r-1/log?from=0", nil)
	req.AddCookie(&http.Cookie{Name: SessionCookie, Value: "good"})
	req.AddCookie(&http.Cookie{Name: flashCookie, Value: "b2s6UmVhZHk"}) // "ok:Ready"
	w := httptest.NewRecorder()
	s.ServeHTTP(w, req)
	if w.Code != 200 || w.Header().Get("Set-Cookie") != "" {
		t.Fatalf("the log fetch: %d, Set-Cookie %q", w.Code, w.Header().Get("Set-Cookie"))
	}
	req = httptest.NewRequest("GET", "/runs/r-1", nil)
	req.AddCookie(&http.Cookie{Name: SessionCookie, Value: "good"})
	req.AddCookie(&http.Cookie{Name: flashCookie, Value: "b2s6UmVhZHk"})
	w = httptest.NewRecorder()
	s.ServeHTTP(w, req)
	if !strings.Contains(w.Body.String(), "Ready") || !strings.Contains(w.Header().Get("Set-Cookie"), flashCookie+"=;") {
		t.Fatalf("the page did not show and clear the flash: %q", w.Header().Get("Set-Cookie"))
	}
	for path, want := range map[string]int{"/runs/r-1/log?from=-1": 400, "/runs/r-1/log": 400, "/runs/other/log?from=0": 404} {
		if res, _ := get(t, s, path); res.StatusCode != want {
			t.Errorf("%s: %d, want %d", path, res.StatusCode, want)
		}
	}
}
