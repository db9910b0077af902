package cli

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
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

// gateServer is a fakeServer whose run belongs to a project with gate rules: the run's gate
// appears in its view from the judgedAt-th read of the run on (never when judgedAt is 0).
type gateServer struct {
	fakeServer
	rules    string
	judgedAt int
	reads    int
	gate     map[string]any
}

func (g *gateServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/api/projects/p1/gate":
		fmt.Fprintf(w, `{"success":true,"data":{"gate":%s}}`, g.rules)
		return
	case "/api/executions/run-1":
		g.reads++
		g.view = map[string]any{"projectId": "p1"}
		if g.judgedAt > 0 && g.reads >= g.judgedAt {
			g.view["gate"] = g.gate
		}
	}
	g.fakeServer.ServeHTTP(w, r)
}

// A run that ends before its gate is judged: the command waits for the gate when the
// project has rules, and fails (exit 2) when it never comes, unless --ignore-gate; a project
// without rules is not waited for.
func TestGateAwaited(t *testing.T) {
	defer func(w, p time.Duration) { gateWait, gatePoll = w, p }(gateWait, gatePoll)
	gateWait, gatePoll = 400*time.Millisecond, 20*time.Millisecond
	failed := map[string]any{"status": "failed", "baselineTaskId": nil, "rules": []any{
		map[string]any{"rule": "minTests", "passed": false, "actual": 2, "threshold": 4, "message": "incomplete run: 2 tests, fewer than the 4 required"}}}
	on := `{"minTests":4,"maxFailed":null,"minPassRate":null,"noNewFailures":null,"noNewFlaky":null,"maxDurationSeconds":null,"baselineLabels":{}}`
	off := `{"minTests":null,"maxFailed":null,"minPassRate":null,"noNewFailures":false,"noNewFlaky":null,"maxDurationSeconds":null,"baselineLabels":{"branch":"main"}}`
	env := map[string]string{"VERDICT_API_KEY": "pk_live_good"}
	for _, c := range []struct {
		name     string
		rules    string
		judgedAt int
		args     []string
		want     int
		says     string
	}{
		{"judged a moment later", on, 3, nil, ExitGateFailed, "incomplete run: 2 tests"},
		{"never judged", on, 0, nil, ExitError, "the quality gate has not judged the run: exit 2"},
		{"never judged, ignored", on, 0, []string{"--ignore-gate"}, ExitPassed, "the quality gate has not judged the run; ignored"},
		{"no rules", off, 0, nil, ExitPassed, "run run-1 PASSED"},
	} {
		g := &gateServer{fakeServer: fakeServer{t: t, log: []string{"x\n"}, status: "PASSED"}, rules: c.rules, judgedAt: c.judgedAt, gate: failed}
		srv := httptest.NewServer(g)
		start := time.Now()
		code, _, errs := runCLI(t, srv.URL, env, c.args...)
		srv.Close()
		if code != c.want || !strings.Contains(errs, c.says) {
			t.Errorf("%s: exit %d, want %d with %q:\n%s", c.name, code, c.want, c.says, errs)
		}
		if c.rules == off && time.Since(start) > time.Second {
			t.Errorf("%s: waited %s for a gate the project does not have", c.name, time.Since(start))
		}
	}
}
