//go:build integration

package app_test

import (
	"archive/tar"
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"verdict/internal/domain"
	"verdict/internal/report"
	"verdict/internal/store"
	"verdict/internal/traceviewer"
)

// traceZip is a real Playwright trace (testdata/trace/make-trace.js, playwright-core 1.65.1
// driving Debian's Chromium): a page "Checkout" with a script and an onerror handler, and a
// click on its "Pay now" button.
//
//go:embed testdata/trace/trace.zip
var traceZip string

// traceSHA names the trace as a Playwright HTML report keeps it, data/<sha1>.zip.
const traceSHA = "5d1e8c0a9b7f6e5d4c3b2a1900112233445566ff"

// finishWithReports queues the run taskID as a, then claims and finishes it through the store
// as a runner would (no Docker), FAILED with tests, its reports files (path under /app → body),
// stored by their first folder.
func (h *harness) finishWithReports(a auth, dataDir, orgID, taskID string, files map[string]string, tests []domain.TestResult) {
	h.t.Helper()
	ctx := context.Background()
	h.queue(a, map[string]any{"image": failImage, "taskId": taskID})
	now := h.clock.Now()
	e, err := h.app.Store.Executions().Claim(ctx, "test-runner", "", "", now, now.Add(time.Hour), func(domain.Plan) int { return 10 })
	if err != nil || e == nil || e.TaskID != taskID {
		h.t.Fatalf("claim %s: %v, %v", taskID, e, err)
	}
	reports, err := report.NewFSStore(dataDir)
	if err != nil {
		h.t.Fatal(err)
	}
	byFolder := map[string][]string{}
	for name := range files {
		folder, _, _ := strings.Cut(name, "/")
		byFolder[folder] = append(byFolder[folder], name)
	}
	var dirs []string
	var total int64
	for folder, names := range byFolder {
		sort.Strings(names)
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		for _, name := range names {
			if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(files[name])), Typeflag: tar.TypeReg}); err != nil {
				h.t.Fatal(err)
			}
			io.WriteString(tw, files[name])
		}
		tw.Close()
		n, err := reports.Put(ctx, orgID, taskID, &buf, folder, 1<<24)
		if err != nil {
			h.t.Fatal(err)
		}
		dirs, total = append(dirs, folder), total+n
	}
	sort.Strings(dirs)
	exit := 1
	if err := h.app.Store.Executions().Finish(ctx, e.ID, "test-runner", store.Finish{Status: domain.ExecFailed, ExitCode: &exit,
		FinishedAt: now, ReportDirs: dirs, ReportBytes: total, Tests: tests, Summary: domain.Summarize(tests)}); err != nil {
		h.t.Fatal(err)
	}
}

// playwrightReportFiles is a Playwright HTML report as far as its trace goes: a page whose
// "View trace" link is made as Playwright 1.65's report makes it (report.js:
// `trace/index.html?trace=${new URL(attachment.path, window.location.href)}`, attachment.path
// being data/<sha1>.zip), the trace under data/, and the copy of the viewer the report ships
// in trace/ (a stand-in here: it must never be what opens).
func playwrightReportFiles() map[string]string {
	return map[string]string{
		"playwright-report/index.html": `<!doctype html><html lang="en"><title>Playwright Test Report</title><main>` +
			`<a id="view" href="#">View Trace</a></main><script>document.getElementById('view').href = ` +
			"`trace/index.html?trace=${new URL('data/" + traceSHA + ".zip', window.location.href)}`" + `</script>`,
		"playwright-report/data/" + traceSHA + ".zip": traceZip,
		"playwright-report/trace/index.html":          "<!doctype html><title>the report's own viewer</title>",
		"test-results/checkout-pays/trace.zip":        traceZip,
	}
}

