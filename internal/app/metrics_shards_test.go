package app_test

import (
	"testing"
	"time"

	"verdict/internal/testenv"
)

// TestMetricsCountShardsQueueWait: each container of a sharded run waits for a run slot like a
// run does, and verdict_run_queue_seconds counts each one's wait (a free plan's shards run in
// turn, so the second shard's wait is the first one's run); the run itself finishes once.
func TestMetricsCountShardsQueueWait(t *testing.T) {
	testenv.DockerHost(t)
	const token = "metrics-token-0123456789"
	h := newHarness(t, harnessOpts{dialect: "sqlite", realClock: true, workers: true, lease: 2 * time.Second,
		env: map[string]string{"VERDICT_METRICS_TOKEN": token, "VERDICT_RUNNER_SLOTS": "4"}})
	admin := h.signup("shard-metrics@example.com", "Shard Metrics Co")
	before, _ := h.scrape(token)
	task := h.queue(bearer(admin.token), map[string]any{"image": shardedImage, "shards": 2})
	r := h.waitFor(bearer(admin.token), task, 120*time.Second, final)
	if got := r.str("execution", "status"); got != "PASSED" {
		t.Fatalf("the sharded run ended %s: %s", got, r.raw)
	}
	h.do("GET", "/api/executions/"+task, bearer(admin.token), nil)
	after, _ := h.scrape(token)
	moved(t, before, after, "verdict_run_queue_seconds_count", 2)
	moved(t, before, after, `verdict_runs_finished_total{status="PASSED"}`, 1)
}
