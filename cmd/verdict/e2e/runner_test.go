//go:build integration

package e2e

import (
	"strings"
	"testing"
)

// TestRunnerCommandUsage: `verdict runner` refuses to start without what it needs, naming it.
func TestRunnerCommandUsage(t *testing.T) {
	t.Setenv("VERDICT_RUNNER_SECRET", "")
	t.Setenv("VERDICT_SERVER", "")
	if code, out, _ := command(t, "runner", "--help"); code != exitOK || !strings.Contains(out, "verdict runner --server URL") {
		t.Fatalf("--help: %d %q", code, out)
	}
	if code, _, errs := command(t, "runner", "--server", "http://127.0.0.1:1"); code != exitUsage || !strings.Contains(errs, "VERDICT_RUNNER_SECRET") {
		t.Fatalf("without a secret: %d %q", code, errs)
	}
	t.Setenv("VERDICT_RUNNER_SECRET", strings.Repeat("s", 32))
	if code, _, errs := command(t, "runner"); code != exitUsage || !strings.Contains(errs, "--server") {
		t.Fatalf("without a server: %d %q", code, errs)
	}
	t.Setenv("VERDICT_RUNNER_NAME", "no spaces allowed")
	if code, _, errs := command(t, "runner", "--server", "http://127.0.0.1:1"); code != exitUsage || !strings.Contains(errs, "VERDICT_RUNNER_NAME") {
		t.Fatalf("bad name: %d %q", code, errs)
	}
	t.Setenv("VERDICT_RUNNER_NAME", "box-1")
	if code, _, errs := command(t, "runner", "--server", "ftp://x"); code != exitFailure || !strings.Contains(errs, "server URL") {
		t.Fatalf("bad server URL: %d %q", code, errs)
	}
}
