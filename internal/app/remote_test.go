//go:build integration

package app_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"verdict/internal/peerhttp"
	"verdict/internal/run"
	"verdict/internal/run/docker"
	"verdict/internal/testenv"
)

const runnerSecret = "remote-runner-secret-0123456789abcdef"

// teeBackend is the Docker backend keeping a copy of what each run's container wrote, by task.
type teeBackend struct {
	run.Backend
	mu    sync.Mutex
	task  map[string]string // container ID → TASK_ID
	wrote map[string]*bytes.Buffer
}

func (b *teeBackend) Start(ctx context.Context, s run.Spec) (string, error) {
	id, err := b.Backend.Start(ctx, s)
	if err == nil {
		b.mu.Lock()
		b.task[id] = s.Env["TASK_ID"]
		b.mu.Unlock()
	}
	return id, err
}

func (b *teeBackend) Logs(ctx context.Context, id string) (io.ReadCloser, error) {
	rc, err := b.Backend.Logs(ctx, id)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	buf := &bytes.Buffer{}
	b.wrote[b.task[id]] = buf
	b.mu.Unlock()
	return struct {
		io.Reader
		io.Closer
	}{io.TeeReader(rc, lockedWriter{&b.mu, buf}), rc}, nil
}

func (b *teeBackend) written(task string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if buf := b.wrote[task]; buf != nil {
		return buf.String()
	}
	return ""
}

