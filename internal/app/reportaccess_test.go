//go:build integration

package app_test

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"verdict/internal/domain"
	"verdict/internal/report"
	"verdict/internal/store"
)

// reportRun queues the run taskID as a, then claims and finishes it through the store as a
// runner would (no Docker), with a playwright-report folder of index.html and data/small.txt.
func (h *harness) reportRun(a auth, dataDir, orgID, taskID string) {
	h.t.Helper()
	ctx := context.Background()
	h.queue(a, map[string]any{"image": passImage, "taskId": taskID})
	now := h.clock.Now()
	e, err := h.app.Store.Executions().Claim(ctx, "test-runner", "", "", now, now.Add(time.Hour), func(domain.Plan) int { return 10 })
	if err != nil || e == nil || e.TaskID != taskID {
		h.t.Fatalf("claim %s: %v, %v", taskID, e, err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range []struct{ name, body string }{
		{"playwright-report/index.html", "<!doctype html><title>run " + e.ID + "</title>"},
		{"playwright-report/data/small.txt", "small file of run " + e.ID},
	} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.body)), Typeflag: tar.TypeReg}); err != nil {
			h.t.Fatal(err)
		}
		io.WriteString(tw, f.body)
	}
	tw.Close()
	reports, err := report.NewFSStore(dataDir)
	if err != nil {
		h.t.Fatal(err)
	}
	n, err := reports.Put(ctx, orgID, taskID, &buf, "playwright-report", 1<<20)
	if err != nil {
		h.t.Fatal(err)
	}
	exit := 0
	if err := h.app.Store.Executions().Finish(ctx, e.ID, "test-runner", store.Finish{Status: domain.ExecPassed, ExitCode: &exit,
		FinishedAt: now, ReportDirs: []string{"playwright-report"}, ReportBytes: n}); err != nil {
		h.t.Fatal(err)
	}
}

