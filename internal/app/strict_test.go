//go:build integration

package app_test

import (
	"strings"
	"testing"
	"time"
)

// TestStrictBodies: a field a route does not take, at the top or nested, is refused with 400
// "Invalid request" naming it, and nothing is done; maps of the client's own names (a run's
// envVars) stay open.
func TestStrictBodies(t *testing.T) {
	forEachDB(t, func(t *testing.T, h *harness) {
		admin := h.signup("strict@example.com", "Strict Co")
		a := bearer(admin.token)
		p := h.do("POST", "/api/projects", a, map[string]any{"name": "Suite", "image": passImage})
		expect(t, p, 201, "")
		project := "/api/projects/" + p.str("project", "id")
		_, invite := h.invite(admin, "guest@example.com", "viewer")

		for _, c := range []struct {
			method, path string
			body         map[string]any
			field        string
		}{
			{"POST", "/api/executions", map[string]any{"image": passImage, "base_url": "http://x.test"}, "base_url"},
			{"POST", "/api/executions", map[string]any{"image": passImage, "envVariables": map[string]any{"A": "b"}}, "envVariables"},
			{"POST", "/api/executions", map[string]any{"image": passImage, "Command": "npm test"}, "Command"},
			{"POST", "/api/execution-request", map[string]any{"image": passImage, "timeout": 60}, "timeout"},
			{"POST", "/api/projects", map[string]any{"name": "Other", "targetUrls": map[string]any{"staging": "http://s.test", "qa": "http://q.test"}}, "targetUrls.qa"},
			{"POST", "/api/projects", map[string]any{"name": "Other", "envVars": []any{map[string]any{"key": "A", "value": "b"}, map[string]any{"key": "B", "value": "c", "secrett": true}}}, "envVars[1].secrett"},
			{"POST", "/api/projects", map[string]any{"name": "Other", "command": "npm test"}, "command"},
			{"PATCH", project, map[string]any{"timeoutSecs": 60}, "timeoutSecs"},
			{"PATCH", project, map[string]any{"targetUrls": map[string]any{"Staging": "http://s.test"}}, "targetUrls.Staging"},
			{"PATCH", "/api/organization", map[string]any{"name": "Strict Co 2", "plan": "enterprise"}, "plan"},
			{"PATCH", "/api/organization/ai-analysis", map[string]any{"enabled": true, "Enabled": false}, "Enabled"},
			{"PATCH", "/api/organization/features", map[string]any{"aiFeatures": map[string]any{"automationPlanner": true, "autoHeal": true}}, "aiFeatures.autoHeal"},
			{"PATCH", "/api/users/" + admin.id + "/role", map[string]any{"role": "admin", "userId": admin.id}, "userId"},
			{"PATCH", "/api/users/" + admin.id + "/status", map[string]any{"status": "active", "reason": "x"}, "reason"},
			{"POST", "/api/auth/api-keys", map[string]any{"name": "ci", "scopes": []any{"all"}}, "scopes"},
			{"POST", "/api/invitations", map[string]any{"email": "new@example.com", "role": "viewer", "message": "hi"}, "message"},
			{"POST", "/api/invitations/accept", map[string]any{"token": invite, "tokne": invite}, "tokne"},
			{"POST", "/api/billing/checkout", map[string]any{"planId": "team", "coupon": "FREE"}, "coupon"},
			{"PUT", "/api/integrations/linear", map[string]any{"apiKey": "lin_api_x", "teamId": "t1", "team_id": "t1"}, "team_id"},
			{"PUT", "/api/integrations/monday", map[string]any{"apiKey": "x", "boardId": "1", "columnValues": map[string]any{}}, "columnValues"},
			{"POST", "/api/linear/issues", map[string]any{"taskId": "run-1", "priority": 1}, "priority"},
			{"POST", "/api/monday/items", map[string]any{"taskId": "run-1", "itemName": "x"}, "itemName"},
			{"POST", "/api/auth/signup", map[string]any{"email": "new@example.com", "password": password, "name": "N", "organizationName": "New Co", "role": "admin"}, "role"},
			{"POST", "/api/auth/login", map[string]any{"email": admin.email, "password": password, "rememberMe": true}, "rememberMe"},
			{"POST", "/api/test-cases", map[string]any{"projectId": p.str("project", "id"), "title": "t", "section": "s"}, "section"},
			{"POST", "/api/test-cases", map[string]any{"projectId": p.str("project", "id"), "title": "t", "steps": []any{map[string]any{"action": "a", "expectedResult": "b"}}}, "steps[0].expectedResult"},
		} {
			r := h.do(c.method, c.path, a, c.body)
			expect(t, r, 400, "Invalid request")
			if want := `Unknown field "` + c.field + `"`; r.str("message") != want {
				t.Errorf("%s %s: message %q, want %q", c.method, c.path, r.str("message"), want)
			}
		}

		// Nothing was done.
		if r := h.do("GET", "/api/executions", a, nil); r.get("data", "total") != 0.0 {
			t.Fatalf("a refused body queued a run: %s", r.raw)
		}
		if r := h.do("GET", "/api/projects", a, nil); len(r.get("projects").([]any)) != 1 {
			t.Fatalf("a refused body created a project: %s", r.raw)
		}
		if r := h.do("GET", "/api/test-cases?projectId="+p.str("project", "id"), a, nil); r.get("data", "total") != 0.0 {
			t.Fatalf("a refused body created a test case: %s", r.raw)
		}
		if r := h.do("GET", "/api/organization", a, nil); r.str("organization", "name") != "Strict Co" || r.str("organization", "plan") != "free" {
			t.Fatalf("a refused body changed the organization: %s", r.raw)
		}
		expect(t, h.do("POST", "/api/auth/login", anon, map[string]any{"email": "new@example.com", "password": password}), 401, "Invalid credentials")

		// A run's envVars is a map of the client's own names: any name is taken.
		r := h.do("POST", "/api/executions", a, map[string]any{"image": passImage, "envVars": map[string]any{"base_url": "x", "envVariables": "y"}})
		expect(t, r, 201, "")
		if names := r.get("execution", "envVarNames"); len(names.([]any)) != 2 {
			t.Fatalf("envVarNames %v", names)
		}
		// The fixed names of a project's targetUrls are taken.
		expect(t, h.do("PATCH", project, a, map[string]any{"targetUrls": map[string]any{"development": "http://d.test", "staging": "", "production": "https://p.test"}}), 200, "")
	})
}

