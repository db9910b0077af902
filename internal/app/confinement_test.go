//go:build integration

package app_test

import (
	"context"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"verdict/internal/run"
	"verdict/internal/run/docker"
	"verdict/internal/testenv"
)

// noContainersLeft fails unless every container of the organization is gone within a few seconds.
func noContainersLeft(t *testing.T, orgID string) {
	t.Helper()
	b, err := docker.New("", docker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		left, err := b.List(context.Background(), map[string]string{run.LabelOrg: orgID})
		if err != nil {
			t.Fatal(err)
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, c := range left {
				t.Errorf("container %s of run %s left behind, %s", c.ID[:12], c.Labels[run.LabelTask], c.State)
				_ = b.Remove(context.Background(), c.ID)
			}
			t.FailNow()
		}
	}
}

// TestRunDiskLimit: a run writing past VERDICT_RUN_DISK_MB into its container is stopped and ends
// ERROR with "disk limit exceeded", its container removed; a run within the bound is untouched.
func TestRunDiskLimit(t *testing.T) {
	testenv.DockerHost(t)
	h := newHarness(t, harnessOpts{dialect: "sqlite", realClock: true, workers: true, lease: 2 * time.Second,
		env: map[string]string{"VERDICT_RUN_DISK_MB": "20"}})
	admin := h.signup("disk@example.com", "Disk Co")
	a := bearer(admin.token)
	fill := func(mb, sleep int) string {
		return h.queue(a, map[string]any{"image": pytestImage, "command": pythonCommand, "timeoutSeconds": 120,
			"envVars": map[string]any{"SCRIPT": `
import os, time
with open("/app/fill", "wb") as f:
    for _ in range(` + strconv.Itoa(mb) + `):
        f.write(b"x" * (1 << 20))
    f.flush(); os.fsync(f.fileno())
print("wrote", flush=True)
time.sleep(` + strconv.Itoa(sleep) + `)
`}})
	}

	small := fill(5, 8) // long enough to be measured a few times
	r := h.waitFor(a, small, 60*time.Second, final)
	if r.str("execution", "status") != "PASSED" || r.str("execution", "error") != "" {
		t.Fatalf("a run within the bound: %s", r.raw)
	}

	began := time.Now()
	big := fill(100, 110)
	r = h.waitFor(a, big, 60*time.Second, final)
	if r.str("execution", "status") != "ERROR" || r.str("execution", "error") != "disk limit exceeded" {
		t.Fatalf("a run past the bound: %s", r.raw)
	}
	t.Logf("stopped %v after queueing", time.Since(began).Round(100*time.Millisecond))
	if logs := h.do("GET", "/api/executions/"+big+"/logs", a, nil).str("logs"); !strings.Contains(logs, "wrote\n") {
		t.Errorf("log of the stopped run:\n%s", logs)
	}
	noContainersLeft(t, admin.orgID)
}

// TestRunCancelLeavesNoContainer cancels runs at every moment around their start: none may
// leave a container behind, not even one the engine created while the cancel arrived.
func TestRunCancelLeavesNoContainer(t *testing.T) {
	h := runHarness(t, "sqlite")
	admin := h.signup("cancel-start@example.com", "Cancel Start Co")
	a := bearer(admin.token)
	for i := 0; i < 20; i++ {
		task := h.queue(a, map[string]any{"image": slowImage, "folder": "sleep"})
		time.Sleep(time.Duration(i*15) * time.Millisecond)
		expect(t, h.do("POST", "/api/executions/"+task+"/cancel", a, nil), 200, "")
		if r := h.waitFor(a, task, 30*time.Second, final); r.str("execution", "status") != "CANCELLED" {
			t.Fatalf("run %d: %s", i, r.raw)
		}
	}
	noContainersLeft(t, admin.orgID)
}

// TestRunLogFlood: a run printing 400 MB without a newline keeps the server's memory bounded
// and still leaves a log: the start of the line, cut, and marked so.
func TestRunLogFlood(t *testing.T) {
	h := runHarness(t, "sqlite")
	admin := h.signup("flood@example.com", "Flood Co")
	a := bearer(admin.token)

	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	baseline := ms.HeapInuse
	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
		}
	}()

	task := h.queue(a, map[string]any{"image": pytestImage, "command": pythonCommand, "timeoutSeconds": 300,
		"envVars": map[string]any{"SCRIPT": `
import sys
chunk = "y" * (1 << 20)
for _ in range(400):
    sys.stdout.write(chunk)
sys.stdout.flush()
`}})
	began := time.Now()
	r := h.waitFor(a, task, 180*time.Second, final)
	close(stop)
	<-sampled
	grew := int64(peak.Load()) - int64(baseline)
	t.Logf("run took %v; heap in use grew by %d MiB at most", time.Since(began).Round(100*time.Millisecond), grew>>20)
	if r.str("execution", "status") != "PASSED" {
		t.Fatalf("flood run: %s", r.raw)
	}
	if grew > 32<<20 {
		t.Errorf("the server's heap grew by %d MiB for one run's log", grew>>20)
	}
	logs := h.do("GET", "/api/executions/"+task+"/logs", a, nil).str("logs")
	if !strings.HasPrefix(logs, strings.Repeat("y", 1000)) || len(logs) > 20<<10 || !strings.Contains(logs, "line cut") {
		t.Errorf("stored log of the flood: %d bytes, starting %.40q, ending %q", len(logs), logs, logs[max(0, len(logs)-60):])
	}
}