// noFollow is a client that shows redirects instead of following them.
var noFollow = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// fetch GETs u (a path on the test server, or an absolute URL) with c and optional header
// pairs, returning the response with its body read.
func fetch(t testing.TB, c *http.Client, base, u string, hdr ...string) (*http.Response, string) {
	t.Helper()
	if strings.HasPrefix(u, "/") {
		u = base + u
	}
	req, err := http.NewRequest("GET", u, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res, string(body)
}

// reportAccess is what a member got from GET /api/executions/{taskId}/report-token: the
// exchange URL, and the browsing link (the path of the run's main report under ~<token>) it
// was swapped for, with the link's token.
type reportAccess struct{ exchange, link, linkToken string }

// reportAccess asks for a report token as a and swaps it for a browsing link; keep, when set,
// is a second token asked for and left unexchanged.
func (h *harness) reportAccess(a auth, taskID string) (got, keep reportAccess) {
	h.t.Helper()
	ask := func() string {
		r := h.do("GET", "/api/executions/"+taskID+"/report-token", a, nil)
		expect(h.t, r, 200, "")
		u, ok := strings.CutPrefix(r.str("url"), publicURL) // absolute; the path goes to the test server
		if !ok {
			h.t.Fatalf("report-token url %q is not on %s", r.str("url"), publicURL)
		}
		return u
	}
	got.exchange, keep.exchange = ask(), ask()
	res, _ := fetch(h.t, noFollow, h.srv.URL, got.exchange)
	if res.StatusCode != http.StatusSeeOther {
		h.t.Fatalf("exchange %s: %d", got.exchange, res.StatusCode)
	}
	got.link = res.Header.Get("Location")
	seg := got.link[strings.Index(got.link, "/~")+2:]
	got.linkToken, _, _ = strings.Cut(seg, "/")
	return got, keep
}

// Report links and the exchange token are bound to the member who asked for them and to the
// run itself (not its reusable taskId), and the member is checked on every use.
func TestReportLinkBoundToUserAndRun(t *testing.T) {
	for _, d := range []string{"sqlite", "postgres"} {
		t.Run(d, func(t *testing.T) {
			dataDir := t.TempDir()
			h := newHarness(t, harnessOpts{dialect: d, env: map[string]string{"VERDICT_DATA_DIR": dataDir, "VERDICT_RUNNER": "none"}})
			admin := h.signup("admin@example.com", "Links Co")
			if err := h.app.Store.Organizations().UpdatePlan(context.Background(), admin.orgID, domain.PlanTeam, domain.Billing{}); err != nil {
				t.Fatal(err) // room for the members
			}
			stays := h.join(admin, "stays@example.com", "viewer")
			suspended := h.join(admin, "suspended@example.com", "developer")
			deleted := h.join(admin, "deleted@example.com", "viewer")
			const task = "nightly"
			h.reportRun(bearer(admin.token), dataDir, admin.orgID, task)
			runBase := "/reports/" + admin.orgID + "/" + task + "/"

			status := func(path string, hdr ...string) int {
				t.Helper()
				res, _ := fetch(t, noFollow, h.srv.URL, path, hdr...)
				return res.StatusCode
			}
			opens := func(who string, a reportAccess) {
				t.Helper()
				for _, p := range []string{a.link, a.link + "data/small.txt"} {
					if s := status(p); s != 200 {
						t.Fatalf("%s: link %s: %d, want 200", who, p, s)
					}
				}
				if s := status(runBase+"playwright-report/data/small.txt", "Cookie", "verdict_report="+a.linkToken); s != 200 {
					t.Fatalf("%s: cookie: %d, want 200", who, s)
				}
			}
			refused := func(who string, a reportAccess, unexchanged reportAccess) {
				t.Helper()
				for _, p := range []string{a.link, a.link + "data/small.txt", a.exchange, unexchanged.exchange} {
					if s := status(p); s != 404 {
						t.Fatalf("%s: %s: %d, want 404", who, p, s)
					}
				}
				if s := status(runBase+"playwright-report/data/small.txt", "Cookie", "verdict_report="+a.linkToken); s != 404 {
					t.Fatalf("%s: cookie: %d, want 404", who, s)
				}
			}

			staysLink, staysKept := h.reportAccess(bearer(stays.token), task)
			suspLink, suspKept := h.reportAccess(bearer(suspended.token), task)
			delLink, delKept := h.reportAccess(bearer(deleted.token), task)
			opens("active member", staysLink)
			opens("member to be suspended", suspLink)
			opens("member to be deleted", delLink)
			if staysLink.linkToken == suspLink.linkToken {
				t.Fatal("two members got the same link token")
			}

			expect(t, h.do("PATCH", "/api/users/"+suspended.id+"/status", bearer(admin.token), map[string]any{"status": "suspended"}), 200, "")
			expect(t, h.do("DELETE", "/api/users/"+deleted.id, bearer(admin.token), nil), 200, "")
			refused("suspended member", suspLink, suspKept)
			refused("deleted member", delLink, delKept)
			opens("active member", staysLink)
			// The check is of the member as they are now: reactivated, their link opens again.
			expect(t, h.do("PATCH", "/api/users/"+suspended.id+"/status", bearer(admin.token), map[string]any{"status": "active"}), 200, "")
			opens("reactivated member", suspLink)

			// The run is deleted and a new one takes its taskId: old links do not open it.
			expect(t, h.do("DELETE", "/api/executions/"+task, bearer(admin.token), nil), 200, "")
			h.reportRun(bearer(admin.token), dataDir, admin.orgID, task)
			refused("link to the deleted run", staysLink, staysKept)
			newLink, _ := h.reportAccess(bearer(stays.token), task)
			opens("link to the new run", newLink)
		})
	}
}

// hostsClient sends every request to the test server whatever the URL's host, as DNS would
// for the API's and the reports' host names; cookies go to jar (nil: none kept).
func (h *harness) hostsClient(jar http.CookieJar, follow bool) *http.Client {
	addr := h.srv.Listener.Addr().String()
	c := &http.Client{Jar: jar, Transport: &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}}
	if !follow {
		c.CheckRedirect = noFollow.CheckRedirect
	}
	return c
}

