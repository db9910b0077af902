//go:build integration

package app_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"verdict/internal/testenv"
)

// outageLease is the runners' lease and the server's (the reaper's grace) in the outage tests;
// the database stays away for outageFor, well past it.
const (
	outageLease = 3 * time.Second
	outageFor   = 8 * time.Second
	outageLines = 60 // a line every 100 ms: a run of about 6 s
)

// proxiedPostgres is a fresh PostgreSQL database reached through a proxy the test can cut.
func proxiedPostgres(t *testing.T) (dsn string, cut, restore func()) {
	t.Helper()
	u, err := url.Parse(testenv.PostgresDB(t))
	if err != nil {
		t.Fatal(err)
	}
	proxy, cut, restore := testenv.Cutter(t, u.Host)
	u.Host = proxy
	return u.String(), cut, restore
}

// TestRunsKeepTheirOutcomeThroughADatabaseOutage: PostgreSQL goes away for longer than the
// lease while two runs are in flight, then comes back. The runner was never lost, the database
// was: both runs end PASSED with exit code 0 and their whole log, each line stored once and in
// order, and the run queued behind them then runs. For the embedded runner (in process) and a
// remote one (over HTTP), whose calls the server answers 503 meanwhile.
func TestRunsKeepTheirOutcomeThroughADatabaseOutage(t *testing.T) {
	testenv.DockerHost(t)
	body := func(task string) map[string]any {
		return map[string]any{"image": slowImage, "taskId": task,
			"envVars": map[string]any{"LINES": fmt.Sprint(outageLines), "INTERVAL_MS": "100"}}
	}
	for _, remote := range []bool{false, true} {
		name := map[bool]string{false: "embedded", true: "remote"}[remote]
		t.Run(name, func(t *testing.T) {
			dsn, cut, restore := proxiedPostgres(t)
			env := map[string]string{"VERDICT_DEFAULT_PLAN": "team", "VERDICT_RUNNER_SLOTS": "2"}
			if remote {
				env["VERDICT_RUNNER"], env["VERDICT_RUNNER_SECRET"] = "none", runnerSecret
			}
			h := newHarness(t, harnessOpts{databaseURL: dsn, realClock: true, workers: true, lease: outageLease, env: env})
			var written func(task string) string // what the container wrote, when the test can see it
			if remote {
				tee, _, _, _ := startRemoteRunner(t, h.srv.URL, outageLease)
				written = tee.written
			}
			admin := h.signup("outage-"+name+"@example.com", "Outage Co")
			a := bearer(admin.token)

			first, second := h.queue(a, body(name+"-1")), h.queue(a, body(name+"-2"))
			// Both runs going, a few of their lines stored.
			for _, task := range []string{first, second} {
				h.waitFor(a, task, 90*time.Second, func(r resp) bool {
					if r.str("execution", "status") != "RUNNING" {
						return false
					}
					return strings.Contains(h.do("GET", "/api/executions/"+task+"/logs", a, nil).str("logs"), "line 5 of")
				})
			}
			third := h.queue(a, body(name+"-3")) // waits: both runner slots are taken

			cut()
			cutAt := time.Now()
			time.Sleep(outageFor)
			restore()
			restoredAt := time.Now()
			t.Logf("PostgreSQL was cut off for %s", restoredAt.Sub(cutAt).Round(100*time.Millisecond))

			logs := map[string]string{}
			for _, task := range []string{first, second, third} {
				got := h.waitFor(a, task, 120*time.Second, final)
				t.Logf("%s: %s %q, exit code %v, final %s after the database came back", task, got.str("execution", "status"),
					got.str("execution", "error"), got.get("execution", "exitCode"), time.Since(restoredAt).Round(100*time.Millisecond))
				if got.str("execution", "status") != "PASSED" || got.get("execution", "exitCode") != 0.0 {
					t.Errorf("%s after the outage: %s", task, got.raw)
					continue
				}
				if got.get("execution", "summary", "total") == 0.0 {
					t.Errorf("%s: no test results: %s", task, got.raw)
				}
				l := h.do("GET", "/api/executions/"+task+"/logs", a, nil)
				expect(t, l, 200, "")
				logs[task] = l.str("logs")
				checkSlowLog(t, task, logs[task])
				if written != nil {
					if w := written(task); logs[task] != w {
						t.Errorf("%s: stored log differs from what the container wrote:\n--- stored\n%s\n--- written\n%s", task, logs[task], w)
					}
				}
			}
			if t.Failed() {
				return
			}
			// The run that never met the outage prints the same but for its task ID.
			for _, task := range []string{first, second} {
				if want := strings.ReplaceAll(logs[third], third, task); logs[task] != want {
					t.Errorf("%s: stored log differs from the undisturbed run's:\n--- stored\n%s\n--- undisturbed\n%s", task, logs[task], want)
				}
			}
		})
	}
}

// checkSlowLog checks that the slow suite's numbered lines are in log, each once and in order.
func checkSlowLog(t *testing.T, task, log string) {
	t.Helper()
	next := 1
	for _, line := range strings.Split(log, "\n") {
		var i, n int
		if _, err := fmt.Sscanf(line, "line %d of %d", &i, &n); err != nil {
			continue
		}
		if i != next || n != outageLines {
			t.Errorf("%s: %q where line %d of %d was due; the log:\n%s", task, line, next, outageLines, log)
			return
		}
		next++
	}
	if next != outageLines+1 || !strings.HasSuffix(log, " failed\n") {
		t.Errorf("%s: %d of %d numbered lines, or no final count; the log:\n%s", task, next-1, outageLines, log)
	}
}
