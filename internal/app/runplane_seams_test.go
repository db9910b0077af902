//go:build integration

package app_test

import (
	"net"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// TestNoRunnerOpensNoEngine: a server with VERDICT_RUNNER=none runs no suites, so it opens no
// run backend: its engine settings point at a listener that counts connections, and nothing
// connects to it, whether the server starts, answers /readyz (which has no engine check) or is
// asked for an image's test folders (503: no run backend). A Kubernetes backend whose
// configuration does not exist does not keep it from starting either.
func TestNoRunnerOpensNoEngine(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var dialled atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			dialled.Add(1)
			c.Close()
		}
	}()
	h := newHarness(t, harnessOpts{dialect: "sqlite", workers: true,
		env: map[string]string{"VERDICT_RUNNER": "none", "DOCKER_HOST": "tcp://" + ln.Addr().String()}})
	admin := h.signup("no-engine@example.com", "No Engine Co")
	ready := h.do("GET", "/readyz", anon, nil)
	if ready.status != 200 || ready.get("checks", "docker") != nil {
		t.Fatalf("readyz of a server without a runner: %d %s", ready.status, ready.raw)
	}
	ts := h.do("GET", "/api/tests-structure?image="+passImage, bearer(admin.token), nil)
	expect(t, ts, 503, "Runner unavailable")
	if ts.str("message") != "No run backend is configured" {
		t.Fatalf("tests-structure without a run backend: %s", ts.raw)
	}
	time.Sleep(300 * time.Millisecond) // a reaper round or more
	if n := dialled.Load(); n != 0 {
		t.Fatalf("the server connected to the engine %d times", n)
	}

	newHarness(t, harnessOpts{dialect: "sqlite", env: map[string]string{"VERDICT_RUNNER": "none",
		"VERDICT_BACKEND": "kubernetes", "KUBECONFIG": filepath.Join(t.TempDir(), "absent"), "VERDICT_K8S_HELPER_IMAGE": "verdict:test"}})
}
