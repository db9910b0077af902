//go:build integration

package app_test

import (
	"net/url"
	"sort"
	"strings"
	"testing"
)

// TestLabels queues runs with labels on both databases: they are shown on the execution view
// ({} when none) and in the list, filter the list (every label must match), and bad labels or
// filters are 400s naming them.
func TestLabels(t *testing.T) {
	forEachDB(t, func(t *testing.T, h *harness) {
		admin := h.signup("labels@example.com", "Labels Co")
		a := bearer(admin.token)
		queue := func(task string, labels map[string]any) {
			t.Helper()
			body := map[string]any{"image": "suite:x", "taskId": task}
			if labels != nil {
				body["labels"] = labels
			}
			r := h.do("POST", "/api/executions", a, body)
			expect(t, r, 201, "")
		}
		queue("main-staging", map[string]any{"branch": "main", "env": "staging", "note": "a:b c"})
		queue("main-prod", map[string]any{"branch": "main", "env": "production"})
		queue("plain", nil)

		r := h.do("GET", "/api/executions/main-staging", a, nil)
		expect(t, r, 200, "")
		if l, _ := r.get("execution", "labels").(map[string]any); len(l) != 3 || l["branch"] != "main" || l["note"] != "a:b c" {
			t.Fatalf("labels: %s", r.raw)
		}
		r = h.do("GET", "/api/executions/plain", a, nil)
		if l, ok := r.get("execution", "labels").(map[string]any); !ok || len(l) != 0 || !strings.Contains(r.raw, `"labels":{}`) {
			t.Fatalf("no labels: %s", r.raw)
		}

		list := func(query string) []string {
			t.Helper()
			r := h.do("GET", "/api/executions?"+query, a, nil)
			expect(t, r, 200, "")
			var tasks []string
			for _, e := range r.get("data", "executions").([]any) {
				tasks = append(tasks, e.(map[string]any)["taskId"].(string))
			}
			if int(r.get("data", "total").(float64)) != len(tasks) {
				t.Fatalf("total: %s", r.raw)
			}
			sort.Strings(tasks) // the harness's clock stands still: runs queued at once
			return tasks
		}
		q := func(labels ...string) string {
			v := url.Values{"label": labels}
			return v.Encode()
		}
		if got := strings.Join(list(q("branch:main")), ","); got != "main-prod,main-staging" {
			t.Fatalf("branch:main: %s", got)
		}
		if got := strings.Join(list(q("branch:main", "env:staging")), ","); got != "main-staging" {
			t.Fatalf("branch:main and env:staging: %s", got)
		}
		if got := strings.Join(list(q("note:a:b c")), ","); got != "main-staging" {
			t.Fatalf("note: %s", got)
		}
		if got := list(q("branch:nope")); len(got) != 0 {
			t.Fatalf("no match: %v", got)
		}
		for _, bad := range []string{q("branch"), q("Branch:main"), q(":x")} {
			expect(t, h.do("GET", "/api/executions?"+bad, a, nil), 400, "Validation error")
		}

		r = h.do("POST", "/api/executions", a, map[string]any{"image": "x", "labels": map[string]any{"Bad Key": "v"}})
		expect(t, r, 400, "Validation error")
		if r.str("message") != `label "Bad Key": a key is 1 to 63 of a-z, 0-9, _, . and -` {
			t.Fatalf("bad key: %s", r.raw)
		}
		r = h.do("POST", "/api/executions", a, map[string]any{"image": "x", "labels": map[string]any{"note": strings.Repeat("x", 257)}})
		expect(t, r, 400, "Validation error")
		if !strings.Contains(r.str("message"), `label "note"`) {
			t.Fatalf("long value: %s", r.raw)
		}
		many := map[string]any{}
		for i := range 21 {
			many[strings.Repeat("k", i+1)] = "v"
		}
		expect(t, h.do("POST", "/api/executions", a, map[string]any{"image": "x", "labels": many}), 400, "Validation error")
		expect(t, h.do("POST", "/api/executions", a, map[string]any{"image": "x", "labels": []any{"a"}}), 400, "")

		// The dashboard's run page lists them.
		b := h.withSession(t, admin.token)
		runs := b.get("/runs?label=" + url.QueryEscape("env:production"))
		if runs.status != 200 || !strings.Contains(runs.body, `data-task="main-prod"`) || strings.Contains(runs.body, `data-task="main-staging"`) ||
			!strings.Contains(runs.body, `value="env:production"`) {
			t.Fatalf("/runs?label=env:production: %d\n%s", runs.status, runs.body)
		}
		if bad := b.get("/runs?label=nocolon"); bad.status != 400 {
			t.Fatalf("/runs?label=nocolon: %d", bad.status)
		}
		page := b.get("/runs/main-staging")
		if page.status != 200 || !strings.Contains(page.body, "branch:&nbsp;main") || !strings.Contains(page.body, "<dt>Labels</dt>") {
			t.Fatalf("run page without labels: %d\n%s", page.status, page.body)
		}
	})
}
