//go:build integration

package app_test

import (
	"bytes"
	"compress/gzip"
	"context"
	_ "embed"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdpfetch "github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"verdict/internal/testenv"
	"verdict/internal/web"
)

// axeSource is axe-core, vendored for tests only by scripts/vendor-axe.sh; the product never
// serves it. It is evaluated into each page through DevTools, which the page's CSP does not
// govern (the CSP forbids the page itself any inline script).
//
//go:embed testdata/axe-core/axe.min.js
var axeSource string

// maxPageWeight bounds what one page costs to load: its HTML, CSS and JS, gzip-compressed.
const maxPageWeight = 150 << 10

// Window sizes of the screenshots: a laptop, and a phone (in CSS pixels).
var viewports = []struct{ w, h int64 }{{1280, 800}, {390, 844}}

// chrome drives one headless Chromium (testenv.Chromium) for a test.
type chrome struct {
	t    *testing.T
	h    *harness
	ctx  context.Context
	shot string // the screenshots folder
}

// newChrome starts the browser; extra are further flags of the browser's command line.
func newChrome(t *testing.T, h *harness, extra ...chromedp.ExecAllocatorOption) *chrome {
	t.Helper()
	srv, err := url.Parse(h.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(testenv.Chromium(t)),
		// The browser reaches Verdict at its public URL, as a user does: the links Verdict
		// hands out (report links, the e-mailed invitation) open as they are.
		chromedp.Flag("host-resolver-rules", "MAP "+strings.TrimPrefix(publicURL, "http://")+":80 "+srv.Host),
		chromedp.WindowSize(int(viewports[0].w), int(viewports[0].h)),
		chromedp.Flag("lang", "en-US"),
	)
	if testenv.ChromiumNeedsNoSandbox() {
		// Chromium's sandbox cannot start as root; the pages it loads are this test's own.
		opts = append(opts, chromedp.NoSandbox)
	}
	opts = append(opts, extra...)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx, chromedp.WithErrorf(t.Logf))
	ctx, cancelTime := context.WithTimeout(ctx, 5*time.Minute)
	t.Cleanup(func() { cancelTime(); cancelCtx(); cancelAlloc() })

	dir := os.Getenv("VERDICT_SCREENSHOTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "verdict-screenshots")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	c := &chrome{t: t, h: h, ctx: ctx, shot: dir}
	// Every page records the CSP violations it meets, so a page whose own scripts or styles
	// trip the strict policy fails the test.
	if _, err := chromedp.Call(ctx, cdppage.AddScriptToEvaluateOnNewDocument, cdppage.AddScriptToEvaluateOnNewDocumentParams{
		Source: `window.__csp = [];
document.addEventListener('securitypolicyviolation', e => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));`,
	}); err != nil {
		t.Fatal(err)
	}
	c.run(chromedp.EmulateViewport(viewports[0].w, viewports[0].h))
	return c
}

func (c *chrome) run(steps ...chromedp.Action[chromedp.Void]) {
	c.t.Helper()
	if err := chromedp.Do(c.ctx, steps...); err != nil {
		c.t.Fatal(err)
	}
}

// eval evaluates expr in the page, awaiting a promise, into a T.
func eval[T any](c *chrome, expr string) T {
	c.t.Helper()
	v, err := chromedp.Run(c.ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		c.t.Fatalf("evaluating %.80q: %v", expr, err)
	}
	return v
}

// cookies are the browser's cookies for the server.
func (c *chrome) cookies() []*network.Cookie {
	c.t.Helper()
	r, err := chromedp.Call(c.ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{publicURL}})
	if err != nil {
		c.t.Fatal(err)
	}
	return r.Cookies
}

// open navigates to path and waits for the page's body.
func (c *chrome) open(path string) {
	c.t.Helper()
	c.run(chromedp.Navigate(publicURL+path), chromedp.WaitReady(chromedp.CSS("body")))
}

// status is the HTTP status of the page's own document.
func (c *chrome) status() int {
	c.t.Helper()
	return eval[int](c, `performance.getEntriesByType('navigation')[0].responseStatus`)
}

func (c *chrome) path() string {
	c.t.Helper()
	return eval[string](c, `location.pathname`)
}

