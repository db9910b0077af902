//go:build integration

package app_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"verdict/internal/traceviewer"
)

// attachmentsSuite is a python script (for pythonCommand) that leaves what a Playwright suite with the json
// reporter, one retry, and traces and screenshots on failure leaves: results/pw.json naming
// its attempts' files under /app/test-results (with absolute paths, as Playwright writes them),
// and those files. The report also names files that must never be kept: outside /app, escaping
// it, relative and leaving the reports, and one the suite did not write.
func attachmentsSuite(t *testing.T) string {
	t.Helper()
	att := func(name, ctype, path string) map[string]any {
		return map[string]any{"name": name, "contentType": ctype, "path": path}
	}
	results := func(status string, atts ...map[string]any) map[string]any {
		return map[string]any{"status": status, "duration": 12, "error": map[string]any{"message": "Expected: 42"}, "attachments": atts}
	}
	rep := map[string]any{"config": map[string]any{}, "suites": []any{map[string]any{"title": "checkout.spec.ts", "specs": []any{
		map[string]any{"title": "pays", "tests": []any{map[string]any{"projectName": "chromium", "expectedStatus": "passed",
			"status": "unexpected", "results": []any{
				results("failed",
					att("screenshot", "image/png", "/app/test-results/pays/test-failed-1.png"),
					att("trace", "application/zip", "/app/test-results/pays/trace.zip"),
					att("passwd", "text/plain", "/etc/passwd"),
					att("escape", "text/plain", "/app/../etc/passwd"),
					att("up", "text/plain", "../../../../etc/passwd"),
					att("gone", "image/png", "/app/test-results/pays/missing.png")),
				results("failed", att("trace", "application/zip", "/app/test-results/pays-retry1/trace.zip")),
			}}}},
		map[string]any{"title": "lists", "tests": []any{map[string]any{"projectName": "chromium", "expectedStatus": "passed",
			"status": "expected", "results": []any{map[string]any{"status": "passed", "duration": 3}}}}},
	}}}}
	js, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	return `import base64, os
for d in ["/app/results", "/app/test-results/pays", "/app/test-results/pays-retry1"]: os.makedirs(d)
trace = base64.b64decode("` + base64.StdEncoding.EncodeToString([]byte(traceZip)) + `")
open("/app/test-results/pays/trace.zip", "wb").write(trace)
open("/app/test-results/pays-retry1/trace.zip", "wb").write(trace)
open("/app/test-results/pays/test-failed-1.png", "wb").write(b"\x89PNG screenshot")
open("/app/results/pw.json", "w").write(` + fmt.Sprintf("%q", string(js)) + `)
raise SystemExit(1)
`
}

