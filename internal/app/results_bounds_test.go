//go:build integration

package app_test

import (
	"archive/tar"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"verdict/internal/api"
	"verdict/internal/domain"
	"verdict/internal/peerhttp"
	"verdict/internal/run"
	"verdict/internal/testenv"
	"verdict/internal/web"
)

// bigJUnit is a JUnit report of ~8 MB whose text is full of '<' (an HTML-escaping encoder
// writes each as six bytes): failed tests with 4 KB messages, then passed ones. It returns the
// report and its counts.
func bigJUnit(failed, passed int) (report []byte, total int) {
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n<testsuites>\n")
	fmt.Fprintf(&b, `<testsuite name="suite &lt;big&gt;" tests="%d">`+"\n", failed+passed)
	msg := strings.Repeat("<", 4000)
	for i := range failed {
		fmt.Fprintf(&b, `<testcase classname="suite &lt;big&gt;" name="fails &lt;%d&gt;" time="0.5"><failure><![CDATA[%05d%s]]></failure></testcase>`+"\n", i, i, msg)
	}
	for i := range passed {
		fmt.Fprintf(&b, `<testcase classname="suite &lt;big&gt;" name="passes &lt;%d&gt; &amp; more" time="0.01"/>`+"\n", i)
	}
	b.WriteString("</testsuite>\n</testsuites>\n")
	return b.Bytes(), failed + passed
}

// junitBackend is a run.Backend whose every container exits 1 at once having written report
// to /app/junit/results.xml: the run plane gets a real report without Docker.
type junitBackend struct{ report []byte }

func (b *junitBackend) Name() string                              { return "junit" }
func (b *junitBackend) Ping(context.Context) error                { return nil }
func (b *junitBackend) EnsureImage(context.Context, string) error { return nil }
func (b *junitBackend) Start(_ context.Context, s run.Spec) (string, error) {
	return "c-" + s.Env["TASK_ID"], nil
}
func (b *junitBackend) Logs(context.Context, string) (io.ReadCloser, error) {
	return io.NopCloser(strings.NewReader("running the big suite\n")), nil
}
func (b *junitBackend) Wait(context.Context, string) (int, error)         { return 1, nil }
func (b *junitBackend) Stop(context.Context, string, time.Duration) error { return nil }
func (b *junitBackend) Remove(context.Context, string) error              { return nil }
func (b *junitBackend) List(context.Context, map[string]string) ([]run.Container, error) {
	return nil, nil
}
func (b *junitBackend) ListDir(context.Context, string, string, bool) ([]string, error) {
	return nil, nil
}

func (b *junitBackend) CopyOut(_ context.Context, _, path string) (io.ReadCloser, error) {
	var prefix string
	switch path {
	case "/app":
		prefix = "app/"
	case "/app/junit":
	default:
		return nil, run.ErrPathNotFound
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Name: prefix + "junit/", Typeflag: tar.TypeDir, Mode: 0o755})
	tw.WriteHeader(&tar.Header{Name: prefix + "junit/results.xml", Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(b.report))})
	tw.Write(b.report)
	tw.Close()
	return io.NopCloser(&buf), nil
}