type lockedWriter struct {
	mu  *sync.Mutex
	buf *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

// killable is a transport that can be cut, as when the runner's host dies.
type killable struct{ dead atomic.Bool }

func (k *killable) RoundTrip(r *http.Request) (*http.Response, error) {
	if k.dead.Load() {
		if r.Body != nil {
			r.Body.Close()
		}
		return nil, errors.New("the runner's host is gone")
	}
	return http.DefaultTransport.RoundTrip(r)
}

// runnerCall posts to a runner route with the given secret, as a runner named name.
func runnerCall(t *testing.T, base, secret, path, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("POST", base+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+secret)
	req.Header.Set(peerhttp.HeaderRunner, "intruder")
	req.Header.Set(peerhttp.HeaderSlots, "1")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res
}

func TestRemoteRunner(t *testing.T) {
	testenv.DockerHost(t)
	h := newHarness(t, harnessOpts{realClock: true, workers: true,
		env: map[string]string{"VERDICT_RUNNER": "none", "VERDICT_RUNNER_SECRET": runnerSecret}})
	if h.app.Runner() != nil {
		t.Fatal("VERDICT_RUNNER=none built an embedded runner")
	}
	admin := h.signup("remote@example.com", "Remote Co")
	dev := h.join(admin, "dev@example.com", "developer")
	a := bearer(admin.token)

	// A server without a runner secret has no runner routes.
	plain := newHarness(t, harnessOpts{env: map[string]string{"VERDICT_RUNNER": "none"}})
	if res := runnerCall(t, plain.srv.URL, runnerSecret, "/api/runner/next", `{"leaseSeconds":30}`); res.StatusCode != 404 {
		t.Fatalf("runner route without VERDICT_RUNNER_SECRET: %d, want 404", res.StatusCode)
	}

	// A wrong secret claims nothing.
	passTask := h.queue(a, map[string]any{"image": passImage, "taskId": "remote-pass"})
	for _, secret := range []string{"", "wrong-secret-wrong-secret-wrong-secret", runnerSecret + "x"} {
		if res := runnerCall(t, h.srv.URL, secret, "/api/runner/next", `{"leaseSeconds":30}`); res.StatusCode != 401 {
			t.Fatalf("secret %q: %d, want 401", secret, res.StatusCode)
		}
	}
	if st := h.do("GET", "/api/executions/"+passTask, a, nil).str("execution", "status"); st != "PENDING" {
		t.Fatalf("after refused runners the run is %s, want PENDING", st)
	}
	// Bad identity is 400 with the API's error body.
	req, _ := http.NewRequest("POST", h.srv.URL+"/api/runner/next", strings.NewReader(`{"leaseSeconds":30}`))
	req.Header.Set("Authorization", "Bearer "+runnerSecret)
	req.Header.Set(peerhttp.HeaderRunner, "bad name!")
	req.Header.Set(peerhttp.HeaderSlots, "1")
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != 400 {
		t.Fatalf("bad runner name: %v %v", res, err)
	}

	// The runner: run.Runner in this process, over HTTP, on the real engine.
	tee, cut, kill, stopped := startRemoteRunner(t, h.srv.URL, 2*time.Second)

	failTask := h.queue(a, map[string]any{"image": failImage, "taskId": "remote-fail"})
	for _, c := range []struct{ task, status string }{{passTask, "PASSED"}, {failTask, "FAILED"}} {
		got := h.waitFor(a, c.task, 90*time.Second, final)
		if got.str("execution", "status") != c.status {
			t.Fatalf("%s: %s", c.task, got.raw)
		}
		tests, _ := got.get("execution", "tests").([]any)
		if len(tests) == 0 || got.get("execution", "summary", "total") == 0.0 {
			t.Fatalf("%s: no results: %s", c.task, got.raw)
		}
		if c.status == "FAILED" && got.get("execution", "summary", "failed") == 0.0 {
			t.Fatalf("%s: no failed test: %s", c.task, got.raw)
		}
		logs := h.do("GET", "/api/executions/"+c.task+"/logs", a, nil)
		expect(t, logs, 200, "")
		if wrote := tee.written(c.task); wrote == "" || logs.str("logs") != wrote {
			t.Fatalf("%s: stored log differs from what the container wrote:\n--- stored\n%s\n--- written\n%s", c.task, logs.str("logs"), wrote)
		}
		e, err := h.app.Store.Executions().Get(context.Background(), admin.orgID, c.task)
		if err != nil || e.RunnerID != "remote:test-runner" {
			t.Fatalf("%s: runner %q, %v", c.task, e.RunnerID, err)
		}
	}
	passed := h.do("GET", "/api/executions/"+passTask, a, nil)
	htmlURL, _ := strings.CutPrefix(passed.str("execution", "htmlReportUrl"), publicURL)
	if htmlURL == "" {
		t.Fatalf("no report: %s", passed.raw)
	}
	if rep := h.do("GET", htmlURL, a, nil); rep.status != 200 || !strings.Contains(rep.header.Get("Content-Type"), "text/html") {
		t.Fatalf("report: %d %v", rep.status, rep.header)
	}

	// The runners list: admins only, without secrets.
	list := h.do("GET", "/api/runners", a, nil)
	expect(t, list, 200, "")
	runners, _ := list.get("data", "runners").([]any)
	if len(runners) != 1 {
		t.Fatalf("runners: %s", list.raw)
	}
	rn := runners[0].(map[string]any)
	if rn["id"] != "remote:test-runner" || rn["name"] != "test-runner" || rn["backend"] != "docker" || rn["slots"] != 2.0 ||
		rn["busy"] != 0.0 || rn["lastSeenAt"] == "" || strings.Contains(list.raw, runnerSecret) {
		t.Fatalf("runners: %s", list.raw)
	}
	expect(t, h.do("GET", "/api/runners", bearer(dev.token), nil), 403, "Forbidden")

	// A runner killed mid-run: its run ends ERROR once the lease lapses.
	slow := h.queue(a, map[string]any{"image": slowImage, "taskId": "remote-lost", "envVars": map[string]any{"LINES": "600", "INTERVAL_MS": "100"}})
	h.waitFor(a, slow, 60*time.Second, func(r resp) bool { return r.str("execution", "status") == "RUNNING" })
	// The list follows the runner's calls: busy within a moment of the claim.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		busy := h.do("GET", "/api/runners", a, nil).get("data", "runners")
		if busy.([]any)[0].(map[string]any)["busy"] == 1.0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("busy runner: %v", busy)
		}
	}
	cut.dead.Store(true)
	kill()
	<-stopped
	lost := h.waitFor(a, slow, 30*time.Second, final)
	if lost.str("execution", "status") != "ERROR" || !strings.Contains(lost.str("execution", "error"), "runner lost") {
		t.Fatalf("lost run: %s", lost.raw)
	}
}

