// Package jira creates issues in Jira Cloud through its REST API v3: basic authentication with
// the account's e-mail and an API token, the project and issue type of the organization's
// settings, and a description in the Atlassian Document Format. The site is the
// organization's own (https://<site>.atlassian.net), so its calls go through the client the
// trackers' service gives a tracker at a tenant's address (no internal address, no redirect).
// Every call is bounded in time and in what it reads, and ends in data or a *tracker.Error that
// never carries the token.
package jira

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"verdict/internal/integrations/tracker"
	"verdict/internal/redact"
)

// The settings of an organization's Jira.
const (
	siteField      = "baseUrl"
	emailField     = "email"
	projectField   = "projectKey"
	issueTypeField = "issueType"
)

// Provider is Jira as the trackers' service registers it.
var Provider = tracker.Provider{
	Spec: tracker.Spec{Provider: "jira", Name: name, Credential: "token", CredentialMember: "apiToken",
		CheckWithSettings: true,
		Fields: []tracker.Field{
			{Key: siteField, ID: "site", Label: "Site", Required: true, URL: true,
				Pattern: regexp.MustCompile(`^https?://[^\s/?#]+(/[^\s?#]*)?$`),
				Rule:    "baseUrl must be your Jira site's https address, such as https://acme.atlassian.net",
				Unset:   "none", Placeholder: "https://acme.atlassian.net"},
			{Key: emailField, ID: "email", Label: "Account e-mail", Required: true,
				Pattern: regexp.MustCompile(`^[^\s@]{1,64}@[^\s@]{1,255}$`),
				Rule:    "email must be the e-mail address of the Atlassian account the API token belongs to", Unset: "none"},
			{Key: projectField, ID: "project", Label: "Project key", Required: true,
				Pattern: regexp.MustCompile(`^[A-Z][A-Z0-9_]{1,9}$`),
				Rule:    "projectKey must be a Jira project key: an upper-case letter, then 1 to 9 upper-case letters, digits or _",
				Unset:   "none", Placeholder: "QA"},
			{Key: issueTypeField, ID: "type", Label: "Issue type", Required: true,
				Pattern: regexp.MustCompile(`^[^\x00-\x1f\x7f]{1,60}$`),
				Rule:    "issueType must be the name of an issue type of the project (at most 60 characters), such as Bug",
				Unset:   "none", Placeholder: "Bug"},
		},
		TicketRoute: "/api/jira/issues", TicketNoun: "issue", RunField: "jiraIssues", Identifier: true},
	New: func(c tracker.Config) tracker.Tracker { return New(c.Timeout, c.HTTPClient) },
}

// name is Jira in errors.
const name = "Jira"

// DefaultTimeout bounds a call when none is given.
const DefaultTimeout = 15 * time.Second

// maxResponseBytes bounds what is read of an answer: a project with its issue types is a few
// kilobytes, an error a few hundred bytes.
const maxResponseBytes = 1 << 20

// Client calls Jira sites; each call brings the site, the account and its token.
type Client struct {
	timeout time.Duration
	http    *http.Client
}

// New returns a Client whose calls take at most timeout, carried by hc (nil: a client of its
// own); hc is copied, never changed, and follows no redirect.
func New(timeout time.Duration, hc *http.Client) *Client {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	c := &http.Client{}
	if hc != nil {
		copied := *hc
		c = &copied
	}
	// A redirect is answered as it is: following one would send the token to another address.
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &Client{timeout: timeout, http: c}
}

// account is who calls: a site, an e-mail and its API token.
type account struct {
	site, email, token string
}

func accountOf(token string, settings map[string]string) account {
	return account{site: strings.TrimRight(settings[siteField], "/"), email: settings[emailField], token: token}
}

// apiError is Jira's error body: {"errorMessages": [...], "errors": {"field": "message"}}.
type apiError struct {
	ErrorMessages []string          `json:"errorMessages"`
	Errors        map[string]string `json:"errors"`
}

func (e apiError) message() string {
	msgs := append([]string(nil), e.ErrorMessages...)
	for k, v := range e.Errors {
		msgs = append(msgs, k+": "+v)
	}
	if len(msgs) > 3 {
		msgs = msgs[:3]
	}
	return strings.Join(msgs, "; ")
}

