package cli

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// The quality gate: printed with each rule and the quarantined failures; a failed gate exits 4
// for a run that passed, unless --ignore-gate; a run that failed exits as it would.
func TestGateExitCodes(t *testing.T) {
	failedGate := map[string]any{"status": "failed", "baselineTaskId": "main-7", "rules": []any{
		map[string]any{"rule": "minTests", "passed": true, "actual": 4, "threshold": 4, "message": "4 tests, at least 4 required"},
		map[string]any{"rule": "noNewFailures", "passed": false, "actual": 1, "threshold": 0, "message": "1 new failure against main-7: s › t2"},
	}}
	passedGate := map[string]any{"status": "passed", "baselineTaskId": nil, "rules": []any{
		map[string]any{"rule": "maxFailed", "passed": true, "actual": 0, "threshold": 0, "message": "0 failed tests, at most 0 allowed"}}}
	quarantined := []any{map[string]any{"test": map[string]any{"id": "t9", "suite": "s", "name": "t2"}, "status": "failed"}}
	env := map[string]string{"VERDICT_API_KEY": "pk_live_good"}
	for _, c := range []struct {
		name   string
		status string
		view   map[string]any
		args   []string
		want   int
		says   []string
	}{
		{"no gate", "PASSED", nil, nil, ExitPassed, nil},
		{"gate passed", "PASSED", map[string]any{"gate": passedGate}, nil, ExitPassed,
			[]string{"quality gate PASSED (no baseline run)", "  pass maxFailed: 0 failed tests, at most 0 allowed"}},
		{"gate failed", "PASSED", map[string]any{"gate": failedGate, "quarantinedFailures": quarantined}, nil, ExitGateFailed,
			[]string{"quality gate FAILED (baseline main-7)", "  pass minTests: 4 tests", "  FAIL noNewFailures: 1 new failure against main-7: s › t2",
				"1 quarantined failures (not counted):", "  s › t2 (failed)", "the quality gate failed: exit 4"}},
		{"gate failed, UNSTABLE", "UNSTABLE", map[string]any{"gate": failedGate}, nil, ExitGateFailed, nil},
		{"gate failed, ignored", "PASSED", map[string]any{"gate": failedGate}, []string{"--ignore-gate"}, ExitPassed,
			[]string{"quality gate FAILED", "the quality gate failed; ignored (--ignore-gate)"}},
		{"gate failed, run FAILED", "FAILED", map[string]any{"gate": failedGate}, nil, ExitFailed, []string{"quality gate FAILED"}},
		{"gate failed, UNSTABLE --strict", "UNSTABLE", map[string]any{"gate": failedGate}, []string{"--strict"}, ExitFailed, nil},
		{"gate failed, run ERROR", "ERROR", map[string]any{"gate": failedGate}, nil, ExitError, nil},
	} {
		srv := httptest.NewServer(&fakeServer{t: t, log: []string{"x\n"}, status: c.status, view: c.view})
		code, _, errs := runCLI(t, srv.URL, env, c.args...)
		srv.Close()
		if code != c.want {
			t.Errorf("%s: exit %d, want %d\n%s", c.name, code, c.want, errs)
		}
		for _, s := range c.says {
			if !strings.Contains(errs, "verdict: "+s) {
				t.Errorf("%s: stderr lacks %q:\n%s", c.name, s, errs)
			}
		}
		if c.view == nil && strings.Contains(errs, "quality gate") {
			t.Errorf("%s: a run without a gate prints one:\n%s", c.name, errs)
		}
	}
}
