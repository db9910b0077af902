//go:build integration

package app_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"verdict/internal/scm/github"
	"verdict/internal/scm/scmtest"
	"verdict/internal/testenv"
)

// Source control end to end, on the real engine and the sample suites, against fake GitHub and
// GitLab APIs on 127.0.0.1 (which the operator allows with VERDICT_EGRESS_ALLOW).

const (
	sha0 = "0000000000000000000000000000000000000abc"
	sha1 = "1111111111111111111111111111111111111111"
	sha2 = "2222222222222222222222222222222222222222"
)

// scmHarness is a harness with the runner, the mail worker (the outbox) and leave to call
// 127.0.0.1, where the fakes listen.
func scmHarness(t *testing.T, dialect string) *harness {
	testenv.DockerHost(t)
	return newHarness(t, harnessOpts{dialect: dialect, realClock: true, workers: true, lease: 2 * time.Second,
		env: map[string]string{"VERDICT_EGRESS_ALLOW": "127.0.0.1"}})
}

// deliver posts a hook delivery to the hook's URL (its path on the harness) with headers.
func (h *harness) deliverHook(hookURL string, body []byte, hdr ...string) resp {
	h.t.Helper()
	path := strings.TrimPrefix(hookURL, publicURL)
	return h.do("POST", path, anon, body, hdr...)
}

func ghPullRequest(action, sha, base string, number int) []byte {
	b, _ := json.Marshal(map[string]any{"action": action, "number": number,
		"pull_request": map[string]any{"number": number, "head": map[string]any{"ref": "feature/login", "sha": sha},
			"base": map[string]any{"ref": base}},
		"repository": map[string]any{"full_name": "acme/shop"}, "sender": map[string]any{"login": "ann"}})
	return b
}

// countRuns is how many runs the organization has.
func (h *harness) countRuns(a auth) float64 {
	h.t.Helper()
	r := h.do("GET", "/api/executions", a, nil)
	expect(h.t, r, 200, "")
	n, _ := r.get("data", "total").(float64)
	return n
}

