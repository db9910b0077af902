package peerhttp

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"verdict/internal/run"
)

// Each runner process (instance) calls through a door of its own, even under one name: a run
// claimed by one process, and the answer kept for its claim, are never another's. A second
// process that takes the name over (the first went silent) and repeats the first's claim
// gets no run, and its calls about the first's run reach its own door only.
func TestEachInstanceHasItsOwnDoor(t *testing.T) {
	now := time.Date(2026, 3, 10, 9, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	doors := map[string]*fakePeer{} // by instance
	s := NewServer(ServerDeps{Secret: secret, Log: quiet, Wait: 50 * time.Millisecond, Poll: 10 * time.Millisecond, Clock: clock,
		Peer: func(runnerID, instance string) run.RemotePeer {
			mu.Lock()
			defer mu.Unlock()
			if runnerID != "remote:box" || doors[instance] != nil {
				t.Errorf("door for %q %q asked again or for another runner", runnerID, instance)
			}
			// The first process's door has a run to hand out; the others have none.
			doors[instance] = &fakePeer{runner: runnerID, claimed: len(doors) > 0}
			return doors[instance]
		}})
	srv := httptest.NewServer(s)
	defer srv.Close()
	post := func(instance, path, body string) (int, string) {
		req, _ := http.NewRequest("POST", srv.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+secret)
		req.Header.Set(HeaderRunner, "box")
		req.Header.Set(HeaderSlots, "1")
		req.Header.Set(HeaderInstance, instance)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}

	const claim = `{"leaseSeconds":30,"claim":"c1a1"}`
	if code, body := post("aaaa", "/api/runner/next", claim); code != 200 || !strings.Contains(body, `"TOKEN":"s"`) {
		t.Fatalf("the first process's claim: %d %s", code, body)
	}
	if code, body := post("aaaa", "/api/runner/next", claim); code != 200 || !strings.Contains(body, `"id":"r1"`) {
		t.Fatalf("the first process repeating its claim: %d %s", code, body)
	}
	mu.Lock()
	now = now.Add(nameHeldFor + time.Second) // the first process went silent; its name is free
	mu.Unlock()
	if code, body := post("bbbb", "/api/runner/next", claim); code != 204 {
		t.Fatalf("another process repeating the first's claim: %d %s, want 204 (no run)", code, body)
	}
	if code, body := post("bbbb", "/api/runner/runs/r1/log", `{"seq":1,"offset":0,"chunk":"forged\n"}`); code != 204 {
		t.Fatalf("another process's log: %d %s", code, body)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(doors) != 2 || doors["aaaa"] == nil || doors["bbbb"] == nil {
		t.Fatalf("doors: %v, want one per process", doors)
	}
	logs := func(p *fakePeer) []string { p.mu.Lock(); defer p.mu.Unlock(); return p.logs }
	if len(logs(doors["aaaa"])) != 0 || len(logs(doors["bbbb"])) != 1 {
		t.Fatalf("the second process's call reached the first's door: %v / %v", logs(doors["aaaa"]), logs(doors["bbbb"]))
	}
}

// A process's door is dropped once it has been unused for peerIdle, when a new process comes:
// the doors of processes gone do not pile up as runners restart.
func TestIdleDoorsAreDropped(t *testing.T) {
	now := time.Date(2026, 3, 10, 9, 0, 0, 0, time.UTC)
	s := NewServer(ServerDeps{Secret: secret, Log: quiet, Clock: func() time.Time { return now },
		Peer: func(string, string) run.RemotePeer { return &fakePeer{claimed: true} }})
	s.peerOf(peerKey{"remote:box", "aaaa"}, now)
	s.peerOf(peerKey{"remote:box", "bbbb"}, now.Add(peerIdle/2))
	s.peerOf(peerKey{"remote:box", "cccc"}, now.Add(peerIdle))
	if _, kept := s.peers[peerKey{"remote:box", "aaaa"}]; kept || len(s.peers) != 2 {
		t.Fatalf("doors after one went idle: %v", s.peers)
	}
}
