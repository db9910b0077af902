//go:build integration

package app_test

import (
	"strings"
	"testing"
	"time"

	"verdict/internal/integrations/trackertest"
	"verdict/internal/testenv"
)

const (
	e2eJiraEmail = "qa-bot@acme.com"
	e2eJiraToken = "ATATT3x-e2e-TOPSECRET-token"
)

// TestJiraEndToEnd: a failed run of the sample suite on the real engine becomes a Jira issue
// (REST v3, basic authentication, an Atlassian Document Format description a Jira site accepts);
// the run lists it in jiraIssues and in tickets with the other trackers'; the token never comes
// back; a site on an internal address is refused unless the operator allows it.
func TestJiraEndToEnd(t *testing.T) {
	testenv.DockerHost(t)
	site := trackertest.NewJira(t, e2eJiraEmail, e2eJiraToken)
	lin := trackertest.NewLinear(t, e2eLinearKey)
	for _, d := range []string{"sqlite", "postgres"} {
		t.Run(d, func(t *testing.T) {
			h := newHarness(t, harnessOpts{dialect: d, realClock: true, workers: true, lease: 2 * time.Second,
				env: map[string]string{"LINEAR_API_URL": lin.URL, "VERDICT_EGRESS_ALLOW": "127.0.0.1"}})
			admin := h.signup("jira-"+d+"@example.com", "Jira Co")
			dev := h.join(admin, "jira-dev-"+d+"@example.com", "developer")
			other := h.signup("jira-other-"+d+"@example.com", "Other Co")
			settings := map[string]any{"apiToken": e2eJiraToken, "baseUrl": site.URL, "email": e2eJiraEmail,
				"projectKey": "QA", "issueType": "Bug"}

			for _, u := range []string{"http://169.254.169.254", "https://10.0.0.7", "https://localhost:8443"} {
				bad := map[string]any{"apiToken": e2eJiraToken, "baseUrl": u, "email": e2eJiraEmail, "projectKey": "QA", "issueType": "Bug"}
				expect(t, h.do("PUT", "/api/integrations/jira", bearer(admin.token), bad), 400, "Validation error")
			}
			expect(t, h.do("PUT", "/api/integrations/jira", bearer(admin.token),
				map[string]any{"apiKey": e2eJiraToken, "baseUrl": site.URL}), 400, "")
			expect(t, h.do("PUT", "/api/integrations/jira", bearer(admin.token), settings), 200, "")
			expect(t, h.do("PUT", "/api/integrations/linear", bearer(admin.token),
				map[string]any{"apiKey": e2eLinearKey, "teamId": trackertest.Team}), 200, "")
			g := h.do("GET", "/api/integrations/jira", bearer(dev.token), nil)
			expect(t, g, 200, "")
			if g.get("data", "enabled") != true || g.get("data", "projectKey") != "QA" || strings.Contains(g.raw, "TOPSECRET") {
				t.Fatalf("settings: %s", g.raw)
			}

			task := h.queue(bearer(dev.token), map[string]any{"image": failImage, "taskId": "jira-7"})
			run := h.waitFor(bearer(dev.token), task, 90*time.Second, final)
			if run.str("execution", "status") != "FAILED" {
				t.Fatalf("run: %s", run.raw)
			}
			c := h.do("POST", "/api/jira/issues", bearer(dev.token), map[string]any{"taskId": task, "title": "Checkout fails"})
			expect(t, c, 201, "")
			key := c.str("data", "identifier")
			if !strings.HasPrefix(key, "QA-") || c.str("data", "issueUrl") != site.URL+"/browse/"+key {
				t.Fatalf("issue: %s", c.raw)
			}
			expect(t, h.do("POST", "/api/linear/issues", bearer(dev.token), map[string]any{"taskId": task}), 201, "")
			expect(t, h.do("POST", "/api/jira/issues", bearer(other.token), map[string]any{"taskId": task}), 400, "Integration not configured")

			var issue trackertest.JiraIssue
			for _, i := range site.Issues() {
				if i.Key == key {
					issue = i
				}
			}
			if p := trackertest.CheckADF(issue.Description); p != "" || issue.Summary != "Checkout fails" {
				t.Fatalf("issue %+v: %s", issue, p)
			}
			got := h.do("GET", "/api/executions/"+task, bearer(dev.token), nil)
			expect(t, got, 200, "")
			jira, _ := got.get("execution", "jiraIssues").([]any)
			tickets, _ := got.get("execution", "tickets").([]any)
			if len(jira) != 1 || len(tickets) != 2 {
				t.Fatalf("run's tickets: %s", got.raw)
			}
			first, _ := tickets[0].(map[string]any)
			second, _ := tickets[1].(map[string]any)
			if first["provider"] != "jira" || first["identifier"] != key || second["provider"] != "linear" || strings.Contains(got.raw, "TOPSECRET") {
				t.Fatalf("tickets: %v", tickets)
			}
		})
	}
}
