//go:build integration

package app_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"verdict/internal/integrations/trackertest"
	"verdict/internal/testenv"
)

const (
	e2eLinearKey = "lin_api_e2e_TOPSECRET_0123456789"
	e2eMondayKey = "monday-e2e-TOPSECRET-token"
)

// trackerHarness is a Verdict running real runs, with Linear and Monday.com at fakes that speak
// their GraphQL protocols.
func trackerHarness(t *testing.T, dialect string) (*harness, *trackertest.Linear, *trackertest.Monday) {
	testenv.DockerHost(t)
	lin := trackertest.NewLinear(t, e2eLinearKey)
	mon := trackertest.NewMonday(t, e2eMondayKey)
	h := newHarness(t, harnessOpts{dialect: dialect, realClock: true, workers: true, lease: 2 * time.Second,
		env: map[string]string{"LINEAR_API_URL": lin.URL, "MONDAY_API_URL": mon.URL}})
	return h, lin, mon
}

// TestTrackerTicketsEndToEnd: a failed run of the sample suite on the real engine becomes a
// Linear issue and a Monday.com item whose descriptions tell its status, its failing tests and
// its report link; the run shows them; concurrent tickets are all kept; viewers, other
// organizations and unconfigured or disabled integrations are refused; keys never come back.
func TestTrackerTicketsEndToEnd(t *testing.T) {
	for _, d := range []string{"sqlite", "postgres"} {
		t.Run(d, func(t *testing.T) {
			h, lin, mon := trackerHarness(t, d)
			admin := h.signup("trackers-"+d+"@example.com", "Tracked Co")
			dev := h.join(admin, "dev-"+d+"@example.com", "developer")
			viewer := h.join(admin, "viewer-"+d+"@example.com", "viewer")
			other := h.signup("other-"+d+"@example.com", "Other Co")
			expect(t, h.do("PATCH", "/api/organization/ai-analysis", bearer(admin.token), map[string]any{"enabled": true}), 200, "")

			task := h.queue(bearer(dev.token), map[string]any{"image": failImage, "taskId": "nightly-7"})
			run := h.waitFor(bearer(dev.token), task, 90*time.Second, final)
			if run.str("execution", "status") != "FAILED" || run.get("execution", "analysis") == nil {
				t.Fatalf("run: %s", run.raw)
			}
			reportLink := run.str("execution", "htmlReportUrl")
			if !strings.HasPrefix(reportLink, publicURL+"/reports/") {
				t.Fatalf("report link %q", reportLink)
			}
			if n := len(run.get("execution", "trackerAIssues").([]any)) + len(run.get("execution", "trackerBItems").([]any)); n != 0 {
				t.Fatalf("a new run shows %d tickets", n)
			}

			// Nothing configured yet.
			expect(t, h.do("POST", "/api/linear/issues", bearer(dev.token), map[string]any{"taskId": task}), 400, "Integration not configured")
			expect(t, h.do("POST", "/api/monday/items", bearer(dev.token), map[string]any{"taskId": task}), 400, "Integration not configured")
			g := h.do("GET", "/api/integrations/linear", bearer(viewer.token), nil)
			expect(t, g, 200, "")
			if g.get("data", "enabled") != false || g.get("data", "teamId") != nil {
				t.Fatalf("unconfigured: %s", g.raw)
			}

			// Saving: admins only, the key checked with the tracker, never shown again.
			linear := map[string]any{"apiKey": e2eLinearKey, "teamId": trackertest.Team}
			expect(t, h.do("PUT", "/api/integrations/linear", bearer(dev.token), linear), 403, "Forbidden")
			expect(t, h.do("PUT", "/api/integrations/linear", bearer(admin.token),
				map[string]any{"apiKey": "lin_api_wrong_TOPSECRET", "teamId": trackertest.Team}), 400, "Invalid API key")
			if g := h.do("GET", "/api/integrations/linear", bearer(admin.token), nil); g.get("data", "configured") != false {
				t.Fatalf("a refused key was stored: %s", g.raw)
			}
			expect(t, h.do("PUT", "/api/integrations/linear", bearer(admin.token), linear), 200, "")
			expect(t, h.do("PUT", "/api/integrations/monday", bearer(admin.token),
				map[string]any{"apiKey": e2eMondayKey, "boardId": trackertest.Board, "groupId": "topics"}), 200, "")
			for _, p := range []string{"linear", "monday"} {
				g := h.do("GET", "/api/integrations/"+p, bearer(viewer.token), nil)
				expect(t, g, 200, "")
				if g.get("data", "enabled") != true || strings.Contains(g.raw, "TOPSECRET") {
					t.Fatalf("%s settings: %s", p, g.raw)
				}
			}
			if g := h.do("GET", "/api/integrations/monday", bearer(viewer.token), nil); g.str("data", "boardId") != trackertest.Board ||
				g.str("data", "groupId") != "topics" {
				t.Fatalf("monday settings: %s", g.raw)
			}

			// Who may create tickets, and from which runs.
			// Every member may file a ticket, viewers too: a viewer's request gets past the role.
			expect(t, h.do("POST", "/api/linear/issues", bearer(viewer.token), map[string]any{"taskId": "no-such-run"}), 404, "Execution not found")
			expect(t, h.do("POST", "/api/linear/issues", bearer(other.token), map[string]any{"taskId": task}), 400, "Integration not configured")
			expect(t, h.do("PUT", "/api/integrations/linear", bearer(other.token), linear), 200, "")
			expect(t, h.do("POST", "/api/linear/issues", bearer(other.token), map[string]any{"taskId": task}), 404, "Execution not found")
			expect(t, h.do("POST", "/api/linear/issues", bearer(dev.token), map[string]any{"taskId": "no-such-run"}), 404, "Execution not found")
			if len(lin.Issues()) != 0 || len(mon.Items()) != 0 {
				t.Fatal("a refused request created a ticket")
			}

			// A Linear issue from the failed run.
			key := apiKey(h.do("POST", "/api/auth/api-keys", bearer(dev.token), map[string]any{"name": "ci"}).str("apiKey"))
			r := h.do("POST", "/api/linear/issues", key, map[string]any{"taskId": task, "description": "Seen in CI."})
			expect(t, r, 201, "")
			issues := lin.Issues()
			if len(issues) != 1 || r.str("data", "issueId") != issues[0].ID || r.str("data", "issueUrl") != issues[0].URL ||
				r.str("data", "identifier") != "ENG-1" || r.str("data", "createdBy") != dev.id {
				t.Fatalf("answer %s; Linear has %+v", r.raw, issues)
			}
			desc := issues[0].Description
			for _, want := range []string{"Seen in CI.", "## Verdict run `nightly-7`", "- **Status:** FAILED",
				"expected status 401, got 500", "locator('#runs') not found", "- **Report:** [", "](" + reportLink + ")",
				"### Failure analysis", "- **Category:** "} {
				if !strings.Contains(desc, want) {
					t.Errorf("the issue's description lacks %q:\n%s", want, desc)
				}
			}
			if want := "Verdict: nightly-7 FAILED on " + failImage; !strings.HasPrefix(issues[0].Title, want) {
				t.Errorf("title %q, want it to start %q", issues[0].Title, want)
			}

			// A Monday.com item, with the run's details as its update.
			r = h.do("POST", "/api/monday/items", bearer(admin.token), map[string]any{"taskId": task, "title": "Login returns 500"})
			expect(t, r, 201, "")
			items := mon.Items()
			if len(items) != 1 || r.str("data", "itemId") != items[0].ID || r.str("data", "itemUrl") != items[0].URL ||
				items[0].Name != "Login returns 500" || items[0].GroupID != "topics" || len(items[0].Updates) != 1 || r.get("warning") != nil {
				t.Fatalf("answer %s; Monday.com has %+v", r.raw, items)
			}
			if u := items[0].Updates[0]; !strings.Contains(u, "<b>Status:</b> FAILED") || !strings.Contains(u, "expected status 401, got 500") ||
				!strings.Contains(u, `<a href="`+reportLink+`">`) {
				t.Errorf("the item's update: %s", u)
			}

			// Two tickets at once: both kept.
			var wg sync.WaitGroup
			answers := make([]resp, 2)
			for i, path := range []string{"/api/linear/issues", "/api/linear/issues"} {
				wg.Go(func() { answers[i] = h.do("POST", path, bearer(dev.token), map[string]any{"taskId": task}) })
			}
			wg.Wait()
			for _, a := range answers {
				expect(t, a, 201, "")
			}

			// The run shows its tickets; the list does not.
			got := h.do("GET", "/api/executions/"+task, bearer(viewer.token), nil)
			ai, _ := got.get("execution", "trackerAIssues").([]any)
			bi, _ := got.get("execution", "trackerBItems").([]any)
			if len(ai) != 3 || len(bi) != 1 {
				t.Fatalf("the run's tickets: %s", got.raw)
			}
			ids := map[string]bool{}
			for _, x := range ai {
				ids[x.(map[string]any)["issueId"].(string)] = true
			}
			for _, is := range lin.Issues() {
				if !ids[is.ID] {
					t.Errorf("issue %s is not on the run: %v", is.ID, ids)
				}
			}
			if bi[0].(map[string]any)["itemUrl"] != items[0].URL {
				t.Errorf("item on the run: %v", bi[0])
			}
			l := h.do("GET", "/api/executions", bearer(viewer.token), nil)
			if strings.Contains(l.raw, "trackerAIssues") || strings.Contains(l.raw, "trackerBItems") {
				t.Fatalf("the list shows tickets: %s", l.raw)
			}

			// A tracker that fails answers 502 with its message; one that is slow is cut.
			lin.Set(trackertest.GraphQLError)
			r = h.do("POST", "/api/linear/issues", bearer(dev.token), map[string]any{"taskId": task})
			expect(t, r, 502, "Tracker error")
			if !strings.Contains(r.str("message"), "Argument Validation Error") || strings.Contains(r.raw, "TOPSECRET") {
				t.Fatalf("502: %s", r.raw)
			}
			mon.Set(trackertest.Fail500)
			r = h.do("POST", "/api/monday/items", bearer(dev.token), map[string]any{"taskId": task})
			expect(t, r, 502, "Tracker error")
			if !strings.Contains(r.str("message"), "HTTP 500") {
				t.Fatalf("502: %s", r.raw)
			}
			lin.Set(trackertest.OK)
			mon.Set(trackertest.OK)

			// Turned off, then unlinked: the credentials go, the tickets stay.
			expect(t, h.do("PUT", "/api/integrations/linear", bearer(admin.token), map[string]any{"teamId": trackertest.Team, "enabled": false}), 200, "")
			expect(t, h.do("POST", "/api/linear/issues", bearer(dev.token), map[string]any{"taskId": task}), 400, "Integration disabled")
			if g := h.do("GET", "/api/integrations/linear", bearer(viewer.token), nil); g.get("data", "enabled") != false || g.get("data", "configured") != true {
				t.Fatalf("disabled: %s", g.raw)
			}
			expect(t, h.do("DELETE", "/api/integrations/linear", bearer(dev.token), nil), 403, "Forbidden")
			del := h.do("DELETE", "/api/integrations/linear", bearer(admin.token), nil)
			expect(t, del, 200, "")
			if del.get("removed") != true {
				t.Fatalf("delete: %s", del.raw)
			}
			del = h.do("DELETE", "/api/integrations/github", bearer(admin.token), nil)
			expect(t, del, 200, "")
			if del.get("removed") != false {
				t.Fatalf("delete of nothing: %s", del.raw)
			}
			expect(t, h.do("DELETE", "/api/integrations/trello", bearer(admin.token), nil), 400, "Unknown provider")
			expect(t, h.do("POST", "/api/linear/issues", bearer(dev.token), map[string]any{"taskId": task}), 400, "Integration not configured")
			got = h.do("GET", "/api/executions/"+task, bearer(viewer.token), nil)
			if ai, _ := got.get("execution", "trackerAIssues").([]any); len(ai) != 3 {
				t.Fatalf("tickets after unlinking: %s", got.raw)
			}
		})
	}
}