// TestRunAttachments: the screenshots and traces a real run's Playwright results name are kept
// with their test, by their place in the run's reports, and no file outside them is: the API
// lists them as report URLs that open with the run's access rules, and the run's page links
// each (a trace to the trace viewer, through a report link made at the click).
func TestRunAttachments(t *testing.T) {
	for _, d := range []string{"sqlite", "postgres"} {
		t.Run(d, func(t *testing.T) {
			h := runHarness(t, d)
			admin, other := h.signup("attach@example.com", "Attach Co"), h.signup("attach-other@example.com", "Other Attach Co")
			a := bearer(admin.token)
			task := h.queue(a, map[string]any{"image": pytestImage, "command": pythonCommand, "envVars": map[string]any{"SCRIPT": attachmentsSuite(t)}})
			r := h.waitFor(a, task, 90*time.Second, final)
			if r.str("execution", "status") != "FAILED" || strings.Contains(r.raw, "passwd") || strings.Contains(r.raw, "missing.png") {
				t.Fatalf("run: %s", r.raw)
			}
			tests, _ := r.get("execution", "tests").([]any)
			if len(tests) != 2 {
				t.Fatalf("tests: %s", r.raw)
			}
			pays, lists := tests[0].(map[string]any), tests[1].(map[string]any)
			if pays["name"] != "pays" || lists["attachments"] != nil {
				t.Fatalf("tests: %v", tests)
			}
			base := publicURL + "/reports/" + admin.orgID + "/" + task + "/"
			want := []any{
				map[string]any{"name": "screenshot", "contentType": "image/png", "url": base + "test-results/pays/test-failed-1.png"},
				map[string]any{"name": "trace", "contentType": "application/zip", "url": base + "test-results/pays/trace.zip"},
				map[string]any{"name": "trace", "contentType": "application/zip", "url": base + "test-results/pays-retry1/trace.zip", "retry": 1.0},
			}
			if got := pays["attachments"]; fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("attachments:\n got %v\nwant %v", got, want)
			}
			// Each opens with the run's access rules: its organization's bearer token, not
			// another's.
			for i, w := range want {
				u := strings.TrimPrefix(w.(map[string]any)["url"].(string), publicURL)
				res, body := fetch(t, http.DefaultClient, h.srv.URL, u, "Authorization", "Bearer "+admin.token)
				if res.StatusCode != 200 || (i > 0 && body != traceZip) || (i == 0 && body != "\x89PNG screenshot") {
					t.Fatalf("%s: %d", u, res.StatusCode)
				}
				if res, _ := fetch(t, http.DefaultClient, h.srv.URL, u, "Authorization", "Bearer "+other.token); res.StatusCode != 404 {
					t.Fatalf("%s as another organization: %d", u, res.StatusCode)
				}
			}

			// The run's page links them; a link opens a report link made now, a trace in the
			// viewer; another organization's member finds nothing.
			b := h.browser(t)
			b.get("/login")
			wantRedirect(t, "sign in", b.post("/login", url.Values{"email": {admin.email}, "password": {password}}), "/runs")
			page := b.get("/runs/" + task)
			links := regexp.MustCompile(`<a href="(/runs/`+task+`/attachments/0/\d)"[^>]*>([^<]+)</a>`).FindAllStringSubmatch(page.body, -1)
			if len(links) != 3 || links[0][2] != "screenshot" || links[1][2] != "Trace" || links[2][2] != "Trace (retry 1)" {
				t.Fatalf("the run page's attachments: %q", links)
			}
			trace := b.get(links[1][1])
			loc, err := url.Parse(trace.header.Get("Location"))
			if trace.status != http.StatusSeeOther || err != nil || loc.Host != "verdict.test" || loc.Path != traceviewer.Prefix+"index.html" ||
				trace.header.Get("Cache-Control") != "private, no-store" {
				t.Fatalf("the trace link: %d %v", trace.status, trace.header)
			}
			traceURL := loc.Query().Get("trace")
			if !strings.HasPrefix(traceURL, base+"~") || !strings.HasSuffix(traceURL, "/test-results/pays/trace.zip") {
				t.Fatalf("the viewer opens %q", traceURL)
			}
			if res, body := fetch(t, noFollow, h.srv.URL, strings.TrimPrefix(traceURL, publicURL)); res.StatusCode != 200 || body != traceZip {
				t.Fatalf("the trace through its link: %d", res.StatusCode)
			}
			shot := b.get(links[0][1])
			if loc := shot.header.Get("Location"); shot.status != http.StatusSeeOther || !strings.HasPrefix(loc, base+"~") ||
				!strings.HasSuffix(loc, "/test-results/pays/test-failed-1.png") {
				t.Fatalf("the screenshot link: %d %v", shot.status, shot.header)
			}
			for _, p := range []string{"/runs/" + task + "/attachments/0/3", "/runs/" + task + "/attachments/1/0",
				"/runs/" + task + "/attachments/2/0", "/runs/" + task + "/attachments/-1/0", "/runs/" + task + "/attachments/x/0",
				"/runs/nope/attachments/0/0"} {
				wantStatus(t, p, b.get(p), 404, "not found")
			}
			ob := h.browser(t)
			ob.get("/login")
			wantRedirect(t, "sign in", ob.post("/login", url.Values{"email": {other.email}, "password": {password}}), "/runs")
			wantStatus(t, "another organization's attachment", ob.get(links[1][1]), 404, "Run not found")
		})
	}
}