// TestStrictCommand: a command that does not parse, or that a shell would expand, is refused
// at queue time with 400 "Validation error" saying what is wrong; nothing is queued.
func TestStrictCommand(t *testing.T) {
	forEachDB(t, func(t *testing.T, h *harness) {
		a := bearer(h.signup("command@example.com", "Command Co").token)
		for cmd, msg := range map[string]string{
			`pytest -k "not slow`:             "without closing quote",
			`pytest -k 'not slow`:             "without closing quote",
			`pytest $PYTEST_ARGS`:             `"$PYTEST_ARGS" (column 8) would be expanded`,
			`pytest "$(cat args)"`:            "$(cat args)",
			"pytest `cat args`":               "`cat args`",
			`pytest tests/*.py`:               `unquoted "*"`,
			`pytest ~/tests`:                  `unquoted "~"`,
			`pytest; rm -rf /app`:             "must be one command",
			`pytest && echo ok`:               "must be a simple command",
			`pytest > /tmp/out`:               "must not redirect",
			`FOO=1 pytest`:                    "must not set variables",
			`pytest # all of them`:            "comment",
			`"" pytest`:                       "program name",
			"pytest\nrm -rf /app":             "second one starts at line 2",
			`npx playwright test --grep "@a\`: "without closing quote",
		} {
			r := h.do("POST", "/api/executions", a, map[string]any{"image": passImage, "command": cmd})
			expect(t, r, 400, "Validation error")
			if m := r.str("message"); !strings.HasPrefix(m, "command") || !strings.Contains(m, msg) {
				t.Errorf("command %q: message %q, want one mentioning %q", cmd, m, msg)
			}
		}
		if r := h.do("GET", "/api/executions", a, nil); r.get("data", "total") != 0.0 {
			t.Fatalf("a refused command was queued: %s", r.raw)
		}
		// Quoted, the same characters are taken literally.
		expect(t, h.do("POST", "/api/executions", a, map[string]any{"image": passImage, "command": `pytest '$PYTEST_ARGS' "tests/*.py" \~ "a;b"`}), 201, "")
	})
}

// TestStrictCommandRuns: an accepted command reaches the container as the words a POSIX shell
// would give, nothing expanded, the folder last.
func TestStrictCommandRuns(t *testing.T) {
	h := runHarness(t, "sqlite")
	a := bearer(h.signup("words@example.com", "Words Co").token)
	task := h.queue(a, map[string]any{"image": pyImage, "envVars": map[string]any{"GREETING": "hello"},
		"command": `python3 -c 'import sys; print("argv", sys.argv[1:])' "two words" 'kept $GREETING *' a\ b "x\ny"`})
	r := h.waitFor(a, task, 60*time.Second, final)
	if r.str("execution", "status") != "PASSED" || r.get("execution", "exitCode") != 0.0 {
		t.Fatalf("run: %s", r.raw)
	}
	logs := h.do("GET", "/api/executions/"+task+"/logs", a, nil)
	expect(t, logs, 200, "")
	if want := `argv ['two words', 'kept $GREETING *', 'a b', 'x\\ny', 'all']`; !strings.Contains(logs.str("logs"), want) {
		t.Fatalf("log lacks %q:\n%s", want, logs.str("logs"))
	}
}

// TestStrictWebhookLenient: the payment provider's events keep fields Verdict does not know;
// the webhook takes them as they are.
func TestStrictWebhookLenient(t *testing.T) {
	h := newHarness(t, harnessOpts{dialect: "sqlite", env: billingEnv(t, nil)})
	admin := h.signup("hook@example.com", "Hook Co")
	h.linkCustomer(admin.orgID, "cus_strict")
	sub := subscriptionObject("sub_strict", "cus_strict", priceTeam, h.clock.Now())
	sub["future_field"] = map[string]any{"anything": true}
	body := event("evt_strict", "customer.subscription.created", h.clock.Now(), sub)
	body = append([]byte(`{"unknown_top_level":1,`), body[1:]...)
	h.deliver(body)
	if plan := h.org(admin.orgID).Plan; plan != "team" {
		t.Fatalf("plan %q after the event, want team", plan)
	}
}
