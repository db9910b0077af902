package config

import (
	"strings"
	"testing"
)

// VERDICT_RUN_SHM_MB sizes a run container's /dev/shm: 1024 by default, at least 1.
func TestRunShmSetting(t *testing.T) {
	c, err := LoadFrom(base())
	if err != nil || c.Runs.RunShmMB != 1024 {
		t.Fatalf("default: %v %d, want 1024", err, c.Runs.RunShmMB)
	}
	env := base()
	env["VERDICT_RUN_SHM_MB"] = "256"
	if c, err = LoadFrom(env); err != nil || c.Runs.RunShmMB != 256 {
		t.Fatalf("256: %v %d", err, c.Runs.RunShmMB)
	}
	for _, bad := range []string{"0", "-5", "lots"} {
		env["VERDICT_RUN_SHM_MB"] = bad
		if _, err := LoadFrom(env); err == nil || !strings.Contains(err.Error(), "VERDICT_RUN_SHM_MB") {
			t.Fatalf("VERDICT_RUN_SHM_MB=%q: %v, want an error naming it", bad, err)
		}
	}
}
