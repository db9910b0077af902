// Package linear creates issues in Linear through its GraphQL API, with typed operations that
// genqlient generates (generated.go) from the part of Linear's schema Verdict uses
// (schema.graphql) and the operations it sends (operations.graphql). gqlclient carries them:
// header `Authorization: <API key>`, each call bounded in time, errors without the key.
package linear

//go:generate go tool genqlient genqlient.yaml

import (
	"context"
	"net/http"
	"regexp"
	"time"

	"verdict/internal/integrations/gqlclient"
	"verdict/internal/integrations/tracker"
)

// Provider is Linear as the trackers' service registers it: issues in the team of the
// organization's settings, with a Markdown description.
var Provider = tracker.Provider{
	Spec: tracker.Spec{Provider: "linear", Name: name, Credential: "key",
		Fields: []tracker.Field{{Key: teamField, ID: "team", Label: "Team ID", Required: true,
			Pattern: regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`),
			Rule:    "teamId must be a Linear team ID (letters, digits, - and _, at most 64)", Unset: "none"}},
		TicketRoute: "/api/linear/issues", TicketNoun: "issue", RunField: "trackerAIssues", Identifier: true},
	New: func(c tracker.Config) tracker.Tracker {
		return New(Config{URL: c.URL, Timeout: c.Timeout, HTTPClient: c.HTTPClient})
	},
}

// teamField is the setting naming the team new issues go to.
const teamField = "teamId"

// DefaultURL is Linear's GraphQL endpoint.
const DefaultURL = "https://api.linear.app/graphql"

// name is Linear in errors.
const name = "Linear"

// Config is where Linear is and how long a call may take.
type Config struct {
	URL        string        // default DefaultURL
	Timeout    time.Duration // each call; default gqlclient.DefaultTimeout
	HTTPClient *http.Client
}

// Client calls Linear; each call brings the organization's key. It is safe for concurrent use.
type Client struct {
	api *gqlclient.Endpoint
}

// New returns a Client for cfg.
func New(cfg Config) *Client {
	if cfg.URL == "" {
		cfg.URL = DefaultURL
	}
	return &Client{api: gqlclient.New(gqlclient.Config{Tracker: name, URL: cfg.URL, Timeout: cfg.Timeout, HTTPClient: cfg.HTTPClient})}
}

// Timeout is the bound of each call.
func (c *Client) Timeout() time.Duration { return c.api.Timeout() }

// CheckKey asks who apiKey belongs to (viewer { id }): nil when Linear accepts the key, an error
// matching tracker.ErrKeyRefused when it refuses it, another *tracker.Error when it could
// not tell.
func (c *Client) CheckKey(ctx context.Context, apiKey string) error {
	res, err := Viewer(ctx, c.api.With(apiKey))
	if err != nil {
		return err
	}
	if res.Viewer.Id == "" {
		return tracker.Malformed(name, "Viewer", "the viewer has no id")
	}
	return nil
}

// Issue is an issue Linear created.
type Issue struct {
	ID         string
	Identifier string // ENG-123
	Title      string
	URL        string
}

// CreateIssue creates an issue in team teamID (issueCreate) with a Markdown description.
func (c *Client) CreateIssue(ctx context.Context, apiKey, teamID, title, description string) (*Issue, error) {
	const op = "CreateIssue"
	res, err := CreateIssue(ctx, c.api.With(apiKey), IssueCreateInput{TeamId: teamID, Title: &title, Description: &description})
	if err != nil {
		return nil, err
	}
	p := res.IssueCreate
	switch {
	case !p.Success:
		return nil, &tracker.Error{Tracker: name, Op: op, Kind: tracker.ErrUpstream, Message: "Linear did not create the issue (success: false)"}
	case p.Issue == nil || p.Issue.Id == "" || p.Issue.Url == "":
		return nil, tracker.Malformed(name, op, "the created issue has no id or url")
	}
	return &Issue{ID: p.Issue.Id, Identifier: p.Issue.Identifier, Title: p.Issue.Title, URL: p.Issue.Url}, nil
}

// Check is CheckKey, as a tracker.Tracker: Linear tells nothing more.
func (c *Client) Check(ctx context.Context, apiKey string, _ map[string]string) (map[string]string, error) {
	return nil, c.CheckKey(ctx, apiKey)
}

// CreateTicket creates an issue in the team of settings, described in Markdown.
func (c *Client) CreateTicket(ctx context.Context, apiKey string, settings map[string]string, t tracker.Ticket) (*tracker.Filed, error) {
	issue, err := c.CreateIssue(ctx, apiKey, settings[teamField], t.Title, t.Markdown)
	if err != nil {
		return nil, err
	}
	return &tracker.Filed{ExternalID: issue.ID, Identifier: issue.Identifier, URL: issue.URL, Title: issue.Title}, nil
}