// waitStatuses waits until the fake has n statuses on sha of repo.
func waitStatuses(t *testing.T, statuses func() []scmtest.Status, n int) []scmtest.Status {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		got := statuses()
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d statuses in 60 s, want %d: %+v", len(got), n, got)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitComments waits until the fake holds a comment, and returns them.
func waitComments(t *testing.T, comments func() []scmtest.Comment) []scmtest.Comment {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if got := comments(); len(got) > 0 || time.Now().After(deadline) {
			return got
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A signed pull_request event queues a run that reports pending, then failure, to its commit,
// and writes one comment on the pull request; the next commit's run updates that comment
// instead of adding one. A bad signature is 401 and queues nothing; a delivery repeated queues
// nothing more; a branch the hook does not take, a ping and a closed request queue nothing.
func TestGitHubPullRequestReports(t *testing.T) {
	for _, d := range []string{"sqlite", "postgres"} {
		t.Run(d, func(t *testing.T) {
			h := scmHarness(t, d)
			gh := scmtest.NewGitHub(t, "ghp_verdict", "acme/shop")
			admin := h.signup("ci@example.com", "Shop Co")
			a := bearer(admin.token)
			dev := bearer(h.join(admin, "dev@example.com", "developer").token)

			// The token: checked with GitHub on save, write-only.
			expect(t, h.do("PUT", "/api/integrations/github", a, map[string]any{"token": "ghp_wrong", "apiUrl": gh.URL}), 400, "Invalid token")
			expect(t, h.do("PUT", "/api/integrations/github", dev, map[string]any{"token": "ghp_verdict", "apiUrl": gh.URL}), 403, "")
			expect(t, h.do("PUT", "/api/integrations/github", a, map[string]any{"token": "ghp_verdict", "apiUrl": "http://169.254.169.254/api/v3"}), 400, "Validation error")
			saved := h.do("PUT", "/api/integrations/github", a, map[string]any{"token": "ghp_verdict", "apiUrl": gh.URL})
			expect(t, saved, 200, "")
			got := h.do("GET", "/api/integrations/github", dev, nil)
			expect(t, got, 200, "")
			if got.get("data", "configured") != true || got.str("data", "apiUrl") != gh.URL || strings.Contains(got.raw, "ghp_verdict") {
				t.Fatalf("settings: %s", got.raw)
			}

			p := h.do("POST", "/api/projects", a, map[string]any{"name": "Shop", "image": passImage, "repository": "acme/shop"})
			expect(t, p, 201, "")
			project := p.str("project", "id")
			if p.str("project", "repository") != "acme/shop" {
				t.Fatalf("project: %s", p.raw)
			}
			expect(t, h.do("PATCH", "/api/projects/"+project, a, map[string]any{"repository": "acme/../x"}), 400, "Validation error")

			hk := h.do("POST", "/api/projects/"+project+"/hooks", dev, map[string]any{"provider": "github",
				"branches": []string{"main", "release/*"}, "baseUrl": "https://pr-{pr}.preview.example.com"})
			expect(t, hk, 201, "")
			hookURL, secret := hk.str("data", "hook", "url"), hk.str("data", "hook", "secret")
			if !strings.HasPrefix(hookURL, publicURL+"/api/hooks/github/") || len(secret) != 64 {
				t.Fatalf("hook: %s", hk.raw)
			}
			list := h.do("GET", "/api/projects/"+project+"/hooks", dev, nil)
			expect(t, list, 200, "")
			if strings.Contains(list.raw, secret) || len(list.get("data", "hooks").([]any)) != 1 {
				t.Fatalf("hooks: %s", list.raw)
			}

			// A push to main: the baseline of the pull request's runs.
			push, _ := json.Marshal(map[string]any{"ref": "refs/heads/main", "after": sha0, "deleted": false,
				"repository": map[string]any{"full_name": "acme/shop"}})
			rp := h.deliverHook(hookURL, push, "X-GitHub-Event", "push", "X-GitHub-Delivery", "d-main",
				"X-Hub-Signature-256", github.Sign(push, secret))
			expect(t, rp, 202, "")
			mainTask := rp.str("data", "taskId")
			if st := h.waitFor(a, mainTask, 90*time.Second, final).str("execution", "status"); st != "PASSED" {
				t.Fatalf("the push's run: %s", st)
			}
			if sts := waitStatuses(t, func() []scmtest.Status { return gh.Statuses("acme/shop", sha0) }, 2); sts[1].State != "success" {
				t.Fatalf("the push's statuses: %+v", sts)
			}
			expect(t, h.do("PATCH", "/api/projects/"+project, a, map[string]any{"envVars": []map[string]any{
				{"key": "FAIL_TESTS", "value": "health endpoint returns 200"}}}), 200, "")

			before := h.countRuns(a)
			body := ghPullRequest("opened", sha1, "main", 42)
			// A bad or missing signature: 401, nothing queued.
			expect(t, h.deliverHook(hookURL, body, "X-GitHub-Event", "pull_request", "X-GitHub-Delivery", "d-0",
				"X-Hub-Signature-256", github.Sign(body, "not-the-secret")), 401, "Invalid signature")
			expect(t, h.deliverHook(hookURL, body, "X-GitHub-Event", "pull_request", "X-GitHub-Delivery", "d-0"), 401, "Invalid signature")
			if n := h.countRuns(a); n != before {
				t.Fatalf("a refused delivery queued a run: %v runs, want %v", n, before)
			}

			sig := github.Sign(body, secret)
			r := h.deliverHook(hookURL, body, "X-GitHub-Event", "pull_request", "X-GitHub-Delivery", "d-1", "X-Hub-Signature-256", sig)
			expect(t, r, 202, "")
			task := r.str("data", "taskId")
			if task == "" {
				t.Fatalf("delivery: %s", r.raw)
			}
			// The same delivery again: nothing more.
			dup := h.deliverHook(hookURL, body, "X-GitHub-Event", "pull_request", "X-GitHub-Delivery", "d-1", "X-Hub-Signature-256", sig)
			expect(t, dup, 202, "")
			if dup.get("duplicate") != true {
				t.Fatalf("duplicate: %s", dup.raw)
			}
			if n := h.countRuns(a); n != before+1 {
				t.Fatalf("%v runs after a delivery and its duplicate, want %v", n, before+1)
			}

			run := h.waitFor(a, task, 90*time.Second, final)
			if run.str("execution", "status") != "FAILED" {
				t.Fatalf("run: %s", run.raw)
			}
			labels, _ := run.get("execution", "labels").(map[string]any)
			want := map[string]any{"trigger": "github", "repo": "acme/shop", "branch": "feature/login", "commit": sha1, "pr": "42"}
			for k, v := range want {
				if labels[k] != v {
					t.Fatalf("labels %v, want %v", labels, want)
				}
			}
			if run.str("execution", "baseUrl") != "https://pr-42.preview.example.com" {
				t.Fatalf("base URL: %s", run.raw)
			}
			sts := waitStatuses(t, func() []scmtest.Status { return gh.Statuses("acme/shop", sha1) }, 2)
			if len(sts) != 2 || sts[0].State != "pending" || sts[1].State != "failure" || sts[1].Context != "verdict/Shop" ||
				sts[1].TargetURL != publicURL+"/runs/"+task || !strings.HasPrefix(sts[1].Description, "FAILED: 1 of ") {
				t.Fatalf("statuses: %+v", sts)
			}
			// The comment follows the status in the same delivery.
			comments := waitComments(t, func() []scmtest.Comment { return gh.Comments("acme/shop", 42) })
			if len(comments) != 1 || !strings.Contains(comments[0].Body, "<!-- verdict:project:"+project+" -->") ||
				!strings.Contains(comments[0].Body, "FAILED") ||
				!strings.Contains(comments[0].Body, "**New failures (1)** since run "+mainTask+":\n\n- \\[chromium\\] api/health.spec.ts › health endpoint returns 200") {
				t.Fatalf("comments: %+v", comments)
			}
			for _, req := range gh.Requests() {
				if req.Header.Get("Authorization") != "Bearer ghp_verdict" && req.Header.Get("Authorization") != "Bearer ghp_wrong" ||
					req.Header.Get("X-GitHub-Api-Version") != "2022-11-28" || req.Header.Get("Accept") != "application/vnd.github+json" {
					t.Fatalf("request %s %s: headers %v", req.Method, req.Path, req.Header)
				}
			}

			// The next commit passes: its status is success, and the one comment is updated.
			expect(t, h.do("PATCH", "/api/projects/"+project, a, map[string]any{"envVars": []any{}}), 200, "")
			body2 := ghPullRequest("synchronize", sha2, "main", 42)
			r2 := h.deliverHook(hookURL, body2, "X-GitHub-Event", "pull_request", "X-GitHub-Delivery", "d-2",
				"X-Hub-Signature-256", github.Sign(body2, secret))
			expect(t, r2, 202, "")
			if h.waitFor(a, r2.str("data", "taskId"), 90*time.Second, final).str("execution", "status") != "PASSED" {
				t.Fatal("the second run did not pass")
			}
			sts2 := waitStatuses(t, func() []scmtest.Status { return gh.Statuses("acme/shop", sha2) }, 2)
			if sts2[0].State != "pending" || sts2[1].State != "success" {
				t.Fatalf("statuses of the second commit: %+v", sts2)
			}
			deadline := time.Now().Add(30 * time.Second)
			for {
				comments = gh.Comments("acme/shop", 42)
				if len(comments) == 1 && comments[0].Edits == 1 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("comments after the second run: %+v", comments)
				}
				time.Sleep(100 * time.Millisecond)
			}
			if !strings.Contains(comments[0].Body, "PASSED") || strings.Contains(comments[0].Body, "FAILED") ||
				strings.Contains(comments[0].Body, "New failures") {
				t.Fatalf("the updated comment: %s", comments[0].Body)
			}

			// Events that queue nothing: 202 with a note (a ping: 200).
			runs := h.countRuns(a)
			for name, c := range map[string]struct {
				event string
				body  []byte
			}{
				"another base branch": {"pull_request", ghPullRequest("opened", sha1, "develop", 43)},
				"closed":              {"pull_request", ghPullRequest("closed", sha1, "main", 42)},
				"an issue":            {"issues", []byte(`{"action":"opened"}`)},
			} {
				rr := h.deliverHook(hookURL, c.body, "X-GitHub-Event", c.event, "X-GitHub-Delivery", "n-"+name,
					"X-Hub-Signature-256", github.Sign(c.body, secret))
				expect(t, rr, 202, "")
				if rr.str("message") == "" || rr.get("data") != nil {
					t.Fatalf("%s: %s", name, rr.raw)
				}
			}
			ping := []byte(`{"zen":"Design for failure.","hook_id":1}`)
			expect(t, h.deliverHook(hookURL, ping, "X-GitHub-Event", "ping", "X-GitHub-Delivery", "p",
				"X-Hub-Signature-256", github.Sign(ping, secret)), 200, "")
			if n := h.countRuns(a); n != runs {
				t.Fatalf("events that match nothing queued runs: %v, want %v", n, runs)
			}

			// Another organization's hook is not this one's; a deleted hook answers 404.
			other := bearer(h.signup("other@example.com", "Other Co").token)
			hookID := hookURL[strings.LastIndex(hookURL, "/")+1:]
			expect(t, h.do("GET", "/api/projects/"+project+"/hooks", other, nil), 404, "Project not found")
			expect(t, h.do("DELETE", "/api/projects/"+project+"/hooks/"+hookID, other, nil), 404, "Hook not found")
			expect(t, h.do("DELETE", "/api/projects/"+project+"/hooks/"+hookID, a, nil), 200, "")
			expect(t, h.deliverHook(hookURL, body, "X-GitHub-Event", "pull_request", "X-GitHub-Delivery", "d-9",
				"X-Hub-Signature-256", sig), 404, "Hook not found")

			// Unlinking GitHub removes the token.
			expect(t, h.do("DELETE", "/api/integrations/github", a, nil), 200, "")
			if got := h.do("GET", "/api/integrations/github", a, nil); got.get("data", "configured") != false {
				t.Fatalf("after DELETE: %s", got.raw)
			}
		})
	}
}

// A run queued by CI with repo and commit labels reports to that commit too, and a GitLab push
// to a hook queues a run that reports to GitLab.
func TestGitLabPushAndLabelledRunsReport(t *testing.T) {
	h := scmHarness(t, "sqlite")
	gl := scmtest.NewGitLab(t, "glpat-verdict", "acme/web/shop")
	admin := h.signup("gl@example.com", "Lab Co")
	a := bearer(admin.token)
	expect(t, h.do("PUT", "/api/integrations/gitlab", a, map[string]any{"token": "glpat-verdict", "apiUrl": gl.URL}), 200, "")
	p := h.do("POST", "/api/projects", a, map[string]any{"name": "Web", "image": passImage, "repository": "acme/web/shop"})
	expect(t, p, 201, "")
	project := p.str("project", "id")
	hk := h.do("POST", "/api/projects/"+project+"/hooks", a, map[string]any{"provider": "gitlab", "events": []string{"push"}})
	expect(t, hk, 201, "")
	hookURL, secret := hk.str("data", "hook", "url"), hk.str("data", "hook", "secret")

	push, _ := json.Marshal(map[string]any{"object_kind": "push", "ref": "refs/heads/main", "after": sha1, "checkout_sha": sha1,
		"project": map[string]any{"path_with_namespace": "acme/web/shop"}})
	expect(t, h.deliverHook(hookURL, push, "X-Gitlab-Event", "Push Hook", "X-Gitlab-Event-UUID", "u-1", "X-Gitlab-Token", "wrong"), 401, "Invalid signature")
	r := h.deliverHook(hookURL, push, "X-Gitlab-Event", "Push Hook", "X-Gitlab-Event-UUID", "u-1", "X-Gitlab-Token", secret)
	expect(t, r, 202, "")
	run := h.waitFor(a, r.str("data", "taskId"), 90*time.Second, final)
	if run.str("execution", "status") != "PASSED" {
		t.Fatalf("run: %s", run.raw)
	}
	sts := waitStatuses(t, func() []scmtest.Status { return gl.Statuses("acme/web/shop", sha1) }, 2)
	if sts[0].State != "pending" || sts[1].State != "success" || sts[1].Context != "verdict/Web" {
		t.Fatalf("statuses: %+v", sts)
	}
	if dup := h.deliverHook(hookURL, push, "X-Gitlab-Event", "Push Hook", "X-Gitlab-Event-UUID", "u-1", "X-Gitlab-Token", secret); dup.get("duplicate") != true {
		t.Fatalf("duplicate: %s", dup.raw)
	}

	// A merge request's hook: its run writes one note on the merge request.
	mrHook := h.do("POST", "/api/projects/"+project+"/hooks", a, map[string]any{"provider": "gitlab", "branches": []string{"main"}})
	expect(t, mrHook, 201, "")
	mr, _ := json.Marshal(map[string]any{"object_kind": "merge_request", "project": map[string]any{"path_with_namespace": "acme/web/shop"},
		"object_attributes": map[string]any{"iid": 5, "action": "open", "source_branch": "feature/x", "target_branch": "main",
			"last_commit": map[string]any{"id": sha2}}})
	rm := h.deliverHook(mrHook.str("data", "hook", "url"), mr, "X-Gitlab-Event", "Merge Request Hook", "X-Gitlab-Event-UUID", "u-2",
		"X-Gitlab-Token", mrHook.str("data", "hook", "secret"))
	expect(t, rm, 202, "")
	h.waitFor(a, rm.str("data", "taskId"), 90*time.Second, final)
	waitStatuses(t, func() []scmtest.Status { return gl.Statuses("acme/web/shop", sha2) }, 2)
	if notes := waitComments(t, func() []scmtest.Comment { return gl.Comments("acme/web/shop", 5) }); len(notes) != 1 || !strings.Contains(notes[0].Body, "PASSED") {
		t.Fatalf("merge request notes: %+v", notes)
	}

	// A run from CI (verdict run --label repo=… --label commit=…), failing.
	const sha3 = "3333333333333333333333333333333333333333"
	task := h.queue(a, map[string]any{"projectId": project, "envVars": map[string]string{"FAIL_TESTS": "health endpoint returns 200"},
		"labels": map[string]string{"commit": sha3}})
	if h.waitFor(a, task, 90*time.Second, final).str("execution", "status") != "FAILED" {
		t.Fatal("the CI run did not fail")
	}
	sts2 := waitStatuses(t, func() []scmtest.Status { return gl.Statuses("acme/web/shop", sha3) }, 2)
	if sts2[0].State != "pending" || sts2[1].State != "failed" {
		t.Fatalf("statuses of the CI run: %+v", sts2)
	}
}

// A delivery's body is bounded: past 1 MiB it is 413, before any signature is checked.
func TestHookDeliveryBounds(t *testing.T) {
	h := newHarness(t, harnessOpts{dialect: "sqlite"})
	big := bytes.Repeat([]byte("a"), 1<<20+1)
	req, _ := http.NewRequest("POST", h.srv.URL+"/api/hooks/github/nohook", bytes.NewReader(big))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(raw), "Request body too large") {
		t.Fatalf("%d %s", res.StatusCode, raw)
	}
	expect(t, h.do("POST", "/api/hooks/github/nohook", anon, []byte(`{}`)), 404, "Hook not found")
	expect(t, h.do("POST", "/api/hooks/bitbucket/nohook", anon, []byte(`{}`)), 404, "Hook not found")
}
