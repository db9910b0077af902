package jira_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"verdict/internal/integrations/jira"
	"verdict/internal/integrations/tracker"
	"verdict/internal/integrations/trackertest"
)

const (
	email = "qa-bot@acme.com"
	token = "ATATT3xFfGF0-secret-token"
)

func settings(site string) map[string]string {
	return map[string]string{"baseUrl": site, "email": email, "projectKey": "QA", "issueType": "bug"}
}

func kindOf(t *testing.T, err error) *tracker.Error {
	t.Helper()
	var te *tracker.Error
	if !errors.As(err, &te) {
		t.Fatalf("err = %v (%T), want a *tracker.Error", err, err)
	}
	if strings.Contains(te.Error(), token) {
		t.Fatalf("the error carries the token: %v", te)
	}
	return te
}

func TestCheck(t *testing.T) {
	site := trackertest.NewJira(t, email, token)
	c := jira.New(5*time.Second, nil)
	ctx := context.Background()
	if _, err := c.Check(ctx, token, settings(site.URL)); err != nil {
		t.Fatalf("a good token, project and issue type (any case): %v", err)
	}
	if got := site.Calls(); len(got) != 2 || got[0] != "GET /rest/api/3/myself" || got[1] != "GET /rest/api/3/project/QA" {
		t.Fatalf("calls %v, want /myself then /project/QA", got)
	}
	err := func() error { _, err := c.Check(ctx, "wrong", settings(site.URL)); return err }()
	if te := kindOf(t, err); !errors.Is(te, tracker.ErrKeyRefused) || te.StatusCode != 401 {
		t.Fatalf("a wrong token: %v, want refused with 401", err)
	}
	s := settings(site.URL)
	s["projectKey"] = "OPS"
	_, err = c.Check(ctx, token, s)
	if te := kindOf(t, err); !errors.Is(te, tracker.ErrSettingsRefused) || !strings.Contains(te.Message, "no project OPS") {
		t.Fatalf("an unknown project: %v", err)
	}
	s = settings(site.URL)
	s["issueType"] = "Subtask"
	_, err = c.Check(ctx, token, s)
	if te := kindOf(t, err); !errors.Is(te, tracker.ErrSettingsRefused) || !strings.Contains(te.Message, `no issue type "Subtask" (it has: Task, Bug, Story)`) {
		t.Fatalf("a sub-task type: %v", err)
	}
	site.Set(trackertest.Fail500)
	_, err = c.Check(ctx, token, settings(site.URL))
	if te := kindOf(t, err); !errors.Is(te, tracker.ErrUpstream) || te.Message != "HTTP 500 Internal Server Error" {
		t.Fatalf("a failing site: %v", err)
	}
	site.Set(trackertest.Malformed)
	_, err = c.Check(ctx, token, settings(site.URL))
	if te := kindOf(t, err); !errors.Is(te, tracker.ErrMalformed) {
		t.Fatalf("a malformed answer: %v", err)
	}
	site.Set(trackertest.Slow)
	_, err = jira.New(200*time.Millisecond, nil).Check(ctx, token, settings(site.URL))
	if te := kindOf(t, err); !errors.Is(te, tracker.ErrTimeout) {
		t.Fatalf("a slow site: %v", err)
	}
	_, err = c.Check(ctx, token, settings("http://127.0.0.1:1"))
	if te := kindOf(t, err); !errors.Is(te, tracker.ErrUnreachable) {
		t.Fatalf("no site: %v", err)
	}
}

func TestCreateTicket(t *testing.T) {
	site := trackertest.NewJira(t, email, token)
	c := jira.New(5*time.Second, nil)
	adf, _ := json.Marshal(map[string]any{"version": 1, "type": "doc", "content": []any{
		map[string]any{"type": "paragraph", "content": []any{map[string]any{"type": "text", "text": "Run failed"}}}}})
	filed, err := c.CreateTicket(context.Background(), token, settings(site.URL+"/"), tracker.Ticket{Title: "Checkout fails", ADF: adf})
	if err != nil {
		t.Fatal(err)
	}
	if filed.ExternalID != "10041" || filed.Identifier != "QA-1" || filed.URL != site.URL+"/browse/QA-1" || filed.Title != "Checkout fails" {
		t.Fatalf("filed %+v", filed)
	}
	issues := site.Issues()
	if len(issues) != 1 || issues[0].Summary != "Checkout fails" || issues[0].IssueType != "bug" || issues[0].Description["type"] != "doc" {
		t.Fatalf("issues %+v", issues)
	}
	// Jira's field errors come back in the message.
	bad := tracker.Ticket{Title: "x", ADF: []byte(`{"version":1,"type":"doc","content":[{"type":"paragraph","content":[{"type":"text","text":""}]}]}`)}
	_, err = c.CreateTicket(context.Background(), token, settings(site.URL), bad)
	if te := kindOf(t, err); !errors.Is(te, tracker.ErrUpstream) || te.StatusCode != 400 || !strings.Contains(te.Message, "description: Operation value must be an Atlassian Document") {
		t.Fatalf("an invalid document: %v", err)
	}
}
