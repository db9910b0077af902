//go:build integration

package app_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"verdict/internal/domain"
	"verdict/internal/run"
	"verdict/internal/run/docker"
	"verdict/internal/store"
	"verdict/internal/testenv"
)

const shardedImage = "verdict-examples/sharded:latest"

// shardHarness runs suites on the real engine for an organization on the team plan (5 run
// slots, 8 shards), with the slots of the embedded runner to match.
func shardHarness(t *testing.T, dialect, plan string) *harness {
	testenv.DockerHost(t)
	return newHarness(t, harnessOpts{dialect: dialect, realClock: true, workers: true, lease: 2 * time.Second,
		env: map[string]string{"VERDICT_DEFAULT_PLAN": plan, "VERDICT_RUNNER_SLOTS": "4"}})
}

// shardsOf is the execution view's shards.
func shardsOf(r resp) []map[string]any {
	var out []map[string]any
	list, _ := r.get("execution", "shards").([]any)
	for _, s := range list {
		out = append(out, s.(map[string]any))
	}
	return out
}

// TestShardedRun: one run from four containers, merged into one verdict with each test's shard;
// the first run (no history) lets each shard split by SHARD_INDEX/SHARD_TOTAL, the second gets
// lists balanced by the first's durations; a failed test retried in a retry container turns
// the run UNSTABLE when it passes there and leaves it FAILED when it fails again.
func TestShardedRun(t *testing.T) {
	for _, d := range []string{"sqlite", "postgres"} {
		t.Run(d, func(t *testing.T) {
			h := shardHarness(t, d, "team")
			admin := h.signup("shards@example.com", "Shard Co")
			key := apiKey(h.do("POST", "/api/auth/api-keys", bearer(admin.token), map[string]any{"name": "ci"}).str("apiKey"))

			// The interface's bounds.
			expect(t, h.do("POST", "/api/executions", key, map[string]any{"image": shardedImage, "shards": 0}), 400, "Validation error")
			r := h.do("POST", "/api/executions", key, map[string]any{"image": shardedImage, "shards": 9})
			expect(t, r, 400, "Validation error")
			if !strings.Contains(r.str("message"), "at most 8 on the team plan") {
				t.Fatalf("cap: %s", r.raw)
			}
			expect(t, h.do("POST", "/api/executions", key, map[string]any{"image": shardedImage, "retries": -1}), 400, "Validation error")

			p := h.do("POST", "/api/projects", key, map[string]any{"name": "Regression", "image": shardedImage, "shards": 4})
			expect(t, p, 201, "")
			if p.get("project", "shards") != 4.0 || p.get("project", "retries") != 0.0 {
				t.Fatalf("project: %s", p.raw)
			}
			project := p.str("project", "id")

			// No history: every shard splits by itself.
			first := h.queue(key, map[string]any{"projectId": project})
			r = h.waitFor(key, first, 120*time.Second, final)
			checkMerged(t, r, "PASSED", 4, 200)
			for i := 1; i <= 4; i++ {
				logs := h.do("GET", fmt.Sprintf("/api/executions/%s/logs?shard=%d", first, i), key, nil)
				expect(t, logs, 200, "")
				text := logs.str("logs")
				if logs.get("shard") != float64(i) || logs.str("taskId") != first ||
					!strings.Contains(text, fmt.Sprintf("shard %d/4: files", i)) || !strings.Contains(text, "(own split)") ||
					!strings.Contains(text, "TASK_ID="+first) {
					t.Fatalf("shard %d's log: %s", i, logs.raw)
				}
			}
			expect(t, h.do("GET", "/api/executions/"+first+"/logs?shard=5", key, nil), 404, "Shard not found")
			// Each shard's reports are its own, under its task ID, served by the report route.
			shardReport := "/reports/" + admin.orgID + "/" + first + "~s1/junit/results.xml"
			if rep := h.do("GET", shardReport, bearer(admin.token), nil); rep.status != 200 || !strings.Contains(rep.raw, "<testsuites") {
				t.Fatalf("shard 1's JUnit report: %d %.200s", rep.status, rep.raw)
			}
			expect(t, h.do("GET", "/api/executions/"+first+"/logs?shard=x", key, nil), 400, "Validation error")

			// With history: lists balanced by the first run's durations.
			second := h.queue(key, map[string]any{"projectId": project})
			r = h.waitFor(key, second, 120*time.Second, final)
			checkMerged(t, r, "PASSED", 4, 200)
			files := 0
			for i, s := range shardsOf(r) {
				n, ok := s["assigned"].(float64)
				if !ok || n < 1 {
					t.Fatalf("shard %d was assigned no list: %v", i+1, s)
				}
				files += int(n)
				text := h.do("GET", fmt.Sprintf("/api/executions/%s/logs?shard=%d", second, i+1), key, nil).str("logs")
				if !strings.Contains(text, fmt.Sprintf("shard %d/4: %d file(s) from VERDICT_TESTS_FILE, 0 new", i+1, int(n))) {
					t.Fatalf("shard %d did not run its list: %s", i+1, text)
				}
			}
			if files != 40 {
				t.Fatalf("%d files assigned, want the 40 the first run recorded", files)
			}
			// The runs list shows the runs only, never their shards.
			list := h.do("GET", "/api/executions?limit=100", key, nil)
			if n := list.get("data", "total"); n != 2.0 || strings.Contains(list.raw, "~s") { // the first run and this one
				t.Fatalf("list: %s", list.raw)
			}

			// Deleting the run deletes its shards, their logs and reports, and frees their storage.
			usedBefore := h.do("GET", "/api/organization/usage", bearer(admin.token), nil).get("usage", "storage", "usedBytes").(float64)
			expect(t, h.do("DELETE", "/api/executions/"+first, bearer(admin.token), nil), 200, "")
			if rep := h.do("GET", shardReport, bearer(admin.token), nil); rep.status != 404 {
				t.Fatalf("a deleted run's shard report: %d", rep.status)
			}
			if used := h.do("GET", "/api/organization/usage", bearer(admin.token), nil).get("usage", "storage", "usedBytes").(float64); used >= usedBefore {
				t.Fatalf("storage %v after deleting the run, %v before", used, usedBefore)
			}
			expect(t, h.do("GET", "/api/executions/"+first+"/logs?shard=1", key, nil), 404, "Execution not found")

			// A failed test that passes on retry: UNSTABLE, the test flaky.
			flaky := h.queue(key, map[string]any{"projectId": project, "shards": 2, "retries": 1,
				"envVars": map[string]any{"FLAKY_TESTS": "short-03 test 2"}})
			r = h.waitFor(key, flaky, 120*time.Second, final)
			checkMerged(t, r, "UNSTABLE", 3, 200)
			if r.get("execution", "summary", "flaky") != 1.0 || r.get("execution", "summary", "failed") != 0.0 {
				t.Fatalf("flaky summary: %s", r.raw)
			}
			if retry := shardsOf(r)[2]; retry["retry"] != 1.0 || retry["index"] != 3.0 || retry["assigned"] != 1.0 {
				t.Fatalf("retry container: %v", retry)
			}
			found := false
			for _, x := range r.get("execution", "tests").([]any) {
				tc := x.(map[string]any)
				if tc["name"] == "short-03 test 2" {
					found = tc["status"] == "flaky" && tc["retries"] == 1.0
				}
			}
			if !found {
				t.Fatalf("the retried test is not flaky: %s", r.raw)
			}
			retryLog := h.do("GET", "/api/executions/"+flaky+"/logs?shard=3", key, nil).str("logs")
			if !strings.Contains(retryLog, "retry of 1 failed test(s)") {
				t.Fatalf("retry log: %s", retryLog)
			}

			// A test that fails again keeps the run FAILED.
			failing := h.queue(key, map[string]any{"projectId": project, "shards": 2, "retries": 1,
				"envVars": map[string]any{"FAIL_TESTS": "long-1 test 1"}})
			r = h.waitFor(key, failing, 120*time.Second, final)
			checkMerged(t, r, "FAILED", 3, 200)
			if r.get("execution", "summary", "failed") != 1.0 {
				t.Fatalf("failed summary: %s", r.raw)
			}
		})
	}
}

