//go:build integration

package app_test

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

// gateRule is a rule of a run's gate as its view shows it.
func gateRule(t *testing.T, r resp, name string) map[string]any {
	t.Helper()
	rules, _ := r.get("execution", "gate", "rules").([]any)
	for _, x := range rules {
		if m := x.(map[string]any); m["rule"] == name {
			return m
		}
	}
	t.Fatalf("the run's gate has no rule %s: %s", name, r.raw)
	return nil
}

func wantGateRule(t *testing.T, r resp, name string, passed bool, actual float64, msg string) {
	t.Helper()
	m := gateRule(t, r, name)
	if m["passed"] != passed || m["actual"] != actual || !strings.Contains(m["message"].(string), msg) {
		t.Errorf("rule %s: %v; want passed %v, actual %v, a message with %q", name, m, passed, actual, msg)
	}
}

// expectRefusal fails unless r is the API's error body with status, error and a message
// holding msg.
func expectRefusal(t *testing.T, r resp, status int, errText, msg string) {
	t.Helper()
	expect(t, r, status, errText)
	if !strings.Contains(r.str("message"), msg) {
		t.Fatalf("message %q, want one with %q", r.str("message"), msg)
	}
}

// testNames are the names of a comparison's list.
func testNames(r resp, list string) string {
	items, _ := r.get("data", list).([]any)
	var out []string
	for _, x := range items {
		out = append(out, x.(map[string]any)["name"].(string))
	}
	slices.Sort(out)
	return strings.Join(out, "|")
}