// TestBrowserTraceViewer: a Playwright report served by Verdict opens its "View trace" in
// Verdict's trace viewer, which shows the trace's actions and its page snapshot, with none of
// the snapshot's scripts run; the report itself stays sandboxed; another organization's
// report link does not open the trace.
func TestBrowserTraceViewer(t *testing.T) {
	dataDir := t.TempDir()
	h := newHarness(t, harnessOpts{dialect: "sqlite", env: map[string]string{"VERDICT_DATA_DIR": dataDir, "VERDICT_RUNNER": "none"}})
	// Service workers need a secure context: https, or localhost; the test's host is neither.
	c := newChrome(t, h, chromedp.Flag("unsafely-treat-insecure-origin-as-secure", publicURL))
	admin := h.signup("trace@example.com", "Trace Co")
	a := bearer(admin.token)
	h.finishWithReports(a, dataDir, admin.orgID, "traced", playwrightReportFiles(), []domain.TestResult{
		{Name: "pays", Suite: "[chromium] checkout.spec.ts", Status: domain.TestFailed, Error: "Expected: 42",
			Attachments: []domain.Attachment{{Name: "trace", ContentType: "application/zip", Path: "test-results/checkout-pays/trace.zip"}}},
		{Name: "lists", Suite: "[chromium] checkout.spec.ts", Status: domain.TestPassed}})
	tok := h.do("GET", "/api/executions/traced/report-token", a, nil)
	expect(t, tok, 200, "")

	// The report opens through its link, sandboxed (an opaque origin), and its button leads to
	// Verdict's viewer with the trace under the same link.
	chromedp.Call(c.ctx, cdppage.AddScriptToEvaluateOnNewDocument, cdppage.AddScriptToEvaluateOnNewDocumentParams{Source: `window.__cspDetail=[];document.addEventListener('securitypolicyviolation', e => window.__cspDetail.push(JSON.stringify({d:e.violatedDirective,b:e.blockedURI,s:e.sourceFile,l:e.lineNumber,c:e.columnNumber,doc:e.documentURI,sample:e.sample})));`})
	c.run(chromedp.Navigate(tok.str("url")), chromedp.WaitReady(chromedp.ID("view")))
	link := eval[string](c, `location.href`)
	if !strings.Contains(link, "/~") || eval[string](c, `window.origin`) != "null" {
		t.Fatalf("the report at %s runs in origin %q", link, eval[string](c, `window.origin`))
	}
	c.run(chromedp.Click(chromedp.ID("view")))
	c.waitPath("/trace/index.html")
	traceURL := eval[string](c, `new URLSearchParams(location.search).get('trace')`)
	if want := strings.TrimSuffix(link, "index.html") + "data/" + traceSHA + ".zip"; traceURL != want {
		t.Fatalf("the viewer opened %q, want %q", traceURL, want)
	}
	// The actions list names the click, and the snapshot is the page, without its scripts.
	c.waitText("body", "Pay now", 60*time.Second)
	if got := eval[string](c, `document.title`); got == "the report's own viewer" {
		t.Fatal("the report's own copy of the viewer opened")
	}
	snapshot := `(() => { for (const f of document.querySelectorAll('iframe')) { try {
		const d = f.contentDocument; if (d && d.querySelector('h1') && d.querySelector('h1').textContent === 'Checkout')
			return {ran: f.contentWindow.ran === 1 || f.contentWindow.bad === 1, scripts: d.querySelectorAll('script:not([nonce])').length,
				handlers: d.querySelectorAll('[onclick],[onerror]').length, button: d.querySelector('button') ? d.querySelector('button').textContent : ''};
	} catch (e) {} } return null; })()`
	deadline := time.Now().Add(30 * time.Second)
	var snap map[string]any
	for snap == nil {
		if time.Now().After(deadline) {
			t.Fatalf("no snapshot of the page shows; the viewer says: %.500s", c.text("body"))
		}
		time.Sleep(200 * time.Millisecond)
		snap = eval[map[string]any](c, snapshot)
	}
	if snap["ran"] != false || snap["scripts"] != 0.0 || snap["handlers"] != 0.0 || snap["button"] != "Pay now" {
		t.Fatalf("the snapshot: %v", snap)
	}
	if csp := eval[[]string](c, `window.__csp || []`); len(csp) > 0 {
		t.Fatalf("the viewer broke its CSP: %v %v", csp, eval[[]string](c, `window.__cspDetail`))
	}
	if n := eval[int](c, `navigator.serviceWorker.getRegistrations().then(rs => rs.filter(r => new URL(r.scope).pathname === '/trace/').length)`); n != 1 {
		t.Fatalf("%d service workers with scope /trace/", n)
	}
	c.screenshots("trace-viewer")

	// The run's page links the failed test's trace, which opens in the viewer too.
	c.open("/login")
	c.run(chromedp.SendKeys(chromedp.ID("email"), admin.email), chromedp.SendKeys(chromedp.ID("password"), password),
		chromedp.Submit(chromedp.ID("password")))
	c.waitPath("/runs")
	c.open("/runs/traced")
	href := eval[string](c, `(a => a ? a.getAttribute('href') : '')(document.querySelector('tr.test-failed a.trace'))`)
	if href != "/runs/traced/attachments/0/0" || eval[int](c, `document.querySelectorAll('tr.test-passed a.trace').length`) != 0 {
		t.Fatalf("the failed test's trace link: %q", href)
	}
	c.check("run-attachments")
	c.open(href)
	c.waitPath("/trace/index.html")
	c.waitText("body", "Pay now", 60*time.Second)
	if got := eval[string](c, `new URLSearchParams(location.search).get('trace')`); !strings.HasSuffix(got, "/test-results/checkout-pays/trace.zip") ||
		!strings.Contains(got, "/reports/"+admin.orgID+"/traced/~") {
		t.Fatalf("the run page's trace opened %q", got)
	}

	// Another organization's member, with a link of their own run, cannot open this trace: the
	// viewer's request for it is refused (404) and the viewer says it could not load it.
	other := h.signup("other-trace@example.com", "Other Trace Co")
	h.finishWithReports(bearer(other.token), dataDir, other.orgID, "mine", playwrightReportFiles(), nil)
	otherTok := h.do("GET", "/api/executions/mine/report-token", bearer(other.token), nil)
	res, _ := fetch(t, noFollow, "", strings.Replace(otherTok.str("url"), publicURL, h.srv.URL, 1))
	otherLink := res.Header.Get("Location") // /reports/<other org>/mine/~<token>/playwright-report/
	otherToken := otherLink[strings.Index(otherLink, "/~")+2 : strings.LastIndex(otherLink, "/playwright-report")]
	stolen := publicURL + "/reports/" + admin.orgID + "/traced/~" + otherToken + "/playwright-report/data/" + traceSHA + ".zip"
	c.open("/trace/index.html?trace=" + url.QueryEscape(stolen))
	c.waitText("body", "Could not load trace", 30*time.Second)
	if strings.Contains(c.text("body"), "Pay now") {
		t.Fatal("the viewer shows another organization's trace")
	}
}