// startRemoteRunner runs a run.Runner named test-runner in this process against the server at
// url, over HTTP through a transport that can be cut, on the real engine. kill stops it; stopped
// closes once it returned.
func startRemoteRunner(t *testing.T, url string, lease time.Duration) (*teeBackend, *killable, context.CancelFunc, chan struct{}) {
	t.Helper()
	b, err := docker.New("", docker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	if err := b.EnsureNetwork(context.Background()); err != nil {
		t.Fatal(err)
	}
	tee := &teeBackend{Backend: b, task: map[string]string{}, wrote: map[string]*bytes.Buffer{}}
	cut := &killable{}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	client, err := peerhttp.NewClient(peerhttp.ClientDeps{URL: url, Secret: runnerSecret, Name: "test-runner", Slots: 2,
		HTTP: &http.Client{Transport: cut}, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	r := &run.Runner{ID: peerhttp.RunnerID("test-runner"), Peer: client, Backend: tee, Clock: func() time.Time { return time.Now().UTC() },
		Log: log, Slots: 2, Lease: lease}
	ctx, kill := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { r.Run(ctx); close(stopped) }()
	t.Cleanup(func() { cut.dead.Store(true); kill(); <-stopped })
	return tee, cut, kill, stopped
}

// outage drops every request's connection while down, as a restarting server does.
type outage struct {
	down atomic.Bool
	next http.Handler
}

func (o *outage) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if o.down.Load() {
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close()
		}
		return
	}
	o.next.ServeHTTP(w, r)
}

// TestRemoteRunnerSurvivesOutage: the server stops answering for a few seconds mid-run (a
// restart); the runner retries its heartbeats and log lines, and the run ends as it would have,
// its whole log stored.
func TestRemoteRunnerSurvivesOutage(t *testing.T) {
	testenv.DockerHost(t)
	h := newHarness(t, harnessOpts{realClock: true, workers: true,
		env: map[string]string{"VERDICT_RUNNER": "none", "VERDICT_RUNNER_SECRET": runnerSecret}})
	admin := h.signup("outage@example.com", "Outage Co")
	a := bearer(admin.token)
	target, _ := url.Parse(h.srv.URL)
	gate := &outage{next: httputil.NewSingleHostReverseProxy(target)}
	proxy := httptest.NewServer(gate)
	t.Cleanup(proxy.Close)
	tee, _, _, _ := startRemoteRunner(t, proxy.URL, 6*time.Second)

	task := h.queue(a, map[string]any{"image": slowImage, "taskId": "remote-outage", "envVars": map[string]any{"LINES": "60", "INTERVAL_MS": "100"}})
	h.waitFor(a, task, 60*time.Second, func(r resp) bool {
		return r.str("execution", "status") == "RUNNING" && tee.written(task) != ""
	})
	gate.down.Store(true)
	time.Sleep(3 * time.Second)
	gate.down.Store(false)
	got := h.waitFor(a, task, 60*time.Second, final)
	if got.str("execution", "status") != "PASSED" {
		t.Fatalf("run after the outage: %s", got.raw)
	}
	logs := h.do("GET", "/api/executions/"+task+"/logs", a, nil)
	expect(t, logs, 200, "")
	if wrote := tee.written(task); logs.str("logs") != wrote {
		t.Fatalf("stored log differs from what the container wrote:\n--- stored\n%s\n--- written\n%s", logs.str("logs"), wrote)
	}
}

// TestRemoteRunnerHearsCancelAtOnce: a `verdict runner` process whose heartbeat comes only every
// 40 s (a 120 s lease) still ends a cancelled run within seconds: the cancel comes through its
// cancels long-poll.
func TestRemoteRunnerHearsCancelAtOnce(t *testing.T) {
	testenv.DockerHost(t)
	h := newHarness(t, harnessOpts{dialect: "sqlite", realClock: true, workers: true,
		env: map[string]string{"VERDICT_RUNNER": "none", "VERDICT_RUNNER_SECRET": runnerSecret}})
	proc := startRunnerProcess(t, h.srv.URL, "patient-runner", "VERDICT_RUNNER_LEASE=120s")
	admin := h.signup("cancel-remote@example.com", "Cancel Remote Co")
	a := bearer(admin.token)
	sleeper := h.queue(a, map[string]any{"image": slowImage, "folder": "sleep"})
	h.waitFor(a, sleeper, time.Minute, func(r resp) bool {
		return strings.Contains(h.do("GET", "/api/executions/"+sleeper+"/logs", a, nil).str("logs"), "sleeping until stopped")
	})
	expect(t, h.do("POST", "/api/executions/"+sleeper+"/cancel", a, nil), 200, "")
	// Half the heartbeat: only the long-poll can have brought the cancel this soon.
	r := h.waitFor(a, sleeper, 20*time.Second, final)
	if r.str("execution", "status") != "CANCELLED" || r.str("execution", "runner") != "remote:patient-runner" {
		t.Fatalf("cancelled run: %s\nrunner said:\n%s", r.raw, proc.stderr.String())
	}
}
