// Package monday creates items on Monday.com boards through its GraphQL API, with typed
// operations that genqlient generates (generated.go) from the part of Monday.com's schema
// Verdict uses (schema.graphql) and the operations it sends (operations.graphql). gqlclient
// carries them: headers `Authorization: <API token>` and `API-Version`, each call bounded in
// time, errors without the token.
package monday

//go:generate go tool genqlient genqlient.yaml

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"time"

	"verdict/internal/integrations/gqlclient"
	"verdict/internal/integrations/tracker"
)

// Provider is Monday.com as the trackers' service registers it: items on the board (and
// group) of the organization's settings, the run's details posted as the item's first update.
var Provider = tracker.Provider{
	Spec: tracker.Spec{Provider: "monday", Name: name, Credential: "token",
		Fields: []tracker.Field{
			{Key: boardField, ID: "board", Label: "Board ID", Required: true, Pattern: regexp.MustCompile(`^[0-9]{1,20}$`),
				Rule: "boardId must be a Monday.com board ID (digits, at most 20)", Unset: "none"},
			{Key: groupField, ID: "group", Label: "Group ID", Pattern: regexp.MustCompile(`^[A-Za-z0-9_-]{1,100}$`),
				Rule:  "groupId must be a Monday.com group ID (letters, digits, - and _, at most 100)",
				Unset: "the board's first", Placeholder: "the board's first group"},
		},
		TicketRoute: "/api/monday/items", TicketNoun: "item", RunField: "trackerBItems"},
	New: func(c tracker.Config) tracker.Tracker {
		return New(Config{URL: c.URL, APIVersion: c.Version, Timeout: c.Timeout, HTTPClient: c.HTTPClient})
	},
}

// The settings of an organization's Monday.com: the board and group new items go to, and the
// account's slug, learnt when the token is checked (it names the account's host,
// <slug>.monday.com, in an item's link when the API gives none).
const (
	boardField = "boardId"
	groupField = "groupId"
	slugField  = "accountSlug"
)

// DefaultURL is Monday.com's GraphQL endpoint.
const DefaultURL = "https://api.monday.com/v2"

// DefaultAPIVersion is the API version every call asks for (the API-Version header). Monday.com
// releases a version a quarter and keeps about three; 2026-07 answers errors in the unified
// format ({"errors": [...]}), and the older formats are read too.
const DefaultAPIVersion = "2026-07"

// name is Monday.com in errors.
const name = "Monday.com"

// Config is where Monday.com is, which API version to ask for and how long a call may take.
type Config struct {
	URL        string        // default DefaultURL
	APIVersion string        // default DefaultAPIVersion
	Timeout    time.Duration // each call; default gqlclient.DefaultTimeout
	HTTPClient *http.Client
}

// Client calls Monday.com; each call brings the organization's token. It is safe for
// concurrent use.
type Client struct {
	api *gqlclient.Endpoint
}

// New returns a Client for cfg.
func New(cfg Config) *Client {
	if cfg.URL == "" {
		cfg.URL = DefaultURL
	}
	if cfg.APIVersion == "" {
		cfg.APIVersion = DefaultAPIVersion
	}
	return &Client{api: gqlclient.New(gqlclient.Config{Tracker: name, URL: cfg.URL, Timeout: cfg.Timeout,
		Header: http.Header{"Api-Version": {cfg.APIVersion}}, HTTPClient: cfg.HTTPClient})}
}

// Timeout is the bound of each call.
func (c *Client) Timeout() time.Duration { return c.api.Timeout() }

// Account is the Monday.com account a token belongs to.
type Account struct {
	Slug string // its host is <slug>.monday.com
}

// CheckKey asks who apiKey belongs to (me { id account { slug } }): the account when Monday.com
// accepts the token, an error matching tracker.ErrKeyRefused when it refuses it, another
// *tracker.Error when it could not tell.
func (c *Client) CheckKey(ctx context.Context, apiKey string) (*Account, error) {
	res, err := Me(ctx, c.api.With(apiKey))
	if err != nil {
		return nil, err
	}
	if res.Me == nil || res.Me.Id == "" {
		return nil, tracker.Malformed(name, "Me", "no user for the token")
	}
	return &Account{Slug: res.Me.Account.Slug}, nil
}

// Item is an item Monday.com created.
type Item struct {
	ID   string
	Name string
	URL  string
}

// CreateItem creates an item named itemName on board boardID, in group groupID (the board's
// top group when empty). accountSlug makes the item's link when the answer carries none.
func (c *Client) CreateItem(ctx context.Context, apiKey, boardID, groupID, itemName, accountSlug string) (*Item, error) {
	var group *string
	if groupID != "" {
		group = &groupID
	}
	res, err := CreateItem(ctx, c.api.With(apiKey), boardID, group, itemName)
	if err != nil {
		return nil, err
	}
	it := res.Create_item
	if it == nil || it.Id == "" {
		return nil, tracker.Malformed(name, "CreateItem", "no item in the answer")
	}
	link := it.Url
	if link == "" && accountSlug != "" {
		link = "https://" + url.PathEscape(accountSlug) + ".monday.com/boards/" + url.PathEscape(boardID) +
			"/pulses/" + url.PathEscape(it.Id)
	}
	if link == "" {
		return nil, tracker.Malformed(name, "CreateItem", "the item has no url")
	}
	return &Item{ID: it.Id, Name: it.Name, URL: link}, nil
}

// AddUpdate posts body (HTML) as an update on item itemID.
func (c *Client) AddUpdate(ctx context.Context, apiKey, itemID, body string) error {
	res, err := CreateUpdate(ctx, c.api.With(apiKey), itemID, body)
	if err != nil {
		return err
	}
	if res.Create_update == nil || res.Create_update.Id == "" {
		return tracker.Malformed(name, "CreateUpdate", "no update in the answer")
	}
	return nil
}

// Check is CheckKey, as a tracker.Tracker: it learns the account's slug.
func (c *Client) Check(ctx context.Context, apiKey string, _ map[string]string) (map[string]string, error) {
	acct, err := c.CheckKey(ctx, apiKey)
	if err != nil {
		return nil, err
	}
	return map[string]string{slugField: acct.Slug}, nil
}

// CreateTicket creates an item on the board (and group) of settings, then posts the run's
// details (HTML) as its first update; an update that fails leaves the item, Incomplete.
func (c *Client) CreateTicket(ctx context.Context, apiKey string, settings map[string]string, t tracker.Ticket) (*tracker.Filed, error) {
	item, err := c.CreateItem(ctx, apiKey, settings[boardField], settings[groupField], t.Title, settings[slugField])
	if err != nil {
		return nil, err
	}
	return &tracker.Filed{ExternalID: item.ID, URL: item.URL, Title: item.Name,
		Incomplete: c.AddUpdate(ctx, apiKey, item.ID, t.HTML)}, nil
}
