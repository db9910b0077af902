package integrations

// Jira through the service: its site checked as a tenant's address (no internal address unless
// allowed), its token and settings checked on save (again when the settings change), and
// issues filed with an Atlassian Document Format description that a Jira site accepts.

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"verdict/internal/domain"
	"verdict/internal/egress"
	"verdict/internal/integrations/trackertest"
)

const (
	jiraP     = "jira"
	jiraEmail = "qa-bot@acme.com"
	jiraToken = "ATATT3x-jira-TOPSECRET-token"
)

// jiraService is f's service with a guard that allows the fake site's loopback address.
func (f *fixture) jiraService(site *trackertest.Jira) *Service {
	guard, err := egress.New([]string{"127.0.0.1"})
	if err != nil {
		f.t.Fatal(err)
	}
	return New(Deps{Store: f.st, Box: f.s.box, Egress: guard, Timeout: 2 * time.Second, Events: f.events, Log: f.s.log,
		ReportURL: func(context.Context, *domain.Execution) string { return reportURL }})
}

func jiraInput(site string, token *string) Input {
	return Input{APIKey: token, Values: map[string]string{"baseUrl": site, "email": jiraEmail, "projectKey": "QA", "issueType": "Bug"}}
}

func TestJiraSettings(t *testing.T) {
	f := newFixture(t)
	site := trackertest.NewJira(t, jiraEmail, jiraToken)
	s := f.jiraService(site)

	// The fixture's service allows no internal address: the loopback site is refused on save,
	// before any call; so are the metadata address and a plain-http site.
	for _, u := range []string{site.URL, "https://169.254.169.254", "https://localhost", "https://10.0.0.7/jira"} {
		_, err := f.s.Save(f.ctx, f.admin, jiraP, jiraInput(u, ptr(jiraToken)))
		de := wantError(t, u, err, 400, "Validation error")
		if !strings.Contains(de.Message, "baseUrl") {
			t.Fatalf("%s: %q does not name baseUrl", u, de.Message)
		}
	}
	_, err := s.Save(f.ctx, f.admin, jiraP, jiraInput("http://acme.atlassian.net", ptr(jiraToken)))
	wantError(t, "plain http", err, 400, "Validation error")
	if calls := site.Calls(); len(calls) != 0 {
		t.Fatalf("refused sites were called: %v", calls)
	}

	_, err = s.Save(f.ctx, f.admin, jiraP, jiraInput(site.URL, ptr("wrong-token")))
	wantError(t, "a refused token", err, 400, "Invalid API key")
	in := jiraInput(site.URL, ptr(jiraToken))
	in.Values["projectKey"] = "OPS"
	_, err = s.Save(f.ctx, f.admin, jiraP, in)
	de := wantError(t, "an unknown project", err, 400, "Invalid settings")
	if de.Message != "Jira: no project OPS is visible to this account; nothing was saved" {
		t.Fatalf("message %q", de.Message)
	}
	_, err = s.Save(f.ctx, f.dev, jiraP, jiraInput(site.URL, ptr(jiraToken)))
	wantError(t, "a developer", err, 403, "Forbidden")

	got, err := s.Save(f.ctx, f.admin, jiraP, jiraInput(site.URL, ptr(jiraToken)))
	if err != nil || !got.Configured || !got.Enabled || got.Values["projectKey"] != "QA" {
		t.Fatalf("save: %+v, %v", got, err)
	}
	// New settings without a token check the stored token against them.
	before := len(site.Calls())
	in = jiraInput(site.URL, nil)
	in.Values["issueType"] = "Epic"
	_, err = s.Save(f.ctx, f.admin, jiraP, in)
	de = wantError(t, "a missing issue type", err, 400, "Invalid settings")
	if !strings.Contains(de.Message, `no issue type "Epic" (it has: Task, Bug, Story)`) {
		t.Fatalf("message %q", de.Message)
	}
	if len(site.Calls()) == before {
		t.Fatal("changed settings were saved without checking the stored token")
	}
	// The same settings again are not checked.
	before = len(site.Calls())
	if _, err := s.Save(f.ctx, f.admin, jiraP, jiraInput(site.URL, nil)); err != nil {
		t.Fatal(err)
	}
	if len(site.Calls()) != before {
		t.Fatalf("unchanged settings were checked: %v", site.Calls()[before:])
	}
}

func TestJiraIssue(t *testing.T) {
	f := newFixture(t)
	site := trackertest.NewJira(t, jiraEmail, jiraToken)
	s := f.jiraService(site)
	if _, err := s.Save(f.ctx, f.admin, jiraP, jiraInput(site.URL, ptr(jiraToken))); err != nil {
		t.Fatal(err)
	}
	run := f.failedRun("nightly-7")
	c, err := s.CreateTicket(f.ctx, f.viewer, jiraP, TicketInput{TaskID: run.TaskID, Description: "Seen after *1.4*.\nOn staging.\n\nAsk Ana."})
	if err != nil {
		t.Fatal(err)
	}
	if c.Ticket.Identifier != "QA-1" || c.Ticket.URL != site.URL+"/browse/QA-1" || c.Ticket.Provider != jiraP {
		t.Fatalf("ticket %+v", c.Ticket)
	}
	issues := site.Issues()
	if len(issues) != 1 {
		t.Fatalf("issues %+v", issues)
	}
	doc := issues[0].Description
	if p := trackertest.CheckADF(doc); p != "" {
		t.Fatalf("the description is not a document Jira takes: %s", p)
	}
	raw, _ := json.Marshal(doc)
	for _, want := range []string{`"text":"Seen after *1.4*."`, `{"type":"hardBreak"}`, `"text":"Ask Ana."`, `{"type":"rule"}`,
		`"text":"Verdict run nightly-7"`, `"text":"auth › rejects a bad password"`, `"type":"codeBlock"`,
		`expected status 401, got 500\n    at auth.spec.ts:12`, `"href":"` + reportURL + `"`, `"text":"Failure analysis"`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("the description lacks %s:\n%s", want, raw)
		}
	}
	// The run lists it.
	tickets, err := f.st.Integrations().Tickets(f.ctx, f.org.ID, run.ID)
	if err != nil || len(tickets) != 1 || tickets[0].Identifier != "QA-1" {
		t.Fatalf("tickets on the run: %+v, %v", tickets, err)
	}
	// Jira's failures are worded as the other trackers'.
	site.Set(trackertest.Fail500)
	_, err = s.CreateTicket(f.ctx, f.dev, jiraP, TicketInput{TaskID: run.TaskID})
	wantError(t, "a failing site", err, 502, "Tracker error")
	site.Set(trackertest.BadKey)
	_, err = s.CreateTicket(f.ctx, f.dev, jiraP, TicketInput{TaskID: run.TaskID})
	de := wantError(t, "a revoked token", err, 502, "Tracker error")
	if !strings.Contains(de.Message, "refused the stored API key") {
		t.Fatalf("message %q", de.Message)
	}
}

// A run without failures, analysis or report still makes a valid document.
func TestJiraDocumentOfAQuietRun(t *testing.T) {
	exit := 3
	e := &domain.Execution{TaskID: "t-1", Status: domain.ExecFailed, ExitCode: &exit}
	doc := map[string]any{}
	if err := json.Unmarshal(describe(e, "").adf(""), &doc); err != nil {
		t.Fatal(err)
	}
	if p := trackertest.CheckADF(doc); p != "" {
		t.Fatalf("invalid document: %s", p)
	}
	raw, _ := json.Marshal(doc)
	if !strings.Contains(string(raw), "No failing test was reported: the suite exited with code 3.") {
		t.Fatalf("document %s", raw)
	}
}