// pathNow is the page's path, or "" while the page is being replaced: asked during a
// navigation, the browser may answer that the document it was asked about is gone.
func (c *chrome) pathNow() string {
	p, err := chromedp.Run(c.ctx, chromedp.Evaluate[string](`location.pathname`))
	if err != nil {
		return ""
	}
	return p
}

func (c *chrome) text(sel string) string {
	c.t.Helper()
	s, err := chromedp.Run(c.ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		c.t.Fatal(err)
	}
	return s
}

// waitPath waits until the page is at path (after a form's redirect).
func (c *chrome) waitPath(path string) {
	c.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for c.pathNow() != path {
		if time.Now().After(deadline) {
			c.t.Fatalf("still at %s, want %s", c.path(), path)
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.run(chromedp.WaitReady(chromedp.CSS("body")))
}

// wantPage checks the page's status and that its main text holds want.
func (c *chrome) wantPage(what string, status int, want string) {
	c.t.Helper()
	got := c.status()
	main := c.text("main")
	if got != status || !strings.Contains(main, want) {
		c.t.Fatalf("%s: %d, want %d with %q; main: %s", what, got, status, want, main)
	}
}

// check runs every per-page check on the current page: no CSP violation, axe finds nothing
// serious or critical, the page weight, and the screenshots under name.
func (c *chrome) check(name string) {
	c.t.Helper()
	csp := eval[[]string](c, `window.__csp || []`)
	if len(csp) > 0 {
		c.t.Errorf("%s: the page broke its CSP: %v", name, csp)
	}
	c.axe(name)
	c.weigh(name)
	c.screenshots(name)
}

type axeViolation struct {
	ID     string   `json:"id"`
	Impact string   `json:"impact"`
	Help   string   `json:"help"`
	Nodes  []string `json:"nodes"`
}

// axe injects axe-core (once per document) and fails on violations of serious or critical impact.
func (c *chrome) axe(name string) {
	c.t.Helper()
	for _, v := range c.axeViolations() {
		msg := fmt.Sprintf("%s: axe %s (%s): %s\n  %s", name, v.ID, v.Impact, v.Help, strings.Join(v.Nodes, "\n  "))
		if v.Impact == "serious" || v.Impact == "critical" {
			c.t.Error(msg)
		} else {
			c.t.Log(msg)
		}
	}
}

// axeViolations runs axe-core on the page, injecting it first when the page has not got it.
func (c *chrome) axeViolations() []axeViolation {
	c.t.Helper()
	if !eval[bool](c, `typeof window.axe === 'object'`) {
		c.run(chromedp.Evaluate[chromedp.Void](axeSource))
	}
	return eval[[]axeViolation](c, `axe.run(document, {resultTypes: ['violations']}).then(r => r.violations.map(v => ({
  id: v.id, impact: v.impact || '', help: v.help,
  nodes: v.nodes.map(n => n.target.join(' ') + ': ' + (n.failureSummary || '').replace(/\s+/g, ' '))})))`)
}

// weigh measures what the page loaded, its HTML (as the browser holds it, since a page may be
// the answer to a POST) and the style sheets and scripts it fetched (again, with the browser's
// cookies), and fails when they weigh more than maxPageWeight gzip-compressed.
func (c *chrome) weigh(name string) {
	c.t.Helper()
	html := eval[string](c, `'<!doctype html>\n' + document.documentElement.outerHTML`)
	total := gzipSize(strings.NewReader(html))
	parts := []string{fmt.Sprintf("%s %d B", c.path(), total)}
	urls := eval[[]string](c, `performance.getEntriesByType('resource')
  .filter(e => e.initiatorType === 'link' || e.initiatorType === 'script' || e.initiatorType === 'css')
  .map(e => e.name)`)
	cookies := c.cookies()
	for _, u := range urls {
		req, _ := http.NewRequest("GET", strings.Replace(u, publicURL, c.h.srv.URL, 1), nil)
		for _, ck := range cookies {
			req.AddCookie(&http.Cookie{Name: ck.Name, Value: ck.Value})
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			c.t.Fatal(err)
		}
		n := gzipSize(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 {
			c.t.Fatalf("%s: %s: %d", name, u, res.StatusCode)
		}
		total += n
		parts = append(parts, fmt.Sprintf("%s %d B", strings.TrimPrefix(u, publicURL), n))
	}
	c.t.Logf("%s: page weight %d B gzip (%s)", name, total, strings.Join(parts, ", "))
	if total > maxPageWeight {
		c.t.Errorf("%s: page weight %d B gzip, over %d B", name, total, maxPageWeight)
	}
}

func gzipSize(r io.Reader) int {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = io.Copy(zw, r)
	_ = zw.Close()
	return buf.Len()
}

// screenshots writes the whole page as PNG at each viewport, then restores the first.
func (c *chrome) screenshots(name string) {
	c.t.Helper()
	for _, v := range viewports {
		opts := []chromedp.EmulateViewportOption{chromedp.EmulateScale(1)}
		if v.w < 600 {
			opts = append(opts, chromedp.EmulateMobile)
		}
		c.run(chromedp.EmulateViewport(v.w, v.h, opts...), chromedp.Sleep(100*time.Millisecond))
		png, err := chromedp.Run(c.ctx, chromedp.FullScreenshot(100))
		if err != nil {
			c.t.Fatal(err)
		}
		f := filepath.Join(c.shot, fmt.Sprintf("%s-%dx%d.png", name, v.w, v.h))
		if err := os.WriteFile(f, png, 0o644); err != nil {
			c.t.Fatal(err)
		}
	}
	c.run(chromedp.EmulateViewport(viewports[0].w, viewports[0].h))
}

// activeID describes the focused element: its id, or its type for a button.
func (c *chrome) activeID() string {
	c.t.Helper()
	return eval[string](c, `(e => e.id || (e.tagName + ':' + (e.type || e.textContent)))(document.activeElement)`)
}

// keyboardFill fills a form from the keyboard alone: from the top of the page, Tab reaches each
// field in order (it is typed into), then the submit button; Enter in the last field submits.
func (c *chrome) keyboardFill(what string, fields [][2]string) {
	c.t.Helper()
	var seen []string
	tabTo := func(id string) {
		for range 15 {
			c.run(chromedp.KeyEvent(kb.Tab))
			got := c.activeID()
			seen = append(seen, got)
			if got == id {
				return
			}
		}
		c.t.Fatalf("%s: Tab never reached %s; focus went %v", what, id, seen)
	}
	for _, f := range fields {
		tabTo(f[0])
		c.run(chromedp.KeyEvent(f[1]))
	}
	tabTo("BUTTON:submit")
	last := fields[len(fields)-1][0]
	c.run(chromedp.Focus(chromedp.ID(last)), chromedp.KeyEvent(kb.Enter))
	c.t.Logf("%s: tab order %v", what, seen)
}

// cookie is the browser's session token.
func (c *chrome) session() string {
	c.t.Helper()
	for _, ck := range c.cookies() {
		if ck.Name == web.SessionCookie {
			return ck.Value
		}
	}
	return ""
}

// waitRunStatus reloads /runs until the run's row shows status.
func (c *chrome) waitRunStatus(taskID, status string) {
	c.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		c.open("/runs")
		row := eval[string](c, `(a => a ? a.closest('tr').innerText : '')(document.querySelector('a[href="/runs/`+taskID+`"]'))`)
		if strings.Contains(row, status) {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("run %s: its row never showed %s; last %q", taskID, status, row)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// invitationLink is the invitation link of an e-mail.
var invitationLink = regexp.MustCompile(regexp.QuoteMeta(publicURL) + `/accept-invitation\?token=[0-9a-f]{64}`)

// fill sets form fields by id (a select by its option's value), as typing would.
func (c *chrome) fill(fields map[string]string) {
	c.t.Helper()
	for id, v := range fields {
		c.run(chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(e => { if (!e) throw new Error('no field %s');
  e.value = %q; e.dispatchEvent(new Event('input', {bubbles: true})); e.dispatchEvent(new Event('change', {bubbles: true})) })(document.getElementById(%q))`, id, v, id)))
	}
}

// submit presses the submit button of the form sel and waits for the page it leads to.
func (c *chrome) submit(form string) {
	c.t.Helper()
	c.run(chromedp.Evaluate[chromedp.Void](`window.__submitted = true`), chromedp.Click(chromedp.CSS(form+` button[type="submit"]`)))
	deadline := time.Now().Add(15 * time.Second)
	for {
		// Evaluating may fail while the document is replaced; the next try sees the new one.
		if old, err := chromedp.Run(c.ctx, chromedp.Evaluate[bool](`window.__submitted === true`)); err == nil && !old {
			break
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("submitting %s led to no new page", form)
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.run(chromedp.WaitReady(chromedp.CSS("body")))
}

// waitPathPrefix waits until the page's path starts with prefix (and is longer) and returns it.
func (c *chrome) waitPathPrefix(prefix string) string {
	c.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		if p := c.pathNow(); strings.HasPrefix(p, prefix) && len(p) > len(prefix) {
			c.run(chromedp.WaitReady(chromedp.CSS("body")))
			return p
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("still at %s, want %s…", c.path(), prefix)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

type testRow struct {
	Class   string `json:"class"`
	Name    string `json:"name"`
	Message string `json:"message"`
}

func (c *chrome) testRows() []testRow {
	c.t.Helper()
	return eval[[]testRow](c, `[...document.querySelectorAll('table.tests tbody tr')].map(r => ({class: r.className,
  name: r.cells[0].innerText, message: (r.querySelector('pre.message') || {innerText: ''}).innerText}))`)
}

// TestBrowserDashboard drives the dashboard in a real Chromium against a real Verdict running
// the sample suites on the Docker engine.
func TestBrowserDashboard(t *testing.T) {
	testenv.DockerHost(t)
	rec := &providerRecorder{}
	h := newHarness(t, harnessOpts{dialect: "sqlite", realClock: true, workers: true, lease: 2 * time.Second, env: billingEnv(t, rec)})
	c := newChrome(t, h)
	c.t.Logf("screenshots: %s", c.shot)

	c.open("/")
	c.waitPath("/login")
	c.wantPage("login", 200, "Sign in")
	c.check("login")
	// The accessibility check does catch a problem: an image without a text alternative.
	c.run(chromedp.Evaluate[chromedp.Void](`document.querySelector('main').append(document.createElement('img'))`))
	if vs := c.axeViolations(); len(vs) != 1 || vs[0].ID != "image-alt" || vs[0].Impact != "critical" {
		t.Fatalf("axe on a page with an image without alt: %+v", vs)
	}

	// Signing up from the keyboard: Tab reaches every field, then the button; Enter submits.
	c.open("/signup")
	c.wantPage("signup", 200, "Create an account")
	c.check("signup")
	c.open("/signup")
	c.keyboardFill("signup", [][2]string{{"name", "Ada Lovelace"}, {"organizationName", "Browser Co"},
		{"email", "ada@example.com"}, {"password", password}})
	c.waitPath("/runs")
	c.wantPage("runs, empty", 200, "No runs yet")
	c.check("runs-empty")

	// A project from its form, then a run of it queued from the runs page's form.
	c.open("/projects")
	c.fill(map[string]string{"name": "Web shop", "image": passImage, "variables": "GREETING=hello"})
	c.submit("form.project-form")
	project := strings.TrimPrefix(c.waitPathPrefix("/projects/"), "/projects/")
	c.wantPage("project created", 200, "Project Web shop created.")
	c.open("/runs")
	c.fill(map[string]string{"q-project": project, "q-variables": "STAGE=browser"})
	// The folder field suggests the project image's test folders.
	c.run(chromedp.Click(chromedp.CSS(`button[hx-get="/runs/folders"]`)))
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(c.text("#q-folder-note"), "folders in "+passImage) {
		if time.Now().After(deadline) {
			t.Fatalf("no folders listed: %q", c.text("#q-folder-note"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if opts := eval[[]string](c, `[...document.querySelectorAll('#q-folder-list option')].map(o => o.value)`); len(opts) == 0 {
		t.Fatal("the folder list has no options")
	} else {
		t.Logf("folders of %s: %v", passImage, opts)
	}
	c.submit("details.queue form")
	taskID := strings.TrimPrefix(c.waitPathPrefix("/runs/"), "/runs/")
	c.wantPage("run queued", 200, "Run "+taskID+" queued.")
	c.waitRunStatus(taskID, "PASSED")
	c.wantPage("runs", 200, "Web shop")
	c.check("runs")
	admin := bearer(c.session())
	if got := c.h.do("GET", "/api/executions/"+taskID, admin, nil); got.str("execution", "projectId") != project ||
		got.str("execution", "image") != passImage {
		t.Fatalf("the queued run is not the project's: %s", got.raw)
	}

	c.run(chromedp.Click(chromedp.CSS(`a[href="/runs/` + taskID + `"]`)))
	c.waitPath("/runs/" + taskID)
	c.wantPage("run page", 200, "PASSED")
	rows := c.testRows()
	if len(rows) != 4 {
		t.Fatalf("passed run: %d test rows, want 4: %+v", len(rows), rows)
	}
	for _, r := range rows {
		if r.Class != "test-passed" || r.Name == "" {
			t.Fatalf("passed run: row %+v", r)
		}
	}
	report := eval[string](c, `(a => a ? a.getAttribute('href') : '')([...document.querySelectorAll('dl.facts a')].find(a => a.textContent === 'Open the report'))`)
	if !strings.HasPrefix(report, publicURL+"/") {
		t.Fatalf("report link %q, want one on %s", report, publicURL)
	}
	c.check("run-passed")
	// The report opens from its link (the link carries its own short-lived token).
	c.run(chromedp.Click(chromedp.CSS(`dl.facts a[href^="` + publicURL + `"]`)))
	c.waitPathPrefix("/reports/")
	if st, body := c.status(), c.text("body"); st != 200 || strings.TrimSpace(body) == "" {
		t.Fatalf("the report: %d %q", st, body)
	}

	// The runs page shows a run queued elsewhere (here by the API) as it is queued, and its
	// status as it changes, without a reload.
	c.open("/runs")
	c.run(chromedp.Evaluate[chromedp.Void](`window.__notReloaded = true`), chromedp.WaitReady(chromedp.CSS(`body[data-live="connected"]`)))
	h.queue(admin, map[string]any{"image": failImage, "taskId": "browser-fail"})
	deadline = time.Now().Add(60 * time.Second)
	for {
		row := eval[map[string]any](c, `(r => ({row: r ? r.innerText : '', same: window.__notReloaded === true}))(document.querySelector('tr[data-task="browser-fail"]'))`)
		if row["same"] != true {
			t.Fatal("the runs page reloaded itself")
		}
		if text, _ := row["row"].(string); strings.Contains(text, "FAILED") && strings.Contains(text, failImage) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the new run's row never showed FAILED live: %+v", row)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if first := eval[string](c, `document.querySelector('#runs tbody tr').dataset.task`); first != "browser-fail" {
		t.Fatalf("the new run is not the first row: %q", first)
	}

	// A failing run lists its failed tests first, each with its message.
	c.waitRunStatus("browser-fail", "FAILED")
	c.open("/runs/browser-fail")
	c.wantPage("failed run page", 200, "FAILED")
	rows = c.testRows()
	if len(rows) == 0 || rows[0].Class != "test-failed" {
		t.Fatalf("failed run: the first row is not a failed test: %+v", rows)
	}
	failedDone := false
	for _, r := range rows {
		failed := r.Class == "test-failed"
		if failed && (failedDone || strings.TrimSpace(r.Message) == "") {
			t.Fatalf("failed run: a failed test after the others, or without its message: %+v", rows)
		}
		failedDone = failedDone || !failed
	}
	c.check("run-failed")

	// Its failure is analysed on request, then triaged by a person.
	c.submit(`form[action="/runs/browser-fail/analysis"]`)
	c.wantPage("analysis requested", 200, "Analysis requested")
	deadline = time.Now().Add(30 * time.Second)
	for !strings.Contains(eval[string](c, `(d => d ? d.innerText : '')(document.querySelector('#analysis + dl'))`), "Category") {
		if time.Now().After(deadline) {
			t.Fatalf("no analysis on the failed run's page: %s", c.text("main"))
		}
		time.Sleep(300 * time.Millisecond)
		c.open("/runs/browser-fail")
	}
	c.fill(map[string]string{"triage-category": "product_bug"})
	c.submit(`form[action="/runs/browser-fail/triage"]`)
	c.wantPage("triaged", 200, "Triaged as product_bug")
	if got := c.text("#analysis + dl"); !strings.Contains(got, "(triaged as product_bug)") {
		t.Fatalf("the analysis after triage: %s", got)
	}
	c.check("run-analysed")

	// A run's page follows it live: opened while it runs, it shows the log lines as the
	// container writes them and the final status, without a reload. The socket library is
	// held back for a while, so lines are written between the page's rendering and its
	// socket joining: the page must fill that gap and show every line exactly once.
	h.queue(admin, map[string]any{"image": slowImage, "taskId": "browser-live", "envVars": map[string]any{"LINES": "20", "INTERVAL_MS": "150"}})
	h.waitFor(admin, "browser-live", 60*time.Second, func(r resp) bool {
		return strings.Contains(h.do("GET", "/api/executions/browser-live/logs", admin, nil).raw, "line 2 of 20")
	})
	if _, err := chromedp.Call(c.ctx, cdpfetch.Enable, cdpfetch.EnableParams{Patterns: []*cdpfetch.RequestPattern{{URLPattern: "*/socket.io/socket.io.js"}}}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Listen(c.ctx, func(ev any) {
		if e, ok := ev.(*cdpfetch.EventRequestPaused); ok {
			go func() {
				time.Sleep(1500 * time.Millisecond)
				_, _ = chromedp.Call(c.ctx, cdpfetch.ContinueRequest, cdpfetch.ContinueRequestParams{RequestID: e.RequestID})
			}()
		}
	}); err != nil {
		t.Fatal(err)
	}
	c.open("/runs/browser-live")
	c.run(chromedp.Evaluate[chromedp.Void](`window.__notReloaded = true`))
	rendered := strings.Count(c.text("#log"), "\n")
	deadline = time.Now().Add(90 * time.Second)
	for {
		state := eval[map[string]any](c, `({log: (document.getElementById('log') || {innerText: ''}).innerText,
  status: (document.querySelector('[data-field="status"]') || {innerText: ''}).innerText, same: window.__notReloaded === true})`)
		if state["same"] != true {
			t.Fatal("the run page reloaded itself")
		}
		log, _ := state["log"].(string)
		if strings.Contains(log, "line 20 of 20") && state["status"] == "PASSED" {
			for i := 1; i <= 20; i++ {
				if n := strings.Count(log, fmt.Sprintf("line %d of 20\n", i)); n != 1 {
					t.Fatalf("the live log shows line %d %d times (page rendered with %d lines):\n%s", i, n, rendered, log)
				}
			}
			if rendered >= 20 {
				t.Fatalf("the page was rendered with the whole log (%d lines): nothing was followed live", rendered)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run page did not follow the run live: %+v", state)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if _, err := chromedp.Call(c.ctx, cdpfetch.Disable, cdp.Empty{}); err != nil {
		t.Fatal(err)
	}

	// The log's filter keeps the lines that hold the text.
	c.run(chromedp.SendKeys(chromedp.ID("log-search"), "line 7 of"))
	if shown := eval[[]string](c, `[...document.querySelectorAll('#log .ln:not(.filtered)')].map(l => l.textContent)`); len(shown) != 1 || shown[0] != "line 7 of 20\n" {
		t.Fatalf("the log filtered for %q shows %q", "line 7 of", shown)
	}
	// Re-run, cancel and delete from the run pages.
	c.submit(`form[action="/runs/browser-live/rerun"]`)
	again := strings.TrimPrefix(c.waitPathPrefix("/runs/"), "/runs/")
	c.wantPage("re-run", 200, "queued again from browser-live")
	if again == "browser-live" {
		t.Fatal("re-run stayed on the old run")
	}
	c.submit(`form[action="/runs/` + again + `/cancel"]`)
	// The re-run lasts two seconds: on a loaded machine it may end before the cancel arrives,
	// which the page then says.
	if main := c.text("main"); strings.Contains(main, "Cancellation requested.") {
		c.waitRunStatus(again, "CANCELLED")
	} else if !strings.Contains(main, "The execution has already ended") {
		t.Fatalf("cancel: %s", main)
	}
	c.open("/runs/" + again)
	c.run(chromedp.Click(chromedp.CSS(`details.confirm summary`)))
	c.submit(`form[action="/runs/` + again + `/delete"]`)
	c.waitPath("/runs")
	c.wantPage("deleted", 200, "Run "+again+" deleted.")
	if r := h.do("GET", "/api/executions/"+again, admin, nil); r.status != 404 {
		t.Fatalf("the deleted run: %d", r.status)
	}

	c.open("/settings/billing")
	c.wantPage("billing", 200, "Test runs")
	c.check("billing")
	c.open("/members")
	c.wantPage("members", 200, "Ada Lovelace")
	c.check("members")
	c.open("/settings/api-keys")
	c.wantPage("API keys", 200, "API keys")
	c.check("api-keys")
	c.open("/projects")
	c.wantPage("projects", 200, "Projects")
	c.check("projects")
	c.open("/settings")
	c.wantPage("settings", 200, "AI models")
	c.check("settings")

	// Billing: checkout goes to the payment provider's page (stripe-mock's), whose return
	// lands on /settings/billing; the plan changes once the provider's event arrives.
	c.open("/settings/billing")
	var left []string
	var mu sync.Mutex
	if err := chromedp.Listen(c.ctx, func(ev any) {
		if e, ok := ev.(*network.EventRequestWillBeSent); ok && !strings.HasPrefix(e.Request.URL, publicURL) {
			mu.Lock()
			left = append(left, e.Request.URL)
			mu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}
	c.run(chromedp.Click(chromedp.CSS(`form[action="/settings/billing/checkout"] button`)))
	deadline = time.Now().Add(15 * time.Second)
	for {
		mu.Lock()
		n := len(left)
		mu.Unlock()
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("checkout did not send the browser to the payment provider")
		}
		time.Sleep(100 * time.Millisecond)
	}
	sessions := rec.requests("/v1/checkout/sessions")
	if len(sessions) != 1 || sessions[0].Form.Get("line_items[0][price]") != priceTeam {
		t.Fatalf("checkout sessions: %+v", sessions)
	}
	mu.Lock()
	if !strings.HasPrefix(left[0], "https://") {
		t.Fatalf("checkout sent the browser to %q", left[0])
	}
	mu.Unlock()
	back := strings.Replace(sessions[0].Form.Get("success_url"), "{CHECKOUT_SESSION_ID}", "cs_test_browser", 1)
	c.run(chromedp.Navigate(back), chromedp.WaitReady(chromedp.CSS("body")))
	c.wantPage("back from checkout", 200, "your payment was received")
	orgID := c.h.do("GET", "/api/auth/me", admin, nil).str("data", "organization", "id")
	customer := c.h.org(orgID).Billing.ProviderCustomerID
	c.h.deliver(event("evt_browser_sub", "customer.subscription.created", time.Now(), subscriptionObject("sub_browser", customer, priceTeam, time.Now())))
	c.open("/settings/billing")
	if plan := c.text("dl.facts dd:nth-of-type(2)"); plan != "team" {
		t.Fatalf("plan after the subscription: %q", plan)
	}
	c.check("billing-team")

	// An invitation from the members page, e-mailed; its link opens the invitation, where the
	// new member creates an account and joins as a viewer.
	c.open("/members")
	c.fill(map[string]string{"invite-email": "vi@example.com", "invite-role": "viewer"})
	c.submit(`form[action="/members/invite"]`)
	c.waitPath("/members")
	c.wantPage("invited", 200, "Invitation sent to vi@example.com.")
	var link string
	deadline = time.Now().Add(15 * time.Second)
	for link == "" {
		if m := invitationLink.FindString(c.h.console.lastTo("vi@example.com")); m != "" {
			link = m
		} else if time.Now().After(deadline) {
			t.Fatal("no invitation e-mail to vi@example.com")
		} else {
			time.Sleep(100 * time.Millisecond)
		}
	}
	c.run(chromedp.Click(chromedp.CSS(`form.signout button[type="submit"]`)))
	c.waitPath("/login")
	c.run(chromedp.Navigate(link), chromedp.WaitReady(chromedp.CSS("body")))
	c.wantPage("invitation", 200, "invites vi@example.com to join Browser Co as viewer")
	c.check("invitation")
	c.fill(map[string]string{"name": "Vi Viewer", "password": password})
	c.submit(`form[action="/accept-invitation"]`)
	c.waitPath("/runs")
	c.wantPage("viewer's runs", 200, taskID)
	// A viewer sees no write controls, and the server refuses the actions anyway.
	if n := eval[int](c, `document.querySelectorAll('details.queue, form[action="/runs"][method="post"]').length`); n != 0 {
		t.Fatalf("a viewer sees %d queue forms", n)
	}
	c.open("/runs/" + taskID)
	if n := eval[int](c, `document.querySelectorAll('form[action*="/cancel"], form[action*="/rerun"], form[action*="/delete"]').length`); n != 0 {
		t.Fatalf("a viewer sees %d run actions", n)
	}
	c.check("run-viewer")
	for _, action := range []string{"/runs", "/runs/" + taskID + "/delete", "/runs/" + taskID + "/rerun", "/projects"} {
		got := eval[int](c, `fetch('`+action+`', {method: 'POST', headers: {'X-CSRF-Token': document.querySelector('meta[name="csrf-token"]').content,
  'Content-Type': 'application/x-www-form-urlencoded'}, body: 'image=x&name=x', redirect: 'manual'}).then(r => r.status)`)
		if got != 403 {
			t.Errorf("a viewer's POST %s: %d, want 403", action, got)
		}
	}
	// The admin signed out of the browser to accept the invitation, which ended that session:
	// read the run with a new one.
	relogin := c.h.do("POST", "/api/auth/login", anon, map[string]any{"email": "ada@example.com", "password": password})
	expect(t, relogin, 200, "")
	admin = bearer(relogin.str("token"))
	if r := c.h.do("GET", "/api/executions/"+taskID, admin, nil); r.status != 200 {
		t.Fatalf("the run after the viewer's refused delete: %s", r.raw)
	}
	// An invitation link works once: opened again, it says so.
	c.run(chromedp.Click(chromedp.CSS(`form.signout button[type="submit"]`)))
	c.waitPath("/login")
	c.run(chromedp.Navigate(link), chromedp.WaitReady(chromedp.CSS("body")))
	if st := c.status(); st < 400 || !strings.Contains(c.text("main"), "Ask an admin of the organization for a new invitation") {
		t.Fatalf("a used invitation: %d %s", st, c.text("main"))
	}
	c.open("/login")
	c.keyboardFill("login", [][2]string{{"email", "ada@example.com"}, {"password", password}})
	c.waitPath("/runs")

	// Another organization's run is the 404 page.
	other := h.signup("other@example.com", "Other Co")
	h.queue(bearer(other.token), map[string]any{"image": passImage, "taskId": "secret-run"})
	c.open("/runs/secret-run")
	c.wantPage("another organization's run", 404, "Run not found")
	c.check("not-found")

	// A form posted without its CSRF token is refused with the 403 page, and changes nothing.
	c.open("/runs")
	c.run(chromedp.Evaluate[chromedp.Void](`document.querySelector('form.signout input[name="csrf"]').remove()`),
		chromedp.Click(chromedp.CSS(`form.signout button[type="submit"]`)))
	c.waitPath("/logout")
	c.wantPage("logout without CSRF", 403, "Request refused")
	c.check("forbidden")
	c.open("/runs")
	c.wantPage("runs after the refused logout", 200, "browser-fail")

	// Signing out lands on /login, and the pages are closed again.
	c.run(chromedp.Click(chromedp.CSS(`form.signout button[type="submit"]`)))
	c.waitPath("/login")
	if c.session() != "" {
		t.Fatal("signing out left the session cookie")
	}
	c.open("/runs")
	c.waitPath("/login")

	// Signing in from the keyboard: Tab order, Enter submits.
	c.keyboardFill("login", [][2]string{{"email", "ada@example.com"}, {"password", password}})
	c.waitPath("/runs")
	c.wantPage("runs after signing in", 200, taskID)
}
