//go:build integration

package app_test

import (
	"testing"

	"verdict/internal/testenv"
)

// TestRunListAcrossReplicas: two replicas on one PostgreSQL database and one Redis. Each keeps
// the list rows it read (the run list serves a kept row at the version the database has); a
// run's status changed through one replica is what the other lists on its very next read, as is
// a run queued on it and a pin.
func TestRunListAcrossReplicas(t *testing.T) {
	o := harnessOpts{dialect: "postgres", databaseURL: testenv.PostgresDB(t), env: noRunner, redis: true,
		redisPrefix: testenv.KeyPrefix(t)}
	a, b := newHarness(t, o), newHarness(t, o)
	admin := a.signup("list-replicas@example.com", "List Replicas Co")
	key := bearer(admin.token)
	first := a.queue(key, map[string]any{"image": passImage})
	second := a.queue(key, map[string]any{"image": passImage})
	status := func(h *harness, task string) string {
		t.Helper()
		r := h.do("GET", "/api/executions?limit=25", key, nil)
		expect(t, r, 200, "")
		for _, x := range r.get("data", "executions").([]any) {
			if e := x.(map[string]any); e["taskId"] == task {
				s, _ := e["status"].(string)
				return s
			}
		}
		t.Fatalf("%s not listed: %s", task, r.raw)
		return ""
	}
	for range 2 { // the second read is served from what replica b keeps
		if got := status(b, first); got != "PENDING" {
			t.Fatalf("b lists %s %s before any change", first, got)
		}
	}
	expect(t, a.do("POST", "/api/executions/"+first+"/cancel", key, nil), 200, "")
	if got := status(b, first); got != "CANCELLED" {
		t.Fatalf("b lists %s %s on its next read after a cancelled it", first, got)
	}
	third := a.queue(key, map[string]any{"image": passImage})
	if got := status(b, third); got != "PENDING" {
		t.Fatalf("b lists the run a just queued as %s", got)
	}
	if got := status(b, second); got != "PENDING" {
		t.Fatalf("b lists %s %s", second, got)
	}
	expect(t, a.do("POST", "/api/executions/"+second+"/cancel", key, nil), 200, "")
	if got := status(b, second); got != "CANCELLED" {
		t.Fatalf("b lists %s %s on its next read after a cancelled it", second, got)
	}
}