// runBigReport has a remote runner (over HTTP, as `verdict runner`) carry out the queued run
// on a junitBackend, and waits for its end.
func runBigReport(t *testing.T, h *harness, report []byte) {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	client, err := peerhttp.NewClient(peerhttp.ClientDeps{URL: h.srv.URL, Secret: runnerSecret, Name: "big-runner", Slots: 1, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	r := &run.Runner{ID: peerhttp.RunnerID("big-runner"), Peer: client, Backend: &junitBackend{report: report},
		Clock: func() time.Time { return time.Now().UTC() }, Log: log, Slots: 1, Lease: 10 * time.Second}
	ctx, stop := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { r.Run(ctx); close(stopped) }()
	t.Cleanup(func() { stop(); <-stopped })
}

// allocPerRequest is the memory the process allocates per GET of path (as a, with hdr), over n
// requests at once: the server is in this process, so its reads of the run count.
func allocPerRequest(t *testing.T, h *harness, n int, path string, a auth, want int, hdr ...string) uint64 {
	t.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var wg sync.WaitGroup
	status := make([]int, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest("GET", h.srv.URL+path, nil)
			a.sign(req, hdr...)
			res, err := noFollow.Do(req)
			if err != nil {
				return
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			status[i] = res.StatusCode
		}()
	}
	wg.Wait()
	runtime.ReadMemStats(&after)
	for i, s := range status {
		if s != want {
			t.Fatalf("GET %.120s: request %d answered %d, want %d", path, i, s, want)
		}
	}
	return (after.TotalAlloc - before.TotalAlloc) / uint64(n)
}

// TestResultsBounds: a run whose JUnit report holds ~8 MB of tests full of '<' keeps a bounded,
// unescaped list of them, failures first, while its summary counts them all; its views, page
// and events stay small; and the report route refuses a bogus token without reading the run's
// results (measured as the memory a request allocates: reading them costs megabytes).
func TestResultsBounds(t *testing.T) {
	report, total := bigJUnit(1950, 5000)
	const failed = 1950
	if len(report) < 8<<20 {
		t.Fatalf("the report is %d bytes, want ~8 MB", len(report))
	}
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			dataDir := t.TempDir()
			o := harnessOpts{dialect: dialect, realClock: true, workers: true,
				env: map[string]string{"VERDICT_DATA_DIR": dataDir, "VERDICT_RUNNER": "none", "VERDICT_RUNNER_SECRET": runnerSecret}}
			driver, dsn := "sqlite", filepath.Join(dataDir, "verdict.db")
			if dialect == "postgres" {
				o.databaseURL = testenv.PostgresDB(t)
				driver, dsn = "pgx", o.databaseURL
			}
			h := newHarness(t, o)
			admin := h.signup("big@example.com", "Big Co")
			a := bearer(admin.token)
			socket := dialSocket(t, h.srv.URL, admin.token)
			if e := nextEvent(t, socket, 10*time.Second); e.name != "auth-success" {
				t.Fatalf("socket: %+v", e)
			}
			task := h.queue(a, map[string]any{"image": passImage, "taskId": "big-junit"})
			runBigReport(t, h, report)
			view := h.waitFor(a, task, 90*time.Second, final)

			// The view: the summary counts every test; the kept tests are bounded, failures
			// first, and say how many were not kept.
			var x struct {
				Execution struct {
					Status       string              `json:"status"`
					Summary      domain.Summary      `json:"summary"`
					Tests        []domain.TestResult `json:"tests"`
					TestsNotKept int                 `json:"testsNotKept"`
					TestsOmitted int                 `json:"testsOmitted"`
					Notes        []string            `json:"notes"`
				} `json:"execution"`
			}
			if err := json.Unmarshal([]byte(view.raw), &x); err != nil {
				t.Fatal(err)
			}
			e := x.Execution
			t.Logf("a %.1f MB JUnit report of %d tests: run view of %.2f MB with %d tests kept, %d not kept",
				float64(len(report))/1e6, total, float64(len(view.raw))/1e6, len(e.Tests), e.TestsNotKept)
			if e.Status != "FAILED" || e.Summary != (domain.Summary{Total: total, Passed: total - failed, Failed: failed}) {
				t.Fatalf("status %s, summary %+v, want FAILED with %d tests, %d failed: %.2000s", e.Status, e.Summary, total, failed, view.raw)
			}
			if len(e.Tests) == 0 || len(e.Tests) > domain.MaxKeptTests || e.TestsNotKept != total-len(e.Tests) || e.TestsOmitted != 0 {
				t.Fatalf("%d tests kept, %d not kept, %d omitted, of %d", len(e.Tests), e.TestsNotKept, e.TestsOmitted, total)
			}
			for i, tr := range e.Tests {
				if tr.Status != domain.TestFailed || tr.Name != fmt.Sprintf("fails <%d>", i) || !strings.Contains(tr.Error, "<<<<") {
					t.Fatalf("test %d kept is %q (%s), want the failures first, in report order", i, tr.Name, tr.Status)
				}
			}
			if want := fmt.Sprintf("%d more tests were not kept", e.TestsNotKept); len(e.Notes) == 0 || !strings.Contains(strings.Join(e.Notes, " "), want) {
				t.Fatalf("notes %q lack %q", e.Notes, want)
			}
			if len(view.raw) > 3<<19 || strings.Contains(view.raw, `\u003c`) {
				t.Fatalf("the run view is %d bytes (want at most 1.5 MiB) or escapes '<'", len(view.raw))
			}

			// As stored: within the budget, '<' as itself.
			db, err := sql.Open(driver, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			var stored string
			if err := db.QueryRow(`SELECT tests FROM executions WHERE task_id = 'big-junit'`).Scan(&stored); err != nil {
				t.Fatal(err)
			}
			if len(stored) > domain.MaxKeptTestBytes || strings.Contains(stored, `\u003c`) || !strings.Contains(stored, "fails <0>") {
				t.Fatalf("stored results: %d bytes (budget %d), escaped: %v", len(stored), domain.MaxKeptTestBytes, strings.Contains(stored, `\u003c`))
			}

			// The dashboard's page: one page of tests, failures first, and a way to the next.
			b := h.browser(t)
			b.get("/login")
			wantRedirect(t, "login", b.post("/login", url.Values{"email": {admin.email}, "password": {password}}), "/runs")
			p := b.get("/runs/" + task)
			page := p.body
			rows := strings.Count(page, `<tr class="test-`)
			t.Logf("run page: %.2f MB, %d test rows", float64(len(page))/1e6, rows)
			if p.status != 200 || len(page) > 1<<20 || rows != 50 || !strings.Contains(page, "testsPage=2") ||
				!strings.Contains(page, fmt.Sprintf("%d more tests were not kept", e.TestsNotKept)) {
				t.Fatalf("run page of %d bytes with %d test rows", len(page), rows)
			}
			second := b.get("/runs/" + task + "?testsPage=2").body
			if !strings.Contains(second, "fails &lt;50&gt;") || strings.Contains(second, "fails &lt;49&gt;<") {
				t.Fatal("the second page of tests does not start at the 51st")
			}

			// Events: the final update carries the first tests only, and says how many more.
			var final map[string]any
			for deadline := time.Now().Add(10 * time.Second); final == nil; {
				select {
				case ev := <-socket:
					if ev.name == "execution-updated" && ev.data["status"] == "FAILED" {
						final = ev.data
					}
				case <-time.After(time.Until(deadline)):
					t.Fatal("no final execution-updated on the socket")
				}
			}
			sockBytes, _ := json.Marshal(final)
			if tests, _ := final["tests"].([]any); len(tests) == 0 || len(tests) > api.EventTests || len(sockBytes) > 128<<10 ||
				final["testsOmitted"] != float64(len(e.Tests)-len(tests)) {
				t.Fatalf("socket's final update: %d bytes, %d tests, testsOmitted %v", len(sockBytes), len(tests), final["testsOmitted"])
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			res := h.openSSE(ctx, "/api/executions/"+task+"/events", a)
			var sse string
			readSSE(res.Body, func(ev sseEvent) bool {
				if ev.event == "execution-updated" {
					sse = ev.data
				}
				return true
			})
			res.Body.Close()
			t.Logf("final events: Socket.IO %d bytes, SSE %d bytes", len(sockBytes), len(sse))
			if len(sse) == 0 || len(sse) > 64<<10 || !strings.Contains(sse, `"testsOmitted"`) {
				t.Fatalf("SSE final update of %d bytes", len(sse))
			}

			// The report route: a bogus token is refused before the run is read; measured
			// against the run view, which does read its results.
			reportPath := "/reports/" + admin.orgID + "/" + task + "/junit/results.xml"
			wellFormed := fmt.Sprintf("%s.%s.%s", "zzzzzzzz", admin.id, strings.Repeat("A", 43))
			viewCost := allocPerRequest(t, h, 4, "/api/executions/"+task, a, 200)
			bogus := allocPerRequest(t, h, 24, reportPath+"?token=bogus", anon, 404)
			forged := allocPerRequest(t, h, 24, reportPath+"?token="+wellFormed, anon, 404)
			forgedLink := allocPerRequest(t, h, 24, "/reports/"+admin.orgID+"/"+task+"/~"+wellFormed+"/junit/results.xml", anon, 404)
			list := allocPerRequest(t, h, 8, "/api/executions?limit=100", a, 200)
			logs := allocPerRequest(t, h, 8, "/api/executions/"+task+"/logs", a, 200)
			runsPage := allocPerRequest(t, h, 8, "/runs", anon, 200, "Cookie", web.SessionCookie+"="+b.session())
			t.Logf("allocated per request: run view %d KiB; report with a bogus token %d KiB, a forged one %d KiB, a forged link %d KiB; list %d KiB; logs %d KiB; dashboard's runs %d KiB",
				viewCost>>10, bogus>>10, forged>>10, forgedLink>>10, list>>10, logs>>10, runsPage>>10)
			if viewCost < 1<<20 {
				t.Fatalf("the run view allocated %d bytes: the measure cannot tell a read of the results", viewCost)
			}
			for what, n := range map[string]uint64{"a bogus report token": bogus, "a forged report token": forged,
				"a forged report link": forgedLink, "the run list": list, "the run's log": logs, "the dashboard's run list": runsPage} {
				// Reading the results allocates their stored text alone, ~1 MiB; the log route's
				// own window is 256 KiB.
				if n > 512<<10 {
					t.Errorf("%s allocated %d KiB per request, want under 512 KiB: the run's results were read", what, n>>10)
				}
			}
			// The member's own report still opens.
			if rep := h.do("GET", reportPath, a, nil); rep.status != 200 || len(rep.raw) != len(report) {
				t.Fatalf("report by bearer: %d, %d bytes", rep.status, len(rep.raw))
			}
		})
	}
}
