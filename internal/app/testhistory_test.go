//go:build integration

package app_test

import (
	"database/sql"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"verdict/internal/store"
	"verdict/internal/testenv"
)

// Tests' histories end to end, with the real engine and the sample suites, on both databases:
// every finished run's results recorded; a test's history, figures and flake rate; the list's
// search and filters; quarantine turning a FAILED run into a PASSED one, listed in the run's
// quarantinedFailures, and back to FAILED once it is lifted; roles, validation and another
// organization (404).
func TestTestHistoryAndQuarantine(t *testing.T) {
	for _, d := range []string{"sqlite", "postgres"} {
		t.Run(d, func(t *testing.T) {
			h := runHarness(t, d)
			admin := h.signup("qa@example.com", "History Co")
			a := bearer(admin.token)
			viewer := bearer(h.join(admin, "viewer@example.com", "viewer").token)
			p := h.do("POST", "/api/projects", a, map[string]any{"name": "Web", "image": passImage})
			expect(t, p, 201, "")
			project := p.str("project", "id")

			run := func(image string, labels map[string]string, env map[string]string) resp {
				t.Helper()
				body := map[string]any{"projectId": project, "image": image, "labels": labels}
				if env != nil {
					body["envVars"] = env
				}
				r := h.waitFor(a, h.queue(a, body), 90*time.Second, final)
				h.recorded(admin.orgID, r.str("execution", "taskId"))
				// The run's view says so too.
				if v := h.do("GET", "/api/executions/"+r.str("execution", "taskId"), a, nil); v.get("execution", "testsRecorded") != true {
					t.Fatalf("a recorded run's view: %s", v.raw)
				}
				return r
			}
			main1 := map[string]string{"branch": "main", "commit": "c1"}
			// health flips pass → fail → pass on one commit: two flake events, flaky.
			run(passImage, main1, nil)
			run(passImage, main1, map[string]string{"FAIL_TESTS": "health endpoint returns 200"})
			last := run(passImage, main1, nil)
			if last.str("execution", "status") != "PASSED" {
				t.Fatalf("run: %s", last.raw)
			}

			list := h.do("GET", "/api/tests?projectId="+project+"&q=HEALTH", a, nil)
			expect(t, list, 200, "")
			if list.get("data", "total") != 1.0 {
				t.Fatalf("search: %s", list.raw)
			}
			health := list.get("data", "tests").([]any)[0].(map[string]any)
			if health["name"] != "health endpoint returns 200" || health["suite"] != "[chromium] api/health.spec.ts" ||
				health["runs"] != 3.0 || health["lastStatus"] != "passed" || health["flaky"] != true ||
				health["projectId"] != project || health["quarantine"] != nil {
				t.Fatalf("the test: %v", health)
			}
			if pr := health["passRate"].(float64); pr < 0.66 || pr > 0.67 {
				t.Fatalf("pass rate %v, want 2/3", pr)
			}
			healthID := health["id"].(string)
			flaky := h.do("GET", "/api/tests?projectId="+project+"&flaky=true", viewer, nil)
			expect(t, flaky, 200, "")
			if flaky.get("data", "total") != 1.0 {
				t.Fatalf("flaky filter: %s", flaky.raw)
			}
			all := h.do("GET", "/api/tests?projectId="+project, viewer, nil)
			if all.get("data", "total") != 4.0 {
				t.Fatalf("the project's tests: %s", all.raw)
			}

			detail := h.do("GET", "/api/tests/"+healthID, viewer, nil)
			expect(t, detail, 200, "")
			hist := detail.get("data", "history").([]any)
			if len(hist) != 3 {
				t.Fatalf("history: %s", detail.raw)
			}
			middle := hist[1].(map[string]any)
			if middle["status"] != "failed" || middle["message"] != "Error: failed on request (FAIL_TESTS)" ||
				len(middle["signature"].(string)) != 16 || middle["branch"] != "main" || middle["commit"] != "c1" {
				t.Fatalf("the failed result: %v", middle)
			}
			if detail.str("data", "stats", "lastFailedTaskId") != middle["taskId"] ||
				detail.str("data", "stats", "lastPassedTaskId") != last.str("execution", "taskId") ||
				detail.get("data", "stats", "flakeEvents") != 2.0 || detail.get("data", "stats", "medianMs") == nil {
				t.Fatalf("stats: %s", detail.raw)
			}

			// Quarantine: the fail image fails auth and dashboard; both quarantined, the run passes.
			failed := run(failImage, map[string]string{"branch": "main", "commit": "c2"}, nil)
			if failed.str("execution", "status") != "FAILED" || len(failed.get("execution", "quarantinedFailures").([]any)) != 0 {
				t.Fatalf("a failing run: %s", failed.raw)
			}
			ids := map[string]string{}
			for _, name := range []string{"login rejects a wrong password", "dashboard lists recent runs"} {
				r := h.do("GET", "/api/tests?projectId="+project+"&q="+url.QueryEscape(name), a, nil)
				if r.get("data", "total") != 1.0 {
					t.Fatalf("%s: %s", name, r.raw)
				}
				ids[name] = r.get("data", "tests").([]any)[0].(map[string]any)["id"].(string)
			}
			until := time.Now().UTC().Add(72 * time.Hour).Format(time.RFC3339)
			auth := ids["login rejects a wrong password"]
			expect(t, h.do("PUT", "/api/tests/"+auth+"/quarantine", viewer, map[string]any{"reason": "x", "until": until}), 403, "Forbidden")
			expect(t, h.do("PUT", "/api/tests/"+auth+"/quarantine", a, map[string]any{"reason": "", "until": until}), 400, "Validation error")
			expect(t, h.do("PUT", "/api/tests/"+auth+"/quarantine", a, map[string]any{"reason": "x",
				"until": time.Now().UTC().AddDate(0, 0, 91).Format(time.RFC3339)}), 400, "Validation error")
			expect(t, h.do("PUT", "/api/tests/"+auth+"/quarantine", a, map[string]any{"reason": "x", "until": "tomorrow"}), 400, "Validation error")
			q := h.do("PUT", "/api/tests/"+auth+"/quarantine", a, map[string]any{"reason": "Staging DB is slow; ENG-1", "until": until})
			expect(t, q, 200, "")
			if q.str("data", "test", "quarantine", "reason") != "Staging DB is slow; ENG-1" || q.str("data", "test", "quarantine", "by") != admin.id {
				t.Fatalf("quarantine: %s", q.raw)
			}
			// One of two failures quarantined: still FAILED, and it says which did not count.
			partly := run(failImage, map[string]string{"branch": "main", "commit": "c2"}, nil)
			qf := partly.get("execution", "quarantinedFailures").([]any)
			if partly.str("execution", "status") != "FAILED" || len(qf) != 1 ||
				qf[0].(map[string]any)["test"].(map[string]any)["id"] != auth {
				t.Fatalf("one failure quarantined: %s", partly.raw)
			}
			expect(t, h.do("PUT", "/api/tests/"+ids["dashboard lists recent runs"]+"/quarantine", a,
				map[string]any{"reason": "flaky locator", "until": until}), 200, "")
			passed := run(failImage, map[string]string{"branch": "main", "commit": "c2"}, nil)
			if passed.str("execution", "status") != "PASSED" || len(passed.get("execution", "quarantinedFailures").([]any)) != 2 ||
				passed.get("execution", "summary", "failed") != 2.0 {
				t.Fatalf("every failure quarantined: %s", passed.raw)
			}
			// Its tests are still recorded as failed.
			d2 := h.do("GET", "/api/tests/"+auth, a, nil)
			if d2.get("data", "history").([]any)[0].(map[string]any)["status"] != "failed" || d2.get("data", "test", "quarantine") == nil {
				t.Fatalf("a quarantined test's history: %s", d2.raw)
			}
			qlist := h.do("GET", "/api/tests?projectId="+project+"&quarantined=true", a, nil)
			if qlist.get("data", "total") != 2.0 {
				t.Fatalf("quarantined filter: %s", qlist.raw)
			}
			audit, err := h.app.Store.Audit().List(t.Context(), admin.orgID, 20)
			if err != nil {
				t.Fatal(err)
			}
			var actions []string
			for _, e := range audit {
				actions = append(actions, e.Action)
			}
			if !strings.Contains(strings.Join(actions, ","), "test.quarantined") {
				t.Fatalf("audit: %v", actions)
			}

			// Lifted: the next run fails again.
			expect(t, h.do("DELETE", "/api/tests/"+auth+"/quarantine", a, nil), 200, "")
			again := run(failImage, map[string]string{"branch": "main", "commit": "c2"}, nil)
			if again.str("execution", "status") != "FAILED" {
				t.Fatalf("after the quarantine is lifted: %s", again.raw)
			}

			// Another organization sees none of it.
			other := bearer(h.signup("other@example.com", "Other Co").token)
			expect(t, h.do("GET", "/api/tests/"+healthID, other, nil), 404, "Test not found")
			expect(t, h.do("PUT", "/api/tests/"+healthID+"/quarantine", other, map[string]any{"reason": "x", "until": until}), 404, "Test not found")
			expect(t, h.do("DELETE", "/api/tests/"+healthID+"/quarantine", other, nil), 404, "Test not found")
			expect(t, h.do("GET", "/api/tests?projectId="+project, other, nil), 404, "Project not found")
			if r := h.do("GET", "/api/tests", other, nil); r.get("data", "total") != 0.0 {
				t.Fatalf("another organization's list: %s", r.raw)
			}
			expect(t, h.do("GET", "/api/tests?flaky=yes", a, nil), 400, "Validation error")
			expect(t, h.do("GET", "/api/tests?limit=500", a, nil), 400, "Validation error")
			expect(t, h.do("GET", "/api/tests?status=broken", a, nil), 400, "Validation error")
		})
	}
}

