//go:build integration

package app_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"net/http"
	"strings"
	"testing"
	"time"

	"verdict/internal/domain"
	"verdict/internal/report"
	"verdict/internal/run"
	"verdict/internal/run/docker"
	"verdict/internal/testenv"
)

const (
	passImage  = "verdict-examples/pass:latest"
	failImage  = "verdict-examples/fail:latest"
	flakyImage = "verdict-examples/flaky:latest"
	slowImage  = "verdict-examples/slow:latest"
)

func runHarness(t *testing.T, dialect string) *harness {
	testenv.DockerHost(t)
	return newHarness(t, harnessOpts{dialect: dialect, realClock: true, workers: true, lease: 2 * time.Second})
}

// waitFor polls a run until cond holds, failing after timeout.
func (h *harness) waitFor(a auth, taskID string, timeout time.Duration, cond func(resp) bool) resp {
	h.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		r := h.do("GET", "/api/executions/"+taskID, a, nil)
		if cond(r) {
			return r
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("run %s: condition not met in %s; last: %s", taskID, timeout, r.raw)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func final(r resp) bool {
	return domain.ExecStatus(r.str("execution", "status")).Final()
}

func (h *harness) queue(a auth, body map[string]any) string {
	h.t.Helper()
	r := h.do("POST", "/api/executions", a, body)
	expect(h.t, r, 201, "")
	if r.str("status") != "PENDING" || r.str("taskId") == "" {
		h.t.Fatalf("queue: %s", r.raw)
	}
	return r.str("taskId")
}

func TestRunEndToEnd(t *testing.T) {
	for _, d := range []string{"sqlite", "postgres"} {
		t.Run(d, func(t *testing.T) {
			h := runHarness(t, d)
			admin := h.signup("runner@example.com", "Run Co")
			key := apiKey(h.do("POST", "/api/auth/api-keys", bearer(admin.token), map[string]any{"name": "ci"}).str("apiKey"))

			p := h.do("POST", "/api/projects", key, map[string]any{"name": "Web", "image": passImage,
				"targetUrls": map[string]any{"staging": "http://127.0.0.1:9999"},
				"envVars":    []any{map[string]any{"key": "SECRET_TOKEN", "value": "s3cr3t-value-42", "secret": true}, map[string]any{"key": "PLAIN", "value": "visible"}}})
			expect(t, p, 201, "")
			if strings.Contains(p.raw, "s3cr3t-value-42") || !strings.Contains(p.raw, "********") {
				t.Fatalf("project shows its secret: %s", p.raw)
			}
			projectID := p.str("project", "id")
			expect(t, h.do("POST", "/api/projects", key, map[string]any{"name": "Second"}), 403, "Project limit reached")
			expect(t, h.do("POST", "/api/projects", key, map[string]any{"name": "Bad", "envVars": []any{map[string]any{"key": "BASE_URL", "value": "x"}}}), 400, "Reserved variable")

			task := h.queue(key, map[string]any{"projectId": projectID, "environment": "staging", "taskId": "release-1"})
			if task != "release-1" {
				t.Fatalf("taskId %q", task)
			}
			expect(t, h.do("POST", "/api/executions", key, map[string]any{"image": passImage, "taskId": "release-1"}), 409, "Task ID already in use")
			r := h.waitFor(key, task, 60*time.Second, final)
			if r.str("execution", "status") != "PASSED" || r.get("execution", "exitCode") != 0.0 ||
				r.get("execution", "summary", "total") != 4.0 || r.get("execution", "summary", "passed") != 4.0 ||
				r.str("execution", "startedAt") == "" || r.str("execution", "finishedAt") == "" {
				t.Fatalf("run: %s", r.raw)
			}
			if tests := r.get("execution", "tests").([]any); len(tests) != 4 || tests[0].(map[string]any)["name"] == "" {
				t.Fatalf("tests: %v", tests)
			}
			if strings.Contains(r.raw, "s3cr3t-value-42") {
				t.Fatal("the execution record shows a secret value")
			}
			// Report links are absolute, on the public URL; requests below go to their paths.
			htmlURL, onPublic := strings.CutPrefix(r.str("execution", "htmlReportUrl"), publicURL)
			if !onPublic || htmlURL == "" {
				t.Fatalf("no html report on %s: %s", publicURL, r.raw)
			}
			if arts := r.get("execution", "artifacts").([]any); len(arts) != 1 || arts[0] != publicURL+htmlURL {
				t.Fatalf("artifacts %v: only the folder with an index.html", arts) // not junit/ or test-results/
			}

			logs := h.do("GET", "/api/executions/"+task+"/logs", key, nil)
			expect(t, logs, 200, "")
			text := logs.str("logs")
			for _, want := range []string{"BASE_URL=http://host.docker.internal:9999", "TASK_ID=release-1", "CI=true", "FRAMEWORK_AGNOSTIC=true", "using SECRET_TOKEN=********", "4 tests, 0 failed"} {
				if !strings.Contains(text, want) {
					t.Fatalf("log lacks %q:\n%s", want, text)
				}
			}
			if strings.Contains(text, "s3cr3t-value-42") {
				t.Fatal("the log shows the secret")
			}

			// Reports: by bearer; by a signed token exchanged for a cookie and a report link that
			// carries a longer-lived token in its path (a sandboxed report's own requests send no
			// cookie); another organization, a bad or expired token and traversal 404.
			rep := h.do("GET", htmlURL, bearer(admin.token), nil)
			if rep.status != 200 || !strings.Contains(rep.header.Get("Content-Security-Policy"), "sandbox") || !strings.Contains(rep.header.Get("Content-Type"), "text/html") ||
				rep.header.Get("Access-Control-Allow-Origin") != "" {
				t.Fatalf("report by bearer: %d %v", rep.status, rep.header)
			}
			tok := h.do("GET", "/api/executions/"+task+"/report-token", key, nil)
			expect(t, tok, 200, "")
			tokURL, _ := strings.CutPrefix(tok.str("url"), publicURL)
			if !strings.HasPrefix(tokURL, htmlURL+"?token=") {
				t.Fatalf("token link %q", tok.str("url"))
			}
			jar := &cookieClient{}
			res := jar.get(t, h.srv.URL+tokURL+"&keep=1")
			runBase := "/reports/" + admin.orgID + "/" + task + "/"
			session, folder, _ := strings.Cut(strings.TrimPrefix(res.Request.URL.Path, runBase), "/")
			if res.StatusCode != 200 || res.Request.Response == nil || res.Request.Response.StatusCode != http.StatusSeeOther ||
				!strings.HasPrefix(session, "~") || runBase+folder != htmlURL || res.Request.URL.RawQuery != "keep=1" {
				t.Fatalf("token link: %d %s", res.StatusCode, res.Request.URL)
			}
			// The token was also swapped for a cookie scoped to the run's reports,
			// which opens the report's plain paths for top-level navigation.
			setCookie := res.Request.Response.Header.Get("Set-Cookie")
			if !strings.Contains(setCookie, "verdict_report="+strings.TrimPrefix(session, "~")) || !strings.Contains(setCookie, "Path="+runBase) ||
				!strings.Contains(setCookie, "HttpOnly") || !strings.Contains(setCookie, "SameSite=Lax") {
				t.Fatalf("report cookie: %q", setCookie)
			}
			if byCookie := jar.get(t, h.srv.URL+htmlURL); byCookie.StatusCode != 200 || byCookie.Header.Get("Access-Control-Allow-Origin") != "" {
				t.Fatalf("report by cookie: %d %v", byCookie.StatusCode, byCookie.Header)
			}
			for _, hdr := range []http.Header{res.Request.Response.Header, res.Header} {
				if hdr.Get("Referrer-Policy") != "no-referrer" || !strings.HasPrefix(hdr.Get("Content-Security-Policy"), "sandbox ") || hdr.Get("Cache-Control") != "private, no-store" {
					t.Fatalf("report link headers: %v", hdr)
				}
			}
			if res.Header.Get("Access-Control-Allow-Origin") != "*" {
				t.Fatalf("report by link: Access-Control-Allow-Origin %q", res.Header.Get("Access-Control-Allow-Origin"))
			}
			// The report's own files, as its page requests them: relative URLs under the link's
			// token, no cookie, readable by the sandboxed page's scripts (origin "null").
			linkBase := runBase + session + "/"
			for _, sub := range []string{"playwright-report/index.html", "test-results/results.json", "junit/results.xml"} {
				r := h.do("GET", linkBase+sub, anon, nil, "Origin", "null")
				if r.status != 200 || r.header.Get("Access-Control-Allow-Origin") != "*" || r.header.Get("Referrer-Policy") != "no-referrer" ||
					!strings.HasPrefix(r.header.Get("Content-Security-Policy"), "sandbox ") {
					t.Fatalf("GET %s by link: %d %v", sub, r.status, r.header)
				}
			}
			other := h.signup("other@example.com", "Other Co")
			expect404 := func(path string, a auth) {
				t.Helper()
				if r := h.do("GET", path, a, nil); r.status != 404 {
					t.Fatalf("GET %s: %d, want 404", path, r.status)
				}
			}
			expect404(htmlURL, bearer(other.token))
			expect404(strings.Replace(tokURL, admin.orgID, other.orgID, 1), anon)
			expect404(htmlURL+"../../../../verdict.db", bearer(admin.token))
			expect404(htmlURL+"..%2f..%2f..%2fverdict.db", bearer(admin.token))
			expect404(htmlURL, anon)
			// The link's token opens this run only (its execution ID, not its taskId), for a member
			// of its organization, unaltered, and not past its expiry.
			signer := reportSigner(t)
			now := time.Now()
			stored, err := h.app.Store.Executions().Get(context.Background(), admin.orgID, task)
			if err != nil {
				t.Fatal(err)
			}
			if r := h.do("GET", runBase+"~"+signer.SignLink(admin.orgID, stored.ID, admin.id, now)+"/"+folder, anon, nil); r.status != 200 {
				t.Fatalf("a link signed by the test: %d", r.status)
			}
			tampered := []byte(session)
			if i := len(tampered) - 10; tampered[i] == 'A' {
				tampered[i] = 'B'
			} else {
				tampered[i] = 'A'
			}
			for _, path := range []string{
				strings.Replace(linkBase, admin.orgID, other.orgID, 1) + folder,
				runBase + "~" + signer.SignLink(other.orgID, stored.ID, admin.id, now) + "/" + folder,
				runBase + "~" + signer.SignLink(admin.orgID, domain.NewID(), admin.id, now) + "/" + folder,
				runBase + "~" + signer.SignLink(admin.orgID, task, admin.id, now) + "/" + folder,
				runBase + "~" + signer.SignLink(admin.orgID, stored.ID, other.id, now) + "/" + folder,
				runBase + string(tampered) + "/" + folder,
				runBase + "~" + signer.SignLink(admin.orgID, stored.ID, admin.id, now.Add(-report.SessionTTL-time.Second)) + "/" + folder,
				runBase + "~/" + folder, runBase + "~" + folder, runBase + folder,
				// Neither kind of token passes for the other: a link is not renewed by trading it in.
				runBase + "~" + signer.Sign(admin.orgID, stored.ID, admin.id, now) + "/" + folder,
				runBase + folder + "?token=" + strings.TrimPrefix(session, "~"),
				linkBase + "../../" + task + "/" + folder, linkBase + "..%2f..%2f..%2fverdict.db",
				linkBase + "%2e%2e/%2e%2e/%2e%2e/verdict.db", linkBase + "../../../../verdict.db",
			} {
				expect404(path, anon)
			}
			// No report folder can take the place of a link's token.
			if r := h.do("PATCH", "/api/projects/"+projectID, key, map[string]any{"reportFolders": []string{"/app/" + session}}); r.status != 400 ||
				r.str("error") != "Validation error" || !strings.Contains(r.str("message"), "~") {
				t.Fatalf("a report folder named like a link's token: %d %s", r.status, r.raw)
			}

			// Tenant isolation of runs: every route answers 404 to another organization.
			for _, c := range []struct{ method, path string }{
				{"GET", "/api/executions/" + task}, {"GET", "/api/executions/" + task + "/logs"},
				{"POST", "/api/executions/" + task + "/cancel"}, {"DELETE", "/api/executions/" + task},
				{"GET", "/api/executions/" + task + "/report-token"}, {"GET", "/api/projects/" + projectID},
				{"PATCH", "/api/projects/" + projectID}, {"DELETE", "/api/projects/" + projectID},
			} {
				var body any
				if c.method == "PATCH" {
					body = map[string]any{"name": "x"}
				}
				if r := h.do(c.method, c.path, bearer(other.token), body); r.status != 404 {
					t.Fatalf("%s %s as another organization: %d %s", c.method, c.path, r.status, r.raw)
				}
			}
			if l := h.do("GET", "/api/executions", bearer(other.token), nil); l.get("data", "total") != 0.0 {
				t.Fatalf("another organization lists runs: %s", l.raw)
			}
			// The same taskId is free in another organization.
			expect(t, h.do("POST", "/api/executions", bearer(other.token), map[string]any{"image": failImage, "taskId": "release-1"}), 201, "")

			// Failing and flaky suites.
			fail := h.queue(key, map[string]any{"image": failImage})
			// A request value that replaces a project secret is masked like the secret.
			flaky := h.queue(key, map[string]any{"projectId": projectID, "image": flakyImage, "envVars": map[string]any{"SECRET_TOKEN": "override77"}})
			r = h.waitFor(key, fail, 60*time.Second, final)
			if r.str("execution", "status") != "FAILED" || r.get("execution", "summary", "failed") != 2.0 || r.get("execution", "exitCode") != 1.0 {
				t.Fatalf("fail run: %s", r.raw)
			}
			r = h.waitFor(key, flaky, 60*time.Second, final)
			if r.str("execution", "status") != "UNSTABLE" || r.get("execution", "summary", "flaky") != 1.0 {
				t.Fatalf("flaky run: %s", r.raw)
			}
			if l := h.do("GET", "/api/executions/"+flaky+"/logs", key, nil).str("logs"); strings.Contains(l, "override77") || !strings.Contains(l, "SECRET_TOKEN=********") {
				t.Fatalf("overriding secret not masked:\n%s", l)
			}
			l := h.do("GET", "/api/executions?status=FAILED,UNSTABLE&limit=1", key, nil)
			if l.get("data", "total") != 2.0 || len(l.get("data", "executions").([]any)) != 1 {
				t.Fatalf("filtered list: %s", l.raw)
			}
			// The insights' flaky tests are read from the tests' histories, which record a run
			// just after its final write.
			m := h.do("GET", "/api/metrics/"+flakyImage, key, nil)
			for deadline := time.Now().Add(10 * time.Second); len(m.get("data", "flakyTests").([]any)) == 0 && time.Now().Before(deadline); {
				time.Sleep(100 * time.Millisecond)
				m = h.do("GET", "/api/metrics/"+flakyImage, key, nil)
			}
			if m.get("data", "sampleSize") != 1.0 || len(m.get("data", "flakyTests").([]any)) != 1 {
				t.Fatalf("metrics: %s", m.raw)
			}
			ts := h.do("GET", "/api/tests-structure?projectId="+projectID, key, nil)
			if !strings.Contains(ts.raw, `"api"`) || !strings.Contains(ts.raw, `"ui"`) {
				t.Fatalf("tests-structure: %s", ts.raw)
			}

			// Delete gives the storage back; the run still counts for the period.
			before := h.do("GET", "/api/organization", key, nil).get("organization", "limits", "currentStorageUsedBytes").(float64)
			if before <= 0 {
				t.Fatal("report storage was not counted")
			}
			expect(t, h.do("DELETE", "/api/executions/"+task, key, nil), 200, "")
			expect(t, h.do("GET", "/api/executions/"+task, key, nil), 404, "Execution not found")
			expect404(htmlURL, bearer(admin.token))
			after := h.do("GET", "/api/organization", key, nil).get("organization", "limits", "currentStorageUsedBytes").(float64)
			if after >= before {
				t.Fatalf("storage %v → %v after delete", before, after)
			}
			if u := h.do("GET", "/api/organization/usage", key, nil); u.get("usage", "testRuns", "used") != 3.0 {
				t.Fatalf("usage after delete: %s", u.raw)
			}
		})
	}
}

// reportSigner signs report tokens as the harness's Verdict does: the key is derived from its
// JWT_SECRET as internal/app derives it.
func reportSigner(t *testing.T) *report.Signer {
	t.Helper()
	m := hmac.New(sha256.New, []byte("test-secret-test-secret-test-secret-0123"))
	m.Write([]byte("verdict report links"))
	s, err := report.NewSigner(m.Sum(nil))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// cookieClient follows redirects and keeps cookies, like a browser.
type cookieClient struct{ c *http.Client }

func (c *cookieClient) get(t *testing.T, url string) *http.Response {
	t.Helper()
	if c.c == nil {
		jar := newJar()
		c.c = &http.Client{Jar: jar}
	}
	res, err := c.c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res
}

func TestRunCancelTimeoutMissingImage(t *testing.T) {
	h := runHarness(t, "sqlite")
	admin := h.signup("cancel@example.com", "Cancel Co")
	// Enterprise-sized slots are not needed: the runs go one after another on the free plan.
	a := bearer(admin.token)

	missing := h.queue(a, map[string]any{"image": "verdict-examples/does-not-exist:latest"})
	r := h.waitFor(a, missing, 30*time.Second, final)
	if r.str("execution", "status") != "ERROR" || !strings.Contains(r.str("execution", "error"), "not found") {
		t.Fatalf("missing image: %s", r.raw)
	}

	sleeper := h.queue(a, map[string]any{"image": slowImage, "folder": "sleep"})
	h.waitFor(a, sleeper, 30*time.Second, func(r resp) bool { return r.str("execution", "status") == "RUNNING" })
	expect(t, h.do("POST", "/api/executions/"+sleeper+"/cancel", a, nil), 200, "")
	r = h.waitFor(a, sleeper, 30*time.Second, final)
	if r.str("execution", "status") != "CANCELLED" {
		t.Fatalf("cancel: %s", r.raw)
	}
	expect(t, h.do("POST", "/api/executions/"+sleeper+"/cancel", a, nil), 409, "Execution already finished")

	timed := h.queue(a, map[string]any{"image": slowImage, "folder": "sleep", "timeoutSeconds": 2})
	r = h.waitFor(a, timed, 60*time.Second, final)
	if r.str("execution", "status") != "ERROR" || !strings.Contains(r.str("execution", "error"), "timed out") {
		t.Fatalf("timeout: %s", r.raw)
	}
	// No container of these runs is left behind.
	b, err := docker.New("", docker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	left, err := b.List(context.Background(), map[string]string{run.LabelOrg: admin.orgID})
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Fatalf("%d containers left behind", len(left))
	}

}

func TestConcurrencySlots(t *testing.T) {
	h := runHarness(t, "sqlite")
	admin := h.signup("slots@example.com", "Slot Co")
	a := bearer(admin.token)
	body := map[string]any{"image": slowImage, "envVars": map[string]any{"LINES": "8", "INTERVAL_MS": "100"}}
	first := h.queue(a, body)
	h.waitFor(a, first, 30*time.Second, func(r resp) bool { return r.str("execution", "status") == "RUNNING" })
	second := h.do("POST", "/api/executions", a, body)
	expect(t, second, 201, "")
	if reason := second.str("execution", "queueReason"); reason != "waiting for a free run slot: 1 of 1 in use" {
		t.Fatalf("queueReason %q", reason)
	}
	r1 := h.waitFor(a, first, 60*time.Second, final)
	r2 := h.waitFor(a, second.str("taskId"), 60*time.Second, final)
	end1, _ := time.Parse(time.RFC3339Nano, r1.str("execution", "finishedAt"))
	start2, _ := time.Parse(time.RFC3339Nano, r2.str("execution", "startedAt"))
	if start2.Before(end1) {
		t.Fatalf("a one-slot organization ran two at once: first ended %v, second started %v", end1, start2)
	}
	if r1.str("execution", "status") != "PASSED" || r2.str("execution", "status") != "PASSED" {
		t.Fatalf("slot runs: %s / %s", r1.raw, r2.raw)
	}
	// Live logs were stored in order.
	text := h.do("GET", "/api/executions/"+first+"/logs", a, nil).str("logs")
	if i1, i8 := strings.Index(text, "line 1 of 8"), strings.Index(text, "line 8 of 8"); i1 < 0 || i8 < i1 {
		t.Fatalf("log order:\n%s", text)
	}
}

// TestLeaseExpiry plays a runner that claimed a run, started its container and died: the
// reaper must end the run ERROR, and leave the container to its runner: the server, which runs
// no suites, opened no engine, and the runner's engine is not its own (a remote runner removes
// what an earlier life of it left when it starts again).
func TestLeaseExpiry(t *testing.T) {
	testenv.DockerHost(t)
	// No embedded runner: the run is claimed by the "dead" runner below; the reaper runs.
	h := newHarness(t, harnessOpts{dialect: "sqlite", realClock: true, workers: true, env: map[string]string{"VERDICT_RUNNER": "none"}})
	admin := h.signup("lease@example.com", "Lease Co")
	ctx := context.Background()
	st := h.app.Store
	b, err := docker.New("", docker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	e := &domain.Execution{ID: domain.NewID(), OrganizationID: admin.orgID, TaskID: "orphan", Image: slowImage,
		Status: domain.ExecPending, QueuedAt: time.Now().UTC(), TriggeredBy: admin.id}
	// The container starts before the run is claimed: starting it can take longer than the
	// one-second lease, and the reaper may end the run the moment the lease runs out.
	id, err := b.Start(ctx, run.Spec{Name: "verdict-test-" + e.ID, Image: slowImage, Args: []string{"sleep"},
		Labels: map[string]string{run.LabelManaged: "true", run.LabelOrg: admin.orgID, run.LabelTask: "orphan"}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = b.Remove(context.Background(), id) }() // the dead runner's to remove: the test's
	if err := st.Executions().Create(ctx, e); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	c, err := st.Executions().Claim(ctx, "dead-runner", "", "", now, now.Add(time.Second), func(domain.Plan) int { return 5 })
	if err != nil || c == nil || c.TaskID != "orphan" {
		t.Fatalf("claim: %+v %v", c, err)
	}
	if err := st.Executions().SetContainer(ctx, e.ID, id); err != nil {
		t.Fatal(err)
	}
	r := h.waitFor(bearer(admin.token), "orphan", 30*time.Second, final)
	if r.str("execution", "status") != "ERROR" || !strings.Contains(r.str("execution", "error"), "lease") {
		t.Fatalf("orphan: %s", r.raw)
	}
	// Ten reaper rounds later the container is still there: the server touched no engine.
	time.Sleep(2 * time.Second)
	left, err := b.List(ctx, map[string]string{run.LabelTask: "orphan", run.LabelOrg: admin.orgID})
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 1 || left[0].ID != id {
		t.Fatalf("the lost run's container, on its runner's engine, was touched by the server: %+v", left)
	}
}

func TestRunLimit(t *testing.T) {
	h := newHarness(t, harnessOpts{dialect: "sqlite"}) // no runner: the runs stay queued
	admin := h.signup("limit@example.com", "Limit Co")
	a := bearer(admin.token)
	for i := 0; i < 100; i++ {
		expect(t, h.do("POST", "/api/executions", a, map[string]any{"image": passImage}), 201, "")
	}
	viewer := h.join(admin, "viewer@example.com", "viewer")
	expect(t, h.do("POST", "/api/executions", bearer(viewer.token), map[string]any{"image": passImage}), 403, "Forbidden")
	r := h.do("POST", "/api/execution-request", a, map[string]any{"image": passImage})
	expect(t, r, 403, "Test run limit exceeded")
	if r.get("usage", "used") != 100.0 || r.get("usage", "limit") != 100.0 || r.get("usage", "percentUsed") != 100.0 {
		t.Fatalf("usage: %s", r.raw)
	}
	u := h.do("GET", "/api/organization/usage", a, nil)
	if u.get("usage", "testRuns", "used") != 100.0 || !strings.Contains(u.raw, `"critical"`) {
		t.Fatalf("usage: %s", u.raw)
	}
	// Next month the count starts again.
	h.clock.Advance(31 * 24 * time.Hour)
	login := h.do("POST", "/api/auth/login", anon, map[string]any{"email": admin.email, "password": password})
	expect(t, h.do("POST", "/api/executions", bearer(login.str("token")), map[string]any{"image": passImage}), 201, "")
	// Pending runs can be cancelled at once.
	first := h.do("GET", "/api/executions?limit=1", bearer(login.str("token")), nil).get("data", "executions").([]any)[0].(map[string]any)["taskId"].(string)
	c := h.do("POST", "/api/executions/"+first+"/cancel", bearer(login.str("token")), nil)
	expect(t, c, 200, "")
	if c.str("execution", "status") != "CANCELLED" {
		t.Fatalf("pending cancel: %s", c.raw)
	}
	for _, bad := range []map[string]any{
		{"image": passImage, "taskId": "bad id!"}, {"image": passImage, "folder": "../etc"},
		{"image": passImage, "envVars": map[string]any{"TASK_ID": "x"}}, {"image": passImage, "baseUrl": "ftp://x"},
		{"image": passImage, "timeoutSeconds": -1}, {},
	} {
		if r := h.do("POST", "/api/executions", bearer(login.str("token")), bad); r.status != 400 {
			t.Fatalf("%v: %d %s", bad, r.status, r.raw)
		}
	}
}