// call sends one request to the site's REST API v3 (path after /rest/api/3) and decodes a 2xx
// answer into out. status is the answer's status, when there was one.
func (c *Client) call(ctx context.Context, a account, method, path string, body, out any) (status int, err error) {
	op := method + " " + path
	fail := func(kind error, status int, msg string) error {
		return &tracker.Error{Tracker: name, Op: op, Kind: kind, StatusCode: status,
			Message: redact.Clean(redact.Clean(msg, a.token), basic(a))}
	}
	if strings.TrimSpace(a.token) == "" {
		return 0, fail(tracker.ErrKeyRefused, 0, "no API token")
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, fmt.Errorf("jira: encode %s: %w", op, err)
		}
		rd = bytes.NewReader(b)
	}
	callCtx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(callCtx, method, a.site+"/rest/api/3"+path, rd)
	if err != nil {
		return 0, fail(tracker.ErrUnreachable, 0, "invalid site address")
	}
	req.Header.Set("Authorization", "Basic "+basic(a))
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "Verdict")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := c.http.Do(req)
	var raw []byte
	if err == nil {
		raw, err = io.ReadAll(io.LimitReader(res.Body, maxResponseBytes+1))
		res.Body.Close()
	}
	switch {
	case err == nil:
	case ctx.Err() != nil: // the caller gave up
		return 0, &tracker.Error{Tracker: name, Op: op, Kind: ctx.Err()}
	case errors.Is(callCtx.Err(), context.DeadlineExceeded):
		return 0, fail(tracker.ErrTimeout, 0, fmt.Sprintf("no answer within %s", c.timeout))
	default:
		return 0, fail(tracker.ErrUnreachable, 0, err.Error())
	}
	if len(raw) > maxResponseBytes {
		return res.StatusCode, fail(tracker.ErrMalformed, res.StatusCode, fmt.Sprintf("the answer is larger than %d bytes", maxResponseBytes))
	}
	if res.StatusCode < 200 || res.StatusCode > 299 {
		var e apiError
		msg := ""
		if json.Unmarshal(raw, &e) == nil {
			msg = e.message()
		}
		if msg == "" {
			msg = fmt.Sprintf("HTTP %d %s", res.StatusCode, http.StatusText(res.StatusCode))
		}
		kind := tracker.ErrUpstream
		if res.StatusCode == http.StatusUnauthorized {
			kind = tracker.ErrKeyRefused
		}
		return res.StatusCode, fail(kind, res.StatusCode, msg)
	}
	if out != nil && json.Unmarshal(raw, out) != nil {
		return res.StatusCode, fail(tracker.ErrMalformed, res.StatusCode, "the answer is not the JSON the call returns")
	}
	return res.StatusCode, nil
}

// basic is the account's basic-authentication credentials, encoded.
func basic(a account) string { return basicAuth(a.email, a.token) }

// project is what Check reads of the project of the settings.
type project struct {
	Key        string `json:"key"`
	IssueTypes []struct {
		Name    string `json:"name"`
		Subtask bool   `json:"subtask"`
	} `json:"issueTypes"`
}

// Check asks the site who the token belongs to (GET /myself), then whether the project of the
// settings exists for that account with the issue type of the settings (GET
// /project/{key}): a refused token matches tracker.ErrKeyRefused, a missing project or issue
// type tracker.ErrSettingsRefused.
func (c *Client) Check(ctx context.Context, token string, settings map[string]string) (map[string]string, error) {
	a := accountOf(token, settings)
	var me struct {
		AccountID string `json:"accountId"`
	}
	status, err := c.call(ctx, a, http.MethodGet, "/myself", nil, &me)
	if err != nil {
		if status == http.StatusForbidden || status == http.StatusNotFound {
			return nil, withKind(err, tracker.ErrKeyRefused)
		}
		return nil, err
	}
	if me.AccountID == "" {
		return nil, tracker.Malformed(name, "GET /myself", "the account has no accountId")
	}
	key := settings[projectField]
	var p project
	if status, err := c.call(ctx, a, http.MethodGet, "/project/"+url.PathEscape(key), nil, &p); err != nil {
		if status == http.StatusNotFound {
			return nil, &tracker.Error{Tracker: name, Op: "GET /project", Kind: tracker.ErrSettingsRefused, StatusCode: status,
				Message: "no project " + key + " is visible to this account"}
		}
		return nil, err
	}
	want := settings[issueTypeField]
	var names []string
	for _, t := range p.IssueTypes {
		if t.Subtask {
			continue
		}
		if strings.EqualFold(t.Name, want) {
			return nil, nil
		}
		names = append(names, t.Name)
	}
	return nil, &tracker.Error{Tracker: name, Op: "GET /project", Kind: tracker.ErrSettingsRefused,
		Message: fmt.Sprintf("project %s has no issue type %q (it has: %s)", key, want, strings.Join(names, ", "))}
}

// withKind is err, a *tracker.Error, with another kind.
func withKind(err error, kind error) error {
	var te *tracker.Error
	if errors.As(err, &te) {
		c := *te
		c.Kind = kind
		return &c
	}
	return err
}

// CreateTicket creates an issue (POST /issue) in the project and of the issue type of settings,
// described in the Atlassian Document Format.
func (c *Client) CreateTicket(ctx context.Context, token string, settings map[string]string, t tracker.Ticket) (*tracker.Filed, error) {
	a := accountOf(token, settings)
	fields := map[string]any{
		"project":   map[string]string{"key": settings[projectField]},
		"issuetype": map[string]string{"name": settings[issueTypeField]},
		"summary":   t.Title,
	}
	if len(t.ADF) > 0 {
		fields["description"] = json.RawMessage(t.ADF)
	}
	var created struct {
		ID   string `json:"id"`
		Key  string `json:"key"`
		Self string `json:"self"`
	}
	if _, err := c.call(ctx, a, http.MethodPost, "/issue", map[string]any{"fields": fields}, &created); err != nil {
		return nil, err
	}
	if created.ID == "" || created.Key == "" {
		return nil, tracker.Malformed(name, "POST /issue", "the created issue has no id or key")
	}
	return &tracker.Filed{ExternalID: created.ID, Identifier: created.Key, URL: a.site + "/browse/" + url.PathEscape(created.Key),
		Title: t.Title}, nil
}

// basicAuth is the value of basic authentication's credentials for user and password.
func basicAuth(user, password string) string {
	return base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
}