// recorded waits until the organization's finished run taskID is in its tests' histories: a
// run's final status is visible a moment before its results are recorded.
func (h *harness) recorded(orgID, taskID string) {
	h.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		e, err := h.app.Store.Executions().Get(h.t.Context(), orgID, taskID)
		if err == nil && e.TestsRecorded {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("run %s not recorded in 30 s (%v)", taskID, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A run whose recording the post-run chain missed (here: runs marked unrecorded again, as
// runs from before histories were kept are) is recorded by the catch-up, once.
func TestTestHistoryCatchUp(t *testing.T) {
	testenv.DockerHost(t)
	dataDir := t.TempDir()
	h := newHarness(t, harnessOpts{dialect: "sqlite", realClock: true, workers: true, lease: 2 * time.Second,
		env: map[string]string{"VERDICT_DATA_DIR": dataDir}})
	db, err := sql.Open("sqlite", filepath.Join(dataDir, "verdict.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	admin := h.signup("qa@example.com", "Catch Co")
	a := bearer(admin.token)
	task := h.queue(a, map[string]any{"image": failImage})
	h.waitFor(a, task, 90*time.Second, final)
	h.recorded(admin.orgID, task)
	ctx := t.Context()
	if _, err := db.ExecContext(ctx, `DELETE FROM test_results`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `UPDATE tests SET runs = 0, recent = '[]'`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `UPDATE executions SET tests_recorded = 0`); err != nil {
		t.Fatal(err)
	}
	n, err := h.app.CatchUpHistories(ctx)
	if err != nil || n != 1 {
		t.Fatalf("catch-up: %d, %v", n, err)
	}
	if n, err := h.app.CatchUpHistories(ctx); err != nil || n != 0 {
		t.Fatalf("a second catch-up: %d, %v", n, err)
	}
	tests, total, err := h.app.Store.Tests().List(ctx, admin.orgID, store.TestFilter{Limit: 10})
	if err != nil || total != 4 || tests[0].Runs != 1 {
		t.Fatalf("after the catch-up: %d tests, %v, %+v", total, err, tests)
	}
}

// The dashboard's tests pages: the list, a test's page with its strip and chart, quarantine
// through its form, the run page's links to its tests and its quarantined failures; another
// organization's test is a 404 page.
func TestWebTestHistory(t *testing.T) {
	h := runHarness(t, "sqlite")
	admin := h.signup("qa@example.com", "Pages Co")
	a := bearer(admin.token)
	p := h.do("POST", "/api/projects", a, map[string]any{"name": "Web", "image": failImage})
	expect(t, p, 201, "")
	project := p.str("project", "id")
	first := h.queue(a, map[string]any{"projectId": project})
	h.waitFor(a, first, 90*time.Second, final)
	h.recorded(admin.orgID, first)

	b := h.browser(t)
	b.get("/login")
	wantRedirect(t, "login", b.post("/login", url.Values{"email": {"qa@example.com"}, "password": {password}}), "/runs")
	list := b.get("/tests?project=" + project)
	wantStatus(t, "tests page", list, 200, "login rejects a wrong password")
	r := h.do("GET", "/api/tests?projectId="+project+"&q=login", a, nil)
	id := r.get("data", "tests").([]any)[0].(map[string]any)["id"].(string)
	if !strings.Contains(list.body, `href="/tests/`+id+`"`) {
		t.Fatalf("the list does not link the test: %s", list.body)
	}
	page := b.get("/tests/" + id)
	wantStatus(t, "test page", page, 200, `class="strip-failed"`)
	if !strings.Contains(page.body, `class="dbar dbar-failed"`) || !strings.Contains(page.body, `href="/runs/`+first+`"`) {
		t.Fatalf("test page: %s", page.body)
	}
	until := time.Now().UTC().AddDate(0, 0, 10).Format("2006-01-02")
	wantRedirect(t, "quarantine", b.post("/tests/"+id+"/quarantine", url.Values{"reason": {"known bug ENG-9"}, "until": {until}}), "/tests/"+id)
	wantStatus(t, "quarantined test page", b.get("/tests/"+id), 200, "known bug ENG-9")
	too := time.Now().UTC().AddDate(0, 0, 200).Format("2006-01-02")
	wantRedirect(t, "a quarantine too long is capped to 90 days", b.post("/tests/"+id+"/quarantine",
		url.Values{"reason": {"long"}, "until": {too}}), "/tests/"+id)
	if q := h.do("GET", "/api/tests/"+id, a, nil); q.str("data", "test", "quarantine", "reason") != "long" {
		t.Fatalf("capped quarantine: %s", q.raw)
	}

	second := h.queue(a, map[string]any{"projectId": project})
	h.waitFor(a, second, 90*time.Second, final)
	h.recorded(admin.orgID, second)
	run := b.get("/runs/" + second)
	wantStatus(t, "run page", run, 200, `id="quarantined-failures"`)
	if !strings.Contains(run.body, `<a href="/tests/`+id+`">login rejects a wrong password</a>`) {
		t.Fatalf("the run page does not link its tests: %s", run.body)
	}
	wantRedirect(t, "lift", b.post("/tests/"+id+"/unquarantine", nil), "/tests/"+id)

	// A viewer's forged form and another organization.
	v := h.browser(t)
	h.join(admin, "viewer@example.com", "viewer")
	v.get("/login")
	v.post("/login", url.Values{"email": {"viewer@example.com"}, "password": {password}})
	v.get("/tests/" + id)
	wantStatus(t, "a viewer's quarantine", v.post("/tests/"+id+"/quarantine", url.Values{"reason": {"x"}, "until": {until}}), 403, "")
	o := h.browser(t)
	h.signup("other@example.com", "Other Co")
	o.get("/login")
	o.post("/login", url.Values{"email": {"other@example.com"}, "password": {password}})
	wantStatus(t, "another organization's test", o.get("/tests/"+id), 404, "")
}

// A project's automatic quarantine rule quarantines its tests once their flake rate reaches
// it, from the run that makes them flaky on; off by default; roles and validation.
func TestAutoQuarantine(t *testing.T) {
	for _, d := range []string{"sqlite", "postgres"} {
		t.Run(d, func(t *testing.T) {
			h := runHarness(t, d)
			admin := h.signup("qa@example.com", "Auto Co")
			a := bearer(admin.token)
			viewer := bearer(h.join(admin, "viewer@example.com", "viewer").token)
			p := h.do("POST", "/api/projects", a, map[string]any{"name": "Web", "image": passImage})
			project := p.str("project", "id")
			rule := "/api/projects/" + project + "/auto-quarantine"
			if r := h.do("GET", rule, viewer, nil); r.status != 200 || r.get("data", "flakeRate") != nil || r.get("data", "days") != 14.0 {
				t.Fatalf("the rule is off by default: %s", r.raw)
			}
			expect(t, h.do("PUT", rule, viewer, map[string]any{"flakeRate": 0.5}), 403, "Forbidden")
			expect(t, h.do("PUT", rule, a, map[string]any{"flakeRate": 1.5}), 400, "Validation error")
			expect(t, h.do("PUT", rule, a, map[string]any{"flakeRate": 0}), 400, "Validation error")
			expect(t, h.do("PUT", rule, a, map[string]any{"flakeRate": 0.5}), 200, "")
			other := bearer(h.signup("other@example.com", "Other Co").token)
			expect(t, h.do("GET", rule, other, nil), 404, "Project not found")
			expect(t, h.do("PUT", rule, other, map[string]any{"flakeRate": 0.5}), 404, "Project not found")

			labels := map[string]string{"branch": "main", "commit": "c1"}
			for _, env := range []map[string]string{nil, {"FAIL_TESTS": "health endpoint returns 200"}, nil} {
				body := map[string]any{"projectId": project, "labels": labels}
				if env != nil {
					body["envVars"] = env
				}
				task := h.queue(a, body)
				h.waitFor(a, task, 90*time.Second, final)
				h.recorded(admin.orgID, task)
			}
			// The rule is applied right after the run is recorded.
			var q resp
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				q = h.do("GET", "/api/tests?projectId="+project+"&quarantined=true", a, nil)
				if q.get("data", "total") == 1.0 || time.Now().After(deadline) {
					break
				}
			}
			if q.get("data", "total") != 1.0 {
				t.Fatalf("auto-quarantined: %s", q.raw)
			}
			test := q.get("data", "tests").([]any)[0].(map[string]any)
			qq := test["quarantine"].(map[string]any)
			if test["name"] != "health endpoint returns 200" || qq["by"] != "verdict" ||
				!strings.HasPrefix(qq["reason"].(string), "Automatic: flake rate 67%") {
				t.Fatalf("the automatic quarantine: %v", test)
			}
			// The next run that fails it passes.
			r := h.waitFor(a, h.queue(a, map[string]any{"projectId": project, "labels": labels,
				"envVars": map[string]string{"FAIL_TESTS": "health endpoint returns 200"}}), 90*time.Second, final)
			if r.str("execution", "status") != "PASSED" || len(r.get("execution", "quarantinedFailures").([]any)) != 1 {
				t.Fatalf("a run failing only the auto-quarantined test: %s", r.raw)
			}
			expect(t, h.do("PUT", rule, a, map[string]any{"flakeRate": nil}), 200, "")
			if r := h.do("GET", rule, a, nil); r.get("data", "flakeRate") != nil {
				t.Fatalf("the rule turned off: %s", r.raw)
			}
		})
	}
}
