//go:build integration

package app_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"verdict/internal/testenv/kubeenv"
)

// TestKubernetesShardedRun: a run of 4 shards on the Kubernetes backend is 4 Jobs, merged into
// one run as on Docker: the same status, 200 tests each knowing its shard, each shard's log,
// and nothing left behind.
func TestKubernetesShardedRun(t *testing.T) {
	k := kubeenv.Cluster(t)
	h := newHarness(t, harnessOpts{dialect: "sqlite", realClock: true, workers: true, lease: 3 * time.Second, env: map[string]string{
		"VERDICT_BACKEND": "kubernetes", "KUBECONFIG": k.Kubeconfig, "VERDICT_K8S_NAMESPACE": k.Namespace,
		"VERDICT_K8S_HELPER_IMAGE": kubeenv.HelperImage, "VERDICT_K8S_PULL_POLICY": "Never", "VERDICT_K8S_START_TIMEOUT": "30s",
		"VERDICT_RUN_MEMORY_MB": "128", "VERDICT_RUN_CPUS": "0.25", "VERDICT_DEFAULT_PLAN": "team", "VERDICT_RUNNER_SLOTS": "4",
	}})
	admin := h.signup("kube-shards@example.com", "Kube Shards Co")
	a := bearer(admin.token)
	task := h.queue(a, map[string]any{"image": shardedImage, "shards": 4})
	r := h.waitFor(a, task, 3*time.Minute, final)
	checkMerged(t, r, "PASSED", 4, 200)
	for i := 1; i <= 4; i++ {
		logs := h.do("GET", fmt.Sprintf("/api/executions/%s/logs?shard=%d", task, i), a, nil)
		expect(t, logs, 200, "")
		if text := logs.str("logs"); !strings.Contains(text, fmt.Sprintf("shard %d/4: files", i)) {
			t.Fatalf("shard %d's log on Kubernetes:\n%s", i, text)
		}
	}
	waitNothingLeft(t, k)
}