// checkMerged checks a sharded run's merged view: its status, its containers all ended with a
// runner and times, and its tests, each with the shard that ran it.
func checkMerged(t *testing.T, r resp, status string, containers, tests int) {
	t.Helper()
	if r.str("execution", "status") != status {
		t.Fatalf("status %s, want %s: %s", r.str("execution", "status"), status, r.raw)
	}
	shards := shardsOf(r)
	if len(shards) != containers {
		t.Fatalf("%d containers, want %d: %s", len(shards), containers, r.raw)
	}
	for i, s := range shards {
		if s["index"] != float64(i+1) || s["runner"] == "" || s["startedAt"] == nil || s["finishedAt"] == nil || s["exitCode"] == nil {
			t.Fatalf("container %d: %v", i+1, s)
		}
	}
	list := r.get("execution", "tests").([]any)
	if len(list) != tests || r.get("execution", "summary", "total") != float64(tests) {
		t.Fatalf("%d tests, want %d", len(list), tests)
	}
	per := map[float64]int{}
	for _, x := range list {
		per[x.(map[string]any)["shard"].(float64)]++
	}
	for i := 1; i <= min(containers, int(r.get("execution", "shardTotal").(float64))); i++ {
		if per[float64(i)] == 0 {
			t.Fatalf("no test of shard %d: %v", i, per)
		}
	}
}