// Release gates end to end, on the real Docker engine with the sample suites: a project's
// gate rules (roles, validation, tenancy), each rule failing and passing on real runs, a new
// failure against the branch:main baseline, compare with and without `with`, the gate in the
// run list, and `verdict run`'s exit code when the gate fails and with --ignore-gate.
func TestReleaseGatesEndToEnd(t *testing.T) {
	for _, d := range []string{"sqlite", "postgres"} {
		t.Run(d, func(t *testing.T) {
			h := runHarness(t, d)
			admin := h.signup("gates@example.com", "Gate Co")
			ad := bearer(admin.token)
			keyValue := h.do("POST", "/api/auth/api-keys", ad, map[string]any{"name": "ci"}).str("apiKey")
			key := apiKey(keyValue)
			viewer := bearer(h.join(admin, "viewer@example.com", "viewer").token)
			other := h.signup("other@example.com", "Other Co")
			theirs := bearer(other.token)

			p := h.do("POST", "/api/projects", key, map[string]any{"name": "Web", "image": passImage})
			expect(t, p, 201, "")
			projectID := p.str("project", "id")
			gatePath := "/api/projects/" + projectID + "/gate"

			// No rules yet: every rule null, and a run has no gate.
			g := h.do("GET", gatePath, viewer, nil)
			expect(t, g, 200, "")
			if g.get("data", "gate", "minTests") != nil || g.get("data", "gate", "noNewFailures") != nil ||
				fmt.Sprint(g.get("data", "gate", "baselineLabels")) != "map[]" {
				t.Fatalf("a new project's gate: %s", g.raw)
			}
			run := func(taskID string, body map[string]any, judged bool) resp {
				t.Helper()
				body["projectId"], body["taskId"] = projectID, taskID
				h.queue(key, body)
				return h.waitFor(key, taskID, 90*time.Second, func(r resp) bool {
					return final(r) && (!judged || r.get("execution", "gate") != nil)
				})
			}
			r := run("before-rules", map[string]any{"labels": map[string]string{"branch": "main"}}, false)
			if r.str("execution", "status") != "PASSED" || r.get("execution", "gate") != nil || !strings.Contains(r.raw, `"gate":null`) {
				t.Fatalf("a run of a project without rules: %s", r.raw)
			}

			// Refusals: bad values, a viewer, another organization.
			for _, bad := range []struct {
				body any
				msg  string
			}{
				{map[string]any{"minTests": -1}, "minTests must be a whole number from 0 to 1000000000"},
				{map[string]any{"maxFailed": -2}, "maxFailed must be"},
				{map[string]any{"maxDurationSeconds": -5}, "maxDurationSeconds must be"},
				{map[string]any{"minPassRate": 1.5}, "minPassRate must be a number from 0 to 1"},
				{map[string]any{"baselineLabels": map[string]string{"Branch": "main"}}, `baselineLabels: label "Branch"`},
			} {
				expectRefusal(t, h.do("PUT", gatePath, key, bad.body), 400, "Validation error", bad.msg)
			}
			expectRefusal(t, h.do("PUT", gatePath, key, map[string]any{"minTests": 1.5}), 400, "Validation error", `Field "minTests"`)
			expectRefusal(t, h.do("PUT", gatePath, key, map[string]any{"maxTests": 3}), 400, "Invalid request", `Unknown field "maxTests"`)
			expectRefusal(t, h.do("PUT", gatePath, viewer, map[string]any{"minTests": 1}), 403, "Forbidden", "Viewers cannot change a project's gate rules")
			expectRefusal(t, h.do("PUT", gatePath, theirs, map[string]any{"minTests": 1}), 404, "Project not found", "No such project in your organization")
			expectRefusal(t, h.do("GET", gatePath, theirs, nil), 404, "Project not found", "No such project in your organization")

			rules := map[string]any{"minTests": 4, "maxFailed": 0, "minPassRate": 1, "noNewFailures": true, "noNewFlaky": true,
				"maxDurationSeconds": 600}
			put := h.do("PUT", gatePath, key, rules)
			expect(t, put, 200, "")
			if put.get("data", "gate", "minTests") != 4.0 || put.get("data", "gate", "noNewFlaky") != true ||
				fmt.Sprint(put.get("data", "gate", "baselineLabels")) != "map[]" {
				t.Fatalf("PUT gate: %s", put.raw)
			}
			if g := h.do("GET", gatePath, viewer, nil); g.raw != put.raw {
				t.Fatalf("GET after PUT: %s, want %s", g.raw, put.raw)
			}

			// A main run: every rule passes; its baseline is the main run before it.
			main := run("main-1", map[string]any{"labels": map[string]string{"branch": "main"}}, true)
			if main.str("execution", "gate", "status") != "passed" || main.str("execution", "gate", "baselineTaskId") != "before-rules" ||
				len(main.get("execution", "gate", "rules").([]any)) != 6 {
				t.Fatalf("main run's gate: %s", main.raw)
			}
			wantGateRule(t, main, "minTests", true, 4, "4 tests, at least 4 required")
			wantGateRule(t, main, "maxFailed", true, 0, "0 failed tests")
			wantGateRule(t, main, "minPassRate", true, 1, "pass rate 100%")
			wantGateRule(t, main, "noNewFailures", true, 0, "no new failures against before-rules")
			wantGateRule(t, main, "noNewFlaky", true, 0, "no newly flaky tests")
			wantGateRule(t, main, "maxDurationSeconds", true, main.get("execution", "durationMs").(float64)/1000, "at most 600 s allowed")

			// A feature branch that breaks two tests: new failures against main-1 (not against the
			// feature runs), the run FAILED on its own.
			broken := run("feature-1", map[string]any{"image": failImage, "labels": map[string]string{"branch": "feature"}}, true)
			if broken.str("execution", "status") != "FAILED" || broken.str("execution", "gate", "status") != "failed" ||
				broken.str("execution", "gate", "baselineTaskId") != "main-1" {
				t.Fatalf("broken run: %s", broken.raw)
			}
			wantGateRule(t, broken, "maxFailed", false, 2, "2 failed tests, at most 0 allowed")
			wantGateRule(t, broken, "minPassRate", false, 0.5, "pass rate 50% (2 of 4 tests run passed)")
			wantGateRule(t, broken, "noNewFailures", false, 2, "2 new failures against main-1")
			wantGateRule(t, broken, "minTests", true, 4, "")
			wantGateRule(t, broken, "noNewFlaky", true, 0, "")

			// A flaky run: a newly flaky test; the run is UNSTABLE, not failed.
			flaky := run("feature-2", map[string]any{"image": flakyImage, "labels": map[string]string{"branch": "feature"}}, true)
			if flaky.str("execution", "status") != "UNSTABLE" || flaky.str("execution", "gate", "baselineTaskId") != "main-1" {
				t.Fatalf("flaky run: %s", flaky.raw)
			}
			wantGateRule(t, flaky, "noNewFlaky", false, 1, "1 newly flaky test against main-1: ")
			if !strings.Contains(gateRule(t, flaky, "noNewFlaky")["message"].(string), "checkout button opens the cart") {
				t.Errorf("noNewFlaky does not name the flaky test: %s", flaky.raw)
			}
			wantGateRule(t, flaky, "minPassRate", true, 1, "")

			// The list shows the gate too.
			list := h.do("GET", "/api/executions?projectId="+projectID+"&limit=10", key, nil)
			expect(t, list, 200, "")
			if n := strings.Count(list.raw, `"gate":{"status":"failed"`); n != 2 || !strings.Contains(list.raw, `"gate":{"status":"passed"`) {
				t.Fatalf("the list's gates (%d failed): %s", n, list.raw)
			}

			// Compare: with the baseline, with another run, refusals.
			c := h.do("GET", "/api/executions/feature-1/compare", viewer, nil)
			expect(t, c, 200, "")
			if c.str("data", "baseTaskId") != "main-1" || c.str("data", "taskId") != "feature-1" ||
				testNames(c, "newFailures") != "dashboard lists recent runs|login rejects a wrong password" ||
				testNames(c, "added") != "login rejects a wrong password" || testNames(c, "missing") != "login accepts valid credentials" ||
				testNames(c, "fixed") != "" || testNames(c, "stillFailing") != "" {
				t.Fatalf("compare with the baseline: %s", c.raw)
			}
			c = h.do("GET", "/api/executions/feature-1/compare?with=feature-2", key, nil)
			expect(t, c, 200, "")
			if c.str("data", "baseTaskId") != "feature-2" || testNames(c, "newFailures") != "dashboard lists recent runs|login rejects a wrong password" ||
				testNames(c, "missing") != "checkout button opens the cart|login accepts valid credentials" {
				t.Fatalf("compare with feature-2: %s", c.raw)
			}
			c = h.do("GET", "/api/executions/main-1/compare?with=feature-1", key, nil)
			if testNames(c, "fixed") != "dashboard lists recent runs" || testNames(c, "newFailures") != "" {
				t.Fatalf("compare main-1 with feature-1: %s", c.raw)
			}
			if c := h.do("GET", "/api/executions/before-rules/compare", key, nil); c.status != 200 || c.get("data", "baseTaskId") != nil ||
				testNames(c, "added") != "" {
				t.Fatalf("a run without a baseline: %s", c.raw)
			}
			theirRun := h.queue(theirs, map[string]any{"image": passImage, "taskId": "their-run"})
			h.waitFor(theirs, theirRun, 90*time.Second, final)
			for _, r := range []resp{h.do("GET", "/api/executions/feature-1/compare?with="+theirRun, key, nil),
				h.do("GET", "/api/executions/feature-1/compare", theirs, nil), h.do("GET", "/api/executions/nope/compare", key, nil)} {
				expectRefusal(t, r, 404, "Execution not found", "No such execution in your organization")
			}

			// The CLI: a run that passes but runs 2 of the 4 tests fails the gate (minTests): exit 4;
			// with --ignore-gate, exit 0.
			cli := verdictRun(t, h.srv.URL, keyValue, nil, "--project", projectID, "--folder", "api", "--task-id", "cli-gate",
				"--label", "branch=feature")
			if cli.code != 4 || !strings.Contains(cli.stderr, "quality gate FAILED (baseline main-1)") ||
				!strings.Contains(cli.stderr, "FAIL minTests: incomplete run: 2 tests, fewer than the 4 required") ||
				!strings.Contains(cli.stderr, "pass maxFailed: 0 failed tests") || !strings.Contains(cli.stderr, "the quality gate failed: exit 4") {
				t.Fatalf("verdict run, gate failed: exit %d\n%s", cli.code, cli.stderr)
			}
			r = h.do("GET", "/api/executions/cli-gate", key, nil)
			if r.str("execution", "status") != "PASSED" || r.str("execution", "gate", "status") != "failed" {
				t.Fatalf("the run keeps its status: %s", r.raw)
			}
			wantGateRule(t, r, "minTests", false, 2, "incomplete run: 2 tests, fewer than the 4 required")
			cli = verdictRun(t, h.srv.URL, keyValue, nil, "--project", projectID, "--folder", "api", "--task-id", "cli-ignored",
				"--label", "branch=feature", "--ignore-gate")
			if cli.code != 0 || !strings.Contains(cli.stderr, "the quality gate failed; ignored (--ignore-gate)") {
				t.Fatalf("verdict run --ignore-gate: exit %d\n%s", cli.code, cli.stderr)
			}

			// maxDurationSeconds fails a run longer than it; custom baseline labels choose the
			// baseline; the dashboard shows the gate and edits the rules.
			expect(t, h.do("PUT", gatePath, key, map[string]any{"maxDurationSeconds": 0, "noNewFailures": true,
				"baselineLabels": map[string]string{"branch": "feature"}}), 200, "")
			slow := run("slow-1", map[string]any{"labels": map[string]string{"branch": "main"}}, true)
			if len(slow.get("execution", "gate", "rules").([]any)) != 2 || slow.str("execution", "gate", "baselineTaskId") != "cli-ignored" {
				t.Fatalf("custom baseline labels: %s", slow.raw)
			}
			wantGateRule(t, slow, "maxDurationSeconds", false, slow.get("execution", "durationMs").(float64)/1000, "at most 0 s allowed")
			wantGateRule(t, slow, "noNewFailures", true, 0, "no new failures against cli-ignored")

			b := h.browser(t)
			b.get("/login")
			wantRedirect(t, "sign in", b.post("/login", url.Values{"email": {admin.email}, "password": {password}}), "/runs")
			page := b.get("/runs/feature-1")
			wantStatus(t, "run page", page, 200, `Quality gate <span class="status status-failed" data-field="gate">failed</span>`)
			for _, want := range []string{`href="/runs/main-1" id="gate-baseline"`, "2 new failures against main-1", "<td>50%</td><td>100%</td>",
				`action="/runs/feature-1/compare"`} {
				if !strings.Contains(page.body, want) {
					t.Fatalf("run page lacks %q:\n%s", want, page.body)
				}
			}
			// The project's baseline labels are now branch:feature: feature-2's baseline is feature-1,
			// and feature-1 has none.
			cmp := b.get("/runs/feature-2/compare")
			wantStatus(t, "compare page", cmp, 200, `its baseline run <a href="/runs/feature-1"`)
			if !strings.Contains(cmp.body, `Fixed <span class="muted">(1)</span>`) || !strings.Contains(cmp.body, `New failures <span class="muted">(0)</span>`) {
				t.Fatalf("compare page:\n%s", cmp.body)
			}
			wantStatus(t, "compare page without a baseline", b.get("/runs/feature-1/compare"), 200, "This run has no baseline run to compare with")
			cmp = b.get("/runs/feature-1/compare?with=main-1")
			wantStatus(t, "compare with", cmp, 200, `Compared with run <a href="/runs/main-1"`)
			if !strings.Contains(cmp.body, `New failures <span class="muted">(2)</span>`) || !strings.Contains(cmp.body, "login rejects a wrong password") {
				t.Fatalf("compare page with main-1:\n%s", cmp.body)
			}
			wantStatus(t, "compare with another organization's run", b.get("/runs/feature-1/compare?with="+theirRun), 404, "Run not found")
			proj := b.get("/projects/" + projectID)
			wantStatus(t, "project page", proj, 200, `id="gate-form"`)
			wantRedirect(t, "save gate rules", b.post("/projects/"+projectID+"/gate", url.Values{"minTests": {"3"}, "noNewFlaky": {"on"},
				"baselineLabels": {"branch:main"}}), "/projects/"+projectID)
			if g := h.do("GET", gatePath, key, nil); g.get("data", "gate", "minTests") != 3.0 || g.get("data", "gate", "noNewFlaky") != true ||
				g.get("data", "gate", "maxDurationSeconds") != nil || g.str("data", "gate", "baselineLabels", "branch") != "main" {
				t.Fatalf("rules saved by the form: %s", g.raw)
			}
			wantRedirect(t, "bad gate rules", b.post("/projects/"+projectID+"/gate", url.Values{"minTests": {"-1"}}), "/projects/"+projectID)
			wantStatus(t, "the refusal shown", b.get("/projects/"+projectID), 200, "minTests must be a whole number")
			wantStatus(t, "without CSRF", b.post("/projects/"+projectID+"/gate", url.Values{"csrf": {"forged"}, "minTests": {"9"}}), 403, "Request refused")
			if g := h.do("GET", gatePath, key, nil); g.get("data", "gate", "minTests") != 3.0 {
				t.Fatalf("a refused form changed the rules: %s", g.raw)
			}
		})
	}
}
