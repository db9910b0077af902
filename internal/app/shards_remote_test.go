//go:build integration

package app_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"verdict/internal/peerhttp"
	"verdict/internal/run"
	"verdict/internal/run/docker"
	"verdict/internal/testenv"
)

// startNamedRunner starts a remote runner called name (run.Runner over peerhttp.Client, on the
// real engine) with slots, stopped when the test ends.
func startNamedRunner(t *testing.T, url, name string, slots int) {
	t.Helper()
	b, err := docker.New("", docker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	if err := b.EnsureNetwork(context.Background()); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	client, err := peerhttp.NewClient(peerhttp.ClientDeps{URL: url, Secret: runnerSecret, Name: name, Slots: slots,
		HTTP: &http.Client{}, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	r := &run.Runner{ID: peerhttp.RunnerID(name), Peer: client, Backend: b, Clock: func() time.Time { return time.Now().UTC() },
		Log: log, Slots: slots, Lease: 2 * time.Second}
	ctx, stop := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { r.Run(ctx); close(stopped) }()
	t.Cleanup(func() { stop(); <-stopped })
}

// TestShardedRunRemoteRunners: 4 shards over 2 remote runners (a server that runs nothing
// itself) give the same merged run as on one host, and the shards' lists reach the containers
// over HTTP.
func TestShardedRunRemoteRunners(t *testing.T) {
	testenv.DockerHost(t)
	h := newHarness(t, harnessOpts{realClock: true, workers: true, env: map[string]string{"VERDICT_RUNNER": "none",
		"VERDICT_RUNNER_SECRET": runnerSecret, "VERDICT_DEFAULT_PLAN": "team"}})
	admin := h.signup("remote-shards@example.com", "Remote Shards")
	a := bearer(admin.token)
	startNamedRunner(t, h.srv.URL, "shards-a", 2)
	startNamedRunner(t, h.srv.URL, "shards-b", 2)
	p := h.do("POST", "/api/projects", a, map[string]any{"name": "Remote", "image": shardedImage, "shards": 4})
	expect(t, p, 201, "")
	for round := 1; round <= 2; round++ {
		task := h.queue(a, map[string]any{"projectId": p.str("project", "id")})
		r := h.waitFor(a, task, 180*time.Second, final)
		checkMerged(t, r, "PASSED", 4, 200)
		for i, s := range shardsOf(r) {
			if s["runner"] != "remote:shards-a" && s["runner"] != "remote:shards-b" {
				t.Fatalf("shard %d ran on %v", i+1, s["runner"])
			}
			text := h.do("GET", fmt.Sprintf("/api/executions/%s/logs?shard=%d", task, i+1), a, nil).str("logs")
			want := "(own split)" // no history yet
			if round == 2 {
				want = "from VERDICT_TESTS_FILE"
			}
			if !strings.Contains(text, want) || !strings.Contains(text, "TASK_ID="+task) {
				t.Fatalf("round %d, shard %d's log: %s", round, i+1, text)
			}
		}
	}
}