// TestShardedRunFreePlanAndCancel: a free organization's shards take its one run slot in turn
// (and the run says so), and cancelling a sharded run cancels every shard and leaves no
// container.
func TestShardedRunFreePlanAndCancel(t *testing.T) {
	h := shardHarness(t, "sqlite", "free")
	admin := h.signup("free-shards@example.com", "Free Shards")
	a := bearer(admin.token)
	q := h.do("POST", "/api/executions", a, map[string]any{"image": shardedImage, "shards": 2})
	expect(t, q, 201, "")
	if reason := q.str("execution", "queueReason"); !strings.Contains(reason, "run in turn") {
		t.Fatalf("queueReason %q", reason)
	}
	r := h.waitFor(a, q.str("taskId"), 120*time.Second, final)
	checkMerged(t, r, "PASSED", 2, 200)
	s := shardsOf(r)
	end1, _ := time.Parse(time.RFC3339Nano, s[0]["finishedAt"].(string))
	start2, _ := time.Parse(time.RFC3339Nano, s[1]["startedAt"].(string))
	end2, _ := time.Parse(time.RFC3339Nano, s[1]["finishedAt"].(string))
	start1, _ := time.Parse(time.RFC3339Nano, s[0]["startedAt"].(string))
	if start2.Before(end1) && start1.Before(end2) {
		t.Fatalf("a one-slot organization ran two shards at once: %v", s)
	}

	// Cancel: a slow sharded run (one unit a second) on the free plan: one shard running, one
	// waiting.
	slow := h.queue(a, map[string]any{"image": shardedImage, "shards": 2, "envVars": map[string]any{"UNIT_MS": "1000"}})
	h.waitFor(a, slow, 60*time.Second, func(r resp) bool {
		for _, s := range shardsOf(r) {
			if s["status"] == "RUNNING" {
				return true
			}
		}
		return false
	})
	expect(t, h.do("POST", "/api/executions/"+slow+"/cancel", a, nil), 200, "")
	r = h.waitFor(a, slow, 60*time.Second, final)
	if r.str("execution", "status") != "CANCELLED" {
		t.Fatalf("cancel: %s", r.raw)
	}
	for _, s := range shardsOf(r) {
		if s["status"] != "CANCELLED" {
			t.Fatalf("a shard not cancelled: %v", s)
		}
	}
	b, err := docker.New("", docker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		left, err := b.List(context.Background(), map[string]string{run.LabelOrg: admin.orgID})
		if err != nil {
			t.Fatal(err)
		}
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d containers left behind", len(left))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestShardLost: a shard whose runner is lost is started again once; lost again, the run ends
// ERROR naming it. The "runner" here claims through the store and dies (no container).
func TestShardLost(t *testing.T) {
	for _, d := range []string{"sqlite", "postgres"} {
		t.Run(d, func(t *testing.T) {
			h := newHarness(t, harnessOpts{dialect: d, realClock: true, workers: true,
				env: map[string]string{"VERDICT_RUNNER": "none", "VERDICT_DEFAULT_PLAN": "team"}})
			admin := h.signup("lost@example.com", "Lost Co")
			a := bearer(admin.token)
			task := h.queue(a, map[string]any{"image": shardedImage, "shards": 2})
			ctx := context.Background()
			claimAll := func(want int) {
				t.Helper()
				for i := 0; i < want; i++ {
					now := time.Now().UTC()
					c, err := h.app.Store.Executions().Claim(ctx, "dead-runner", "", "", now, now.Add(500*time.Millisecond), func(domain.Plan) int { return 5 })
					if err != nil || c == nil || !c.IsShard() {
						t.Fatalf("claim %d: %+v %v", i, c, err)
					}
				}
			}
			claimAll(2)
			// The run's own record is never claimed: it holds no slot and runs no container.
			now := time.Now().UTC()
			if c, err := h.app.Store.Executions().Claim(ctx, "dead-runner", "", "", now, now.Add(time.Second), func(domain.Plan) int { return 5 }); err != nil || c != nil {
				t.Fatalf("a third claim of a 2-shard run: %+v %v", c, err)
			}
			// Started again: both back to PENDING, marked restarted.
			h.waitFor(a, task, 30*time.Second, func(r resp) bool {
				s := shardsOf(r)
				return len(s) == 2 && s[0]["status"] == "PENDING" && s[1]["status"] == "PENDING" &&
					s[0]["restarted"] == true && s[1]["restarted"] == true
			})
			claimAll(2)
			r := h.waitFor(a, task, 30*time.Second, final)
			if r.str("execution", "status") != "ERROR" || r.str("execution", "error") != "shard 1 of 2 was lost" {
				t.Fatalf("lost twice: %s", r.raw)
			}
		})
	}
}

// TestShardedRunLiveEvents: a shard's live log reaches Socket.IO as its run's, with the shard,
// and `?shard=` on the run's event stream follows that shard's log to its end.
func TestShardedRunLiveEvents(t *testing.T) {
	h := shardHarness(t, "sqlite", "team")
	admin := h.signup("live-shards@example.com", "Live Shards")
	a := bearer(admin.token)
	events := dialSocket(t, h.srv.URL, admin.token)
	if e := nextEvent(t, events, 10*time.Second); e.name != "auth-success" {
		t.Fatalf("first event %v", e)
	}
	task := h.queue(a, map[string]any{"image": shardedImage, "shards": 2})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	res := h.openSSE(ctx, "/api/executions/"+task+"/events?shard=2", a)
	defer res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("shard stream: %d", res.StatusCode)
	}
	var text strings.Builder
	ended := false
	err := readSSE(res.Body, func(ev sseEvent) bool {
		switch ev.event {
		case "execution-log":
			if !strings.Contains(ev.data, `"taskId":"`+task+`"`) || !strings.Contains(ev.data, `"shard":2`) {
				t.Errorf("shard stream's log event: %s", ev.data)
			}
			text.WriteString(ev.data)
		case "execution-updated":
			if strings.Contains(ev.data, `"status":"PASSED"`) {
				ended = true
				return false
			}
		}
		return true
	})
	if err != nil || !ended || !strings.Contains(text.String(), "shard 2/2") || strings.Contains(text.String(), "shard 1/2") {
		t.Fatalf("shard 2's stream (ended %v, %v): %s", ended, err, text.String())
	}
	h.waitFor(a, task, 90*time.Second, final)
	seen := map[float64]bool{}
	for len(events) > 0 {
		e := <-events
		if e.name != "execution-log" {
			continue
		}
		if e.data["taskId"] != task {
			t.Fatalf("a shard's log event names %v, not its run", e.data["taskId"])
		}
		s, _ := e.data["shard"].(float64)
		seen[s] = true
	}
	if !seen[1] || !seen[2] || len(seen) != 2 {
		t.Fatalf("execution-log events' shards: %v", seen)
	}
}

// TestShardedPytest: the pytest sample suite spreads its files by SHARD_INDEX/SHARD_TOTAL
// without history, and runs Verdict's lists (JUnit's dotted modules read back as files) with
// it: every test runs once either way.
func TestShardedPytest(t *testing.T) {
	h := shardHarness(t, "sqlite", "team")
	admin := h.signup("pytest-shards@example.com", "Pytest Shards")
	a := bearer(admin.token)
	p := h.do("POST", "/api/projects", a, map[string]any{"name": "Py", "image": pytestImage, "shards": 2})
	expect(t, p, 201, "")
	var statuses []string
	for round := 1; round <= 2; round++ {
		task := h.queue(a, map[string]any{"projectId": p.str("project", "id"), "baseUrl": "http://127.0.0.1:9"})
		r := h.waitFor(a, task, 120*time.Second, final)
		if n := r.get("execution", "summary", "total"); n != 7.0 {
			t.Fatalf("round %d: %v tests, want the suite's 7: %s", round, n, r.raw)
		}
		statuses = append(statuses, r.str("execution", "status"))
		for i, s := range shardsOf(r) {
			if round == 2 && s["assigned"] != 1.0 {
				t.Fatalf("round 2, shard %d: %v", i+1, s)
			}
			text := h.do("GET", fmt.Sprintf("/api/executions/%s/logs?shard=%d", task, i+1), a, nil).str("logs")
			if !strings.Contains(text, fmt.Sprintf("pytest suite: shard %d/2: /app/tests/", i+1)) {
				t.Fatalf("round %d, shard %d's log: %s", round, i+1, text)
			}
		}
	}
	if statuses[0] != statuses[1] {
		t.Fatalf("the same suite judged %v", statuses)
	}
}

// TestShardedRunStranded: a sharded run whose shards all ended without settling it (the
// process that ended the last one died first) is settled by the lease reaper: it never stays
// RUNNING.
func TestShardedRunStranded(t *testing.T) {
	for _, d := range []string{"sqlite", "postgres"} {
		t.Run(d, func(t *testing.T) {
			h := newHarness(t, harnessOpts{dialect: d, realClock: true, workers: true,
				env: map[string]string{"VERDICT_RUNNER": "none", "VERDICT_DEFAULT_PLAN": "team"}})
			admin := h.signup("stranded@example.com", "Stranded Co")
			a := bearer(admin.token)
			task := h.queue(a, map[string]any{"image": shardedImage, "shards": 2})
			ctx := context.Background()
			st := h.app.Store.Executions()
			for i := 0; i < 2; i++ {
				now := time.Now().UTC()
				c, err := st.Claim(ctx, "gone-runner", "", "", now, now.Add(time.Hour), func(domain.Plan) int { return 5 })
				if err != nil || c == nil || !c.IsShard() {
					t.Fatalf("claim: %+v %v", c, err)
				}
				exit := 0
				if err := st.Finish(ctx, c.ID, "gone-runner", store.Finish{Status: domain.ExecPassed, ExitCode: &exit,
					FinishedAt: time.Now().UTC(), Tests: []domain.TestResult{{Name: fmt.Sprint("t", i), Status: domain.TestPassed}},
					Summary: domain.Summary{Total: 1, Passed: 1}}); err != nil {
					t.Fatal(err)
				}
			}
			r := h.waitFor(a, task, 30*time.Second, final)
			if r.str("execution", "status") != "PASSED" || r.get("execution", "summary", "total") != 2.0 {
				t.Fatalf("stranded run: %s", r.raw)
			}
		})
	}
}