// waitText waits until the text of the element sel contains want.
func (c *chrome) waitText(sel, want string, limit time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(limit)
	for {
		got := eval[string](c, fmt.Sprintf(`(e => e ? e.innerText : '')(document.querySelector(%q))`, sel))
		if strings.Contains(got, want) {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("%s never showed %q: %.1000q", sel, want, got)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// The trace viewer is no way into another organization's traces: a trace is read through the
// report route, whose link must be the run's own; the viewer's path reaches no report; and a
// report's pages, its bundled copy of the viewer included, stay sandboxed.
func TestTraceViewerAccess(t *testing.T) {
	for _, d := range []string{"sqlite", "postgres"} {
		t.Run(d, func(t *testing.T) {
			dataDir := t.TempDir()
			h := newHarness(t, harnessOpts{dialect: d, env: map[string]string{"VERDICT_DATA_DIR": dataDir, "VERDICT_RUNNER": "none"}})
			owner, other := h.signup("owner@example.com", "Owner Co"), h.signup("intruder@example.com", "Intruder Co")
			h.finishWithReports(bearer(owner.token), dataDir, owner.orgID, "traced", playwrightReportFiles(), nil)
			h.finishWithReports(bearer(other.token), dataDir, other.orgID, "mine", playwrightReportFiles(), nil)
			mine, _ := h.reportAccess(bearer(owner.token), "traced")
			theirs, _ := h.reportAccess(bearer(other.token), "mine")
			base := strings.TrimSuffix(mine.link, "playwright-report/") // /reports/<org>/traced/~<token>/
			trace := "playwright-report/data/" + traceSHA + ".zip"
			get := func(u string) (*http.Response, string) { t.Helper(); return fetch(t, noFollow, h.srv.URL, u) }

			// The owner's link reads the trace.
			if r, body := get(base + trace); r.StatusCode != 200 || body != traceZip || r.Header.Get("Access-Control-Allow-Origin") != "*" {
				t.Fatalf("the owner's trace: %d %v", r.StatusCode, r.Header)
			}
			// The other organization's link token on the owner's run, the owner's token on
			// another run's path, and a report path under the viewer's: all 404.
			for _, u := range []string{
				"/reports/" + owner.orgID + "/traced/~" + theirs.linkToken + "/" + trace,
				"/reports/" + other.orgID + "/traced/~" + theirs.linkToken + "/" + trace,
				"/reports/" + owner.orgID + "/mine/~" + mine.linkToken + "/" + trace,
				"/trace/" + strings.TrimPrefix(base, "/") + trace,
			} {
				r, body := fetch(t, http.DefaultClient, h.srv.URL, u)
				if r.StatusCode != 404 || strings.Contains(body, "PK") {
					t.Fatalf("%s: %d", u, r.StatusCode)
				}
			}
			// The other organization's report link sends its "View trace" to the viewer, with
			// whatever trace URL it names; the viewer's read of the owner's trace is the 404
			// above.
			viewer := theirs.link + "trace/index.html?trace=" + url.QueryEscape(publicURL+"/reports/"+owner.orgID+"/traced/~"+theirs.linkToken+"/"+trace)
			if r, _ := get(viewer); r.StatusCode != http.StatusSeeOther || !strings.HasPrefix(r.Header.Get("Location"), "/trace/index.html?trace=") {
				t.Fatalf("view trace: %d %v", r.StatusCode, r.Header)
			}
			// Without a valid link the report's View trace is no redirect: 404.
			if r, _ := get("/reports/" + owner.orgID + "/traced/~" + theirs.linkToken + "/playwright-report/trace/index.html?trace=x"); r.StatusCode != 404 {
				t.Fatalf("view trace through another organization's link: %d", r.StatusCode)
			}

			// The report's pages stay sandboxed, its own copy of the viewer included (without
			// ?trace= it is a file of the report like any other); the viewer is not sandboxed.
			for _, u := range []string{base + "playwright-report/index.html", base + "playwright-report/trace/index.html", base + trace} {
				if r, _ := get(u); r.StatusCode != 200 || !strings.HasPrefix(r.Header.Get("Content-Security-Policy"), "sandbox ") {
					t.Fatalf("%s: %d, CSP %q", u, r.StatusCode, r.Header.Get("Content-Security-Policy"))
				}
			}
			r, body := get("/trace/index.html?trace=" + url.QueryEscape(base+trace))
			if csp := r.Header.Get("Content-Security-Policy"); r.StatusCode != 200 || csp != traceviewer.ContentSecurityPolicy ||
				strings.Contains(csp, "sandbox") || !strings.Contains(body, "Playwright Trace Viewer") || r.Header.Get("X-Frame-Options") != "" {
				t.Fatalf("the viewer: %d %v", r.StatusCode, r.Header)
			}
			if r, _ := get("/trace"); r.StatusCode/100 != 3 || r.Header.Get("Location") != "/trace/" {
				t.Fatalf("/trace: %d %v", r.StatusCode, r.Header)
			}
		})
	}
}

// With VERDICT_REPORTS_URL the viewer is served on the reports origin, beside the report
// links it opens; the API's origin sends it there.
func TestTraceViewerOnReportsOrigin(t *testing.T) {
	const apiOrigin, repOrigin = "http://verdict.test", "http://reports.verdict.test"
	h := newHarness(t, harnessOpts{dialect: "sqlite", env: map[string]string{"VERDICT_RUNNER": "none", "VERDICT_REPORTS_URL": repOrigin}})
	c := h.hostsClient(nil, false)
	if r, body := fetch(t, c, "", repOrigin+"/trace/index.html?trace=x"); r.StatusCode != 200 || !strings.Contains(body, "Playwright Trace Viewer") {
		t.Fatalf("the viewer on the reports origin: %d", r.StatusCode)
	}
	if r, _ := fetch(t, c, "", apiOrigin+"/trace/index.html?trace=x"); r.StatusCode != http.StatusTemporaryRedirect ||
		r.Header.Get("Location") != repOrigin+"/trace/index.html?trace=x" {
		t.Fatalf("the viewer on the API's origin: %d %v", r.StatusCode, r.Header)
	}
	if r, _ := fetch(t, c, "", repOrigin+"/"); r.StatusCode != 404 {
		t.Fatalf("the reports origin's root: %d", r.StatusCode)
	}
}
