package peerhttp

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"verdict/internal/domain"
	"verdict/internal/run"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

const secret = "0123456789abcdef0123456789abcdef"

// fakePeer is a control plane holding one run, "r1", for runner "remote:box".
type fakePeer struct {
	mu       sync.Mutex
	runner   string
	claimed  bool
	claim    string // the ask that claimed r1, for NextClaim
	logs     []string
	uploaded string
	done     *run.Result
	// settle, when set, holds Done until closed (the post-run chain at work); settling is
	// closed when Done begins.
	settle, settling chan struct{}
}

func (p *fakePeer) Next(ctx context.Context, lease time.Duration) (*run.Work, error) {
	return p.NextClaim(ctx, lease, "")
}

// NextClaim hands out r1 once, keeping its claim for Claimed (as the store does).
func (p *fakePeer) NextClaim(ctx context.Context, lease time.Duration, claim string) (*run.Work, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.claimed {
		return nil, nil
	}
	p.claimed, p.claim = true, claim
	return r1(), nil
}

// Claimed hands r1 out again to the ask that claimed it.
func (p *fakePeer) Claimed(ctx context.Context, claim string) (*run.Work, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.claimed || claim != p.claim {
		return nil, nil
	}
	return r1(), nil
}

func r1() *run.Work {
	return &run.Work{ID: "r1", TaskID: "t1", Image: "img", Env: run.RunEnv{Vars: map[string]string{"TOKEN": "s"}, Secrets: []string{"TOKEN"}}}
}

func (p *fakePeer) Extend(ctx context.Context, id string, lease time.Duration) (bool, error) {
	if id != "r1" {
		return false, run.ErrLeaseLost
	}
	return true, nil
}

func (p *fakePeer) Started(ctx context.Context, id, containerID string) error { return nil }

func (p *fakePeer) Log(ctx context.Context, id string, seq int, offset int64, chunk string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.logs = append(p.logs, chunk)
	return nil
}

func (p *fakePeer) Upload(ctx context.Context, id string, archive io.Reader) (run.Reports, error) {
	b, err := io.ReadAll(archive)
	p.mu.Lock()
	p.uploaded = string(b)
	p.mu.Unlock()
	return run.Reports{Dirs: []string{"junit"}, Bytes: int64(len(b)), Tests: []domain.TestResult{{Name: "a", Status: domain.TestPassed}}}, err
}