// With VERDICT_REPORTS_URL, reports are served only on that origin, only through browsing
// links and without cookies; the API's origin serves no report, the reports origin nothing else.
func TestReportsOrigin(t *testing.T) {
	const apiOrigin, repOrigin = "http://verdict.test", "http://reports.verdict.test"
	dataDir := t.TempDir()
	h := newHarness(t, harnessOpts{dialect: "sqlite", env: map[string]string{"VERDICT_DATA_DIR": dataDir, "VERDICT_RUNNER": "none",
		"VERDICT_REPORTS_URL": repOrigin + "/"}})
	admin := h.signup("admin@example.com", "Origins Co")
	key := h.do("POST", "/api/auth/api-keys", bearer(admin.token), map[string]any{"name": "ci"}).str("apiKey")
	const task = "nightly"
	h.reportRun(bearer(admin.token), dataDir, admin.orgID, task)
	exec := h.do("GET", "/api/executions/"+task, bearer(admin.token), nil)
	// Report links are absolute, on the reports origin (opened through report-token).
	htmlPath := "/reports/" + admin.orgID + "/" + task + "/playwright-report/"
	if got := exec.str("execution", "htmlReportUrl"); got != repOrigin+htmlPath {
		t.Fatalf("htmlReportUrl %q, want %q", got, repOrigin+htmlPath)
	}

	// report-token's url is absolute, on the reports origin.
	tok := h.do("GET", "/api/executions/"+task+"/report-token", bearer(admin.token), nil)
	expect(t, tok, 200, "")
	if !strings.HasPrefix(tok.str("url"), repOrigin+htmlPath+"?token=") {
		t.Fatalf("report-token url %q, want it under %s", tok.str("url"), repOrigin)
	}

	// A browser opens it: the token is swapped for a link on the reports origin, and no cookie
	// is set anywhere.
	jar := newJar()
	browser := h.hostsClient(jar, true)
	res, body := fetch(t, browser, "", tok.str("url")+"&keep=1")
	if res.StatusCode != 200 || res.Request.URL.Host != "reports.verdict.test" || !strings.Contains(res.Request.URL.Path, "/~") ||
		res.Request.URL.RawQuery != "keep=1" || !strings.Contains(body, "<title>run ") {
		t.Fatalf("opening the report: %d %s", res.StatusCode, res.Request.URL)
	}
	for r := res; r != nil; r = r.Request.Response {
		if c := r.Header.Values("Set-Cookie"); len(c) > 0 {
			t.Fatalf("%s set cookies %q", r.Request.URL, c)
		}
	}
	link := repOrigin + res.Request.URL.Path
	for _, o := range []string{apiOrigin, repOrigin} {
		u, _ := url.Parse(o + "/reports/" + admin.orgID + "/" + task + "/")
		if c := jar.Cookies(u); len(c) > 0 {
			t.Fatalf("cookies for %s: %v", u, c)
		}
	}
	if r, body := fetch(t, browser, "", link+"data/small.txt", "Origin", "null"); r.StatusCode != 200 || !strings.HasPrefix(body, "small file") ||
		r.Header.Get("Access-Control-Allow-Origin") != "*" || !strings.HasPrefix(r.Header.Get("Content-Security-Policy"), "sandbox ") {
		t.Fatalf("a file under the link: %d %v", r.StatusCode, r.Header)
	}
	linkToken, _, _ := strings.Cut(link[strings.Index(link, "/~")+2:], "/")

	c := h.hostsClient(nil, false)
	get := func(u string, hdr ...string) (*http.Response, string) { t.Helper(); return fetch(t, c, "", u, hdr...) }

	// The reports origin takes no bearer token, API key or cookie.
	for _, hdr := range [][]string{
		{"Authorization", "Bearer " + admin.token}, {"X-Api-Key", key}, {"Cookie", "verdict_report=" + linkToken}, nil,
	} {
		if r, _ := get(repOrigin+htmlPath, hdr...); r.StatusCode != 404 {
			t.Fatalf("reports origin, plain path with %v: %d", hdr, r.StatusCode)
		}
	}
	// ... and serves nothing but reports.
	for _, p := range []string{"/", "/healthz", "/readyz", "/api/auth/me", "/api/openapi.yaml", "/socket.io/?EIO=4&transport=polling", "/reports", "/favicon.ico"} {
		r, body := get(repOrigin+p, "Authorization", "Bearer "+admin.token)
		if r.StatusCode != 404 || strings.Contains(body, "{") || r.Header.Get("Set-Cookie") != "" {
			t.Fatalf("reports origin %s: %d %q", p, r.StatusCode, body)
		}
	}
	// Paths that only look like reports are cleaned by a redirect on the same origin, then refused.
	follow := h.hostsClient(nil, true)
	for _, p := range []string{"/reports/../api/auth/me", "/reports/%2e%2e/api/auth/me", "/reports/../socket.io/?EIO=4&transport=polling", "/reports/./../healthz"} {
		r, body := fetch(t, follow, "", repOrigin+p, "Authorization", "Bearer "+admin.token)
		if r.StatusCode != 404 || r.Request.URL.Host != "reports.verdict.test" || strings.Contains(body, "{") {
			t.Fatalf("reports origin %s: %d %s %q", p, r.StatusCode, r.Request.URL, body)
		}
	}

	// The API's origin serves no report: requests under /reports/ go to the reports origin,
	// whatever their credentials; nothing of the report is in the answer.
	for _, c := range []struct {
		path string
		hdr  []string
	}{
		{htmlPath, []string{"Authorization", "Bearer " + admin.token}},
		{htmlPath, []string{"X-Api-Key", key}},
		{htmlPath, []string{"Cookie", "verdict_report=" + linkToken}},
		{strings.TrimPrefix(link, repOrigin) + "data/small.txt", nil},
		{strings.TrimPrefix(tok.str("url"), repOrigin), nil},
	} {
		r, body := get(apiOrigin+c.path, c.hdr...)
		if r.StatusCode != http.StatusTemporaryRedirect || r.Header.Get("Location") != repOrigin+c.path ||
			strings.Contains(body, "small file") || strings.Contains(body, "<title>") || r.Header.Get("Set-Cookie") != "" ||
			r.Header.Get("Cache-Control") != "private, no-store" {
			t.Fatalf("API origin %s: %d %v %q", c.path, r.StatusCode, r.Header, body)
		}
	}
	// A request naming neither host (a health check by address) is on the API's origin.
	for _, base := range []string{apiOrigin, h.srv.URL} {
		if r, _ := get(base + "/healthz"); r.StatusCode != 200 {
			t.Fatalf("%s/healthz: %d", base, r.StatusCode)
		}
		if r, _ := get(base+"/api/auth/me", "Authorization", "Bearer "+admin.token); r.StatusCode != 200 {
			t.Fatalf("%s/api/auth/me: %d", base, r.StatusCode)
		}
	}
	if r, _ := get(h.srv.URL + htmlPath); r.StatusCode != http.StatusTemporaryRedirect {
		t.Fatalf("a report by the server's address: %d", r.StatusCode)
	}
	// Host names compare without case, with or without the scheme's default port.
	req, _ := http.NewRequest("GET", h.srv.URL+strings.TrimPrefix(link, repOrigin)+"data/small.txt", nil)
	for _, host := range []string{"Reports.Verdict.TEST", "reports.verdict.test:80"} {
		req.Host = host
		r, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		if r.StatusCode != 200 {
			t.Fatalf("Host %q: %d", host, r.StatusCode)
		}
	}
}

// BenchmarkReportLink measures serving a small report file through a browsing link, in
// process: the link's checks (token, run, member) and the file.
func BenchmarkReportLink(b *testing.B) {
	for _, d := range []string{"sqlite", "postgres"} {
		b.Run(d, func(b *testing.B) {
			dataDir := b.TempDir()
			h := newHarness(b, harnessOpts{dialect: d, env: map[string]string{"VERDICT_DATA_DIR": dataDir, "VERDICT_RUNNER": "none"}})
			acc := h.signup("bench@example.com", "Bench Co")
			h.reportRun(bearer(acc.token), dataDir, acc.orgID, "bench")
			got, _ := h.reportAccess(bearer(acc.token), "bench")
			target := got.link + "data/small.txt"
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				w := httptest.NewRecorder()
				h.app.API.ServeHTTP(w, httptest.NewRequest("GET", target, nil))
				if w.Code != http.StatusOK {
					b.Fatalf("status %d: %s", w.Code, w.Body)
				}
			}
		})
	}
}