func (p *fakePeer) Done(ctx context.Context, id string, res run.Result) error {
	if p.settle != nil {
		close(p.settling)
		<-p.settle
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done = &res
	return nil
}

func newServer(t *testing.T, peer *fakePeer) *Server {
	return NewServer(ServerDeps{Secret: secret, Peer: func(id, _ string) run.RemotePeer { peer.runner = id; return peer }, Log: quiet,
		Wait: 200 * time.Millisecond, Poll: 20 * time.Millisecond})
}

func newClient(t *testing.T, url string) *Client {
	t.Helper()
	c, err := NewClient(ClientDeps{URL: url, Secret: secret, Name: "box", Slots: 3, Log: quiet, Backoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A run being settled (the server's post-run chain at work inside Done) still holds its slot:
// the runner's other calls meanwhile count it busy; the next call after Done does not.
func TestRunBeingSettledCountsBusy(t *testing.T) {
	peer := &fakePeer{settle: make(chan struct{}), settling: make(chan struct{})}
	s := newServer(t, peer)
	srv := httptest.NewServer(s)
	defer srv.Close()
	release := sync.OnceFunc(func() { close(peer.settle) })
	defer release() // before the server closes, should the test fail first
	c := newClient(t, srv.URL)
	ctx := context.Background()
	if w, err := c.Next(ctx, 30*time.Second); err != nil || w == nil {
		t.Fatalf("next: %+v %v", w, err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Done(ctx, "r1", run.Result{Status: domain.ExecPassed}) }()
	<-peer.settling
	if _, err := c.Extend(ctx, "r1", 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if list, err := s.Runners(ctx); err != nil || len(list) != 1 || list[0].Busy != 1 {
		t.Fatalf("runners while a run is settled: %+v %v, want it busy with that run", list, err)
	}
	release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := c.Next(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if list, err := s.Runners(ctx); err != nil || len(list) != 1 || list[0].Busy != 0 {
		t.Fatalf("runners once settled: %+v %v", list, err)
	}
}

func TestRoundTrip(t *testing.T) {
	peer := &fakePeer{}
	s := newServer(t, peer)
	srv := httptest.NewServer(s)
	defer srv.Close()
	c := newClient(t, srv.URL)
	ctx := context.Background()

	w, err := c.Next(ctx, 30*time.Second)
	if err != nil || w == nil || w.ID != "r1" || w.Env.Vars["TOKEN"] != "s" || peer.runner != "remote:box" {
		t.Fatalf("next: %+v %v (runner %q)", w, err, peer.runner)
	}
	if w, err := c.Next(ctx, 30*time.Second); w != nil || err != nil {
		t.Fatalf("second next: %+v %v, want nothing after the wait", w, err)
	}
	if cancelled, err := c.Extend(ctx, "r1", 30*time.Second); !cancelled || err != nil {
		t.Fatalf("extend: %v %v", cancelled, err)
	}
	// The list shows the run the runner holds, as the runner counts it.
	if list, err := s.Runners(ctx); err != nil || len(list) != 1 || list[0].Busy != 1 {
		t.Fatalf("runners while holding a run: %+v %v", list, err)
	}
	if _, err := c.Extend(ctx, "other", 30*time.Second); !errors.Is(err, run.ErrLeaseLost) {
		t.Fatalf("extend of another's run: %v, want ErrLeaseLost", err)
	}
	if err := c.Started(ctx, "r1", "c1"); err != nil {
		t.Fatal(err)
	}
	if err := c.Log(ctx, "r1", 1, 0, "line\n"); err != nil || len(peer.logs) != 1 || peer.logs[0] != "line\n" {
		t.Fatalf("log: %v %v", err, peer.logs)
	}
	pr, pw := io.Pipe()
	go func() { _, _ = io.WriteString(pw, strings.Repeat("x", 1<<20)); pw.Close() }()
	rep, err := c.Upload(ctx, "r1", pr)
	if err != nil || rep.Bytes != 1<<20 || len(rep.Tests) != 1 || len(peer.uploaded) != 1<<20 {
		t.Fatalf("upload: %+v %v", rep, err)
	}
	code := 1
	if err := c.Done(ctx, "r1", run.Result{Status: domain.ExecFailed, ExitCode: &code, Reports: rep}); err != nil {
		t.Fatal(err)
	}
	if peer.done == nil || peer.done.Status != domain.ExecFailed || *peer.done.ExitCode != 1 || peer.done.Reports.Bytes != 1<<20 {
		t.Fatalf("done: %+v", peer.done)
	}
	list, _ := s.Runners(ctx) // the run being settled no longer counts

	if len(list) != 1 || list[0].Name != "box" || list[0].Slots != 3 || list[0].Busy != 0 || list[0].Backend != "docker" {
		t.Fatalf("runners: %+v", list)
	}
}

// A second runner process under a name in use is refused its name and work, while the first
// goes on; once the first has been silent for nameHeldFor, the name is free again.
func TestRunnerNameInUse(t *testing.T) {
	peer := &fakePeer{}
	now := time.Date(2026, 3, 10, 9, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	s := NewServer(ServerDeps{Secret: secret, Peer: func(string, string) run.RemotePeer { return peer }, Log: quiet,
		Wait: 50 * time.Millisecond, Poll: 10 * time.Millisecond, Clock: clock})
	srv := httptest.NewServer(s)
	defer srv.Close()
	ctx := context.Background()
	first, second := newClient(t, srv.URL), newClient(t, srv.URL)
	if err := first.Hello(ctx); err != nil {
		t.Fatal(err)
	}
	if err := second.Hello(ctx); !errors.Is(err, ErrNameInUse) || !strings.Contains(err.Error(), "VERDICT_RUNNER_NAME") {
		t.Fatalf("second process's hello: %v, want ErrNameInUse", err)
	}
	if _, err := second.Next(ctx, 30*time.Second); !errors.Is(err, ErrNameInUse) {
		t.Fatalf("second process's next: %v, want ErrNameInUse", err)
	}
	if err := first.Hello(ctx); err != nil {
		t.Fatalf("the first process lost its name: %v", err)
	}
	mu.Lock()
	now = now.Add(nameHeldFor + time.Second)
	mu.Unlock()
	if err := second.Hello(ctx); err != nil {
		t.Fatalf("hello after the first went silent: %v", err)
	}
}

func TestServerRefuses(t *testing.T) {
	peer := &fakePeer{}
	srv := httptest.NewServer(newServer(t, peer))
	defer srv.Close()
	off := httptest.NewServer(NewServer(ServerDeps{Peer: func(string, string) run.RemotePeer { return peer }}))
	defer off.Close()
	post := func(base, auth, name, instance, body string) int {
		req, _ := http.NewRequest("POST", base+"/api/runner/next", strings.NewReader(body))
		req.Header.Set("Authorization", auth)
		req.Header.Set(HeaderRunner, name)
		req.Header.Set(HeaderSlots, "1")
		req.Header.Set(HeaderInstance, instance)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	for _, c := range []struct {
		base, auth, name, instance, body string
		want                             int
	}{
		{off.URL, "Bearer " + secret, "box", "0a1b", `{"leaseSeconds":30}`, 404},
		{srv.URL, "Bearer nope", "box", "0a1b", `{"leaseSeconds":30}`, 401},
		{srv.URL, secret, "box", "0a1b", `{"leaseSeconds":30}`, 401},
		{srv.URL, "Bearer " + secret, "../x", "0a1b", `{"leaseSeconds":30}`, 400},
		{srv.URL, "Bearer " + secret, "box", "", `{"leaseSeconds":30}`, 400},
		{srv.URL, "Bearer " + secret, "box", "0A1B", `{"leaseSeconds":30}`, 400},
		{srv.URL, "Bearer " + secret, "box", "0a1b", `{"leaseSeconds":30,"x":1}`, 400},
		{srv.URL, "Bearer " + secret, "box", "0a1b", `{"leaseSeconds":0}`, 400},
	} {
		if got := post(c.base, c.auth, c.name, c.instance, c.body); got != c.want {
			t.Errorf("%+v: %d, want %d", c, got, c.want)
		}
	}
	if peer.claimed {
		t.Fatal("a refused request claimed a run")
	}
}

// dropping passes requests to h but drops the connection of the first n without an answer, as
// a server that restarts does.
func dropping(n int32, h http.Handler) (http.Handler, *atomic.Int32) {
	var seen atomic.Int32
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if seen.Add(1) <= n {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		h.ServeHTTP(w, r)
	}), &seen
}

func TestClientRetriesDroppedRequests(t *testing.T) {
	peer := &fakePeer{}
	s := newServer(t, peer)
	var current atomic.Value // http.Handler
	h, _ := dropping(0, s)
	current.Store(h)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		current.Load().(http.Handler).ServeHTTP(w, r)
	}))
	defer srv.Close()
	c := newClient(t, srv.URL)
	ctx := context.Background()
	if _, err := c.Next(ctx, 5*time.Second); err != nil {
		t.Fatal(err)
	}

	// Two dropped requests, then answers: Extend and Log get through.
	drop, seen2 := dropping(2, s)
	current.Store(drop)
	if cancelled, err := c.Extend(ctx, "r1", 5*time.Second); err != nil || !cancelled {
		t.Fatalf("extend after dropped requests: %v %v", cancelled, err)
	}
	if n := seen2.Load(); n != 3 {
		t.Fatalf("extend: %d requests, want 3 (two dropped, one answered)", n)
	}
	drop, seen3 := dropping(2, s)
	current.Store(drop)
	if err := c.Log(ctx, "r1", 1, 0, "a\n"); err != nil || len(peer.logs) != 1 {
		t.Fatalf("log after dropped requests: %v %v", err, peer.logs)
	}
	if n := seen3.Load(); n != 3 {
		t.Fatalf("log: %d requests, want 3", n)
	}

	// A refusal is not retried.
	counted, seen4 := dropping(0, s)
	current.Store(counted)
	if _, err := c.Extend(ctx, "other", 5*time.Second); !errors.Is(err, run.ErrLeaseLost) || seen4.Load() != 1 {
		t.Fatalf("lease lost: %v after %d requests, want one", err, seen4.Load())
	}

	// A server that never answers: retries stop once the lease would be lost.
	gone, _ := dropping(1<<30, s)
	current.Store(gone)
	c.renewed("r1", 300*time.Millisecond, false)
	start := time.Now()
	// The runner hears the server is unavailable: it keeps what it reports and calls again.
	if _, err := c.Extend(ctx, "r1", 5*time.Second); !errors.Is(err, run.ErrUnavailable) || errors.Is(err, run.ErrLeaseLost) {
		t.Fatalf("extend against a dead server: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("extend kept retrying for %s past a 300ms lease", d)
	}
}

// A run claimed for a runner whose answer was lost (the connection dropped after the server
// claimed it) is handed to it again when it asks again, instead of waiting out its lease; the
// server claims once.
func TestLostClaimAnswerIsRepeated(t *testing.T) {
	peer := &fakePeer{}
	s := newServer(t, peer)
	var tries atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/next") && tries.Add(1) == 1 {
			s.ServeHTTP(httptest.NewRecorder(), r) // claimed, then the answer is lost
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		s.ServeHTTP(w, r)
	}))
	defer srv.Close()
	c := newClient(t, srv.URL)
	w, err := c.Next(context.Background(), 30*time.Second)
	if err != nil || w == nil || w.ID != "r1" || w.Env.Vars["TOKEN"] != "s" || tries.Load() != 2 {
		t.Fatalf("next after a lost answer: %+v %v after %d tries", w, err, tries.Load())
	}
	// Another claim is another request: it gets no run (the fake has one).
	if w, err := c.Next(context.Background(), 30*time.Second); w != nil || err != nil {
		t.Fatalf("a new claim: %+v %v", w, err)
	}
}

// A cancel reaches a remote runner through its cancels long-poll, not at its next heartbeat:
// at once when asked on this replica (NotifyCancel), within a poll when asked on another.
func TestCancelsReachTheRunner(t *testing.T) {
	t.Parallel() // it waits on long-polls; alone it would hold a test slot
	for _, notify := range []bool{true, false} {
		peer := &fakePeer{}
		var mu sync.Mutex
		cancelled := map[string]bool{}
		var c *Client // the runner process the cancels are for
		s := NewServer(ServerDeps{Secret: secret, Peer: func(string, string) run.RemotePeer { return peer }, Log: quiet,
			Wait: 5 * time.Second, Poll: 200 * time.Millisecond,
			Cancelled: func(_ context.Context, runnerID, instance string, ids []string) ([]string, error) {
				mu.Lock()
				defer mu.Unlock()
				var out []string
				for _, id := range ids {
					if cancelled[id] && runnerID == "remote:box" && instance == c.instance {
						out = append(out, id)
					}
				}
				return out, nil
			}})
		srv := httptest.NewServer(s)
		c = newClient(t, srv.URL)
		ctx, stop := context.WithCancel(context.Background())
		if w, err := c.Next(ctx, time.Minute); err != nil || w == nil {
			t.Fatalf("next: %v %v", w, err)
		}
		heard := make(chan string, 4)
		go c.WatchCancels(ctx, func(id string) { heard <- id })
		time.Sleep(300 * time.Millisecond) // the long-poll is waiting
		mu.Lock()
		cancelled["r1"] = true
		mu.Unlock()
		if notify {
			s.NotifyCancel()
		}
		select {
		case id := <-heard:
			if id != "r1" {
				t.Fatalf("cancel of %q", id)
			}
		case <-time.After(3 * time.Second):
			t.Fatalf("notify=%v: the cancel did not reach the runner", notify)
		}
		// Told once: the run stays held until settled, and is not cancelled again.
		select {
		case id := <-heard:
			t.Fatalf("cancel of %q told twice", id)
		case <-time.After(700 * time.Millisecond):
		}
		stop()
		srv.Close()
	}
}
