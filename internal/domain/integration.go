package domain

import (
	"slices"
	"time"
)

// Issue trackers Verdict creates tickets in, by their provider identifier.
const (
	ProviderLinear = "linear"
	ProviderMonday = "monday"
)

// IntegrationProviders are the outside services an organization can link, by the lowercase
// identifier the API uses: source-control and CI hosts, issue and work trackers, and a chat
// provider. Only the trackers (Linear, Monday.com) store anything today; every one of them can
// be unlinked.
var IntegrationProviders = []string{"github", "gitlab", "bitbucket", "azuredevops", "jira", ProviderLinear, ProviderMonday, "slack"}

// ValidIntegrationProvider reports whether p is one of IntegrationProviders.
func ValidIntegrationProvider(p string) bool { return slices.Contains(IntegrationProviders, p) }

// Integration is an organization's link to an outside service: its settings and its API key,
// sealed. The key is never shown; Enabled false keeps the credentials but creates nothing.
type Integration struct {
	OrganizationID string
	Provider       string
	KeyCipher      string // the API key, sealed with the tracker keys' secretbox
	Settings       IntegrationSettings
	Enabled        bool
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// IntegrationSettings are an integration's settings besides its key, stored as one JSON
// document; each provider uses its own fields.
type IntegrationSettings struct {
	TeamID  string `json:"teamId,omitempty"`  // Linear: the team new issues go to
	BoardID string `json:"boardId,omitempty"` // Monday.com: the board new items go to
	GroupID string `json:"groupId,omitempty"` // Monday.com: the group of the board; empty: the board's first
	// AccountSlug is the Monday.com account's slug, learnt when the key is checked: it names the
	// account's host (<slug>.monday.com) in an item's link when the API gives none.
	AccountSlug string `json:"accountSlug,omitempty"`
}

// Ticket is an issue or item created in a tracker from a run, as recorded on the run.
type Ticket struct {
	ID             string
	OrganizationID string
	ExecutionID    string
	Provider       string // ProviderLinear or ProviderMonday
	ExternalID     string // the tracker's ID of the issue or item
	Identifier     string // Linear's human key ("ENG-123"); empty for Monday.com
	URL            string
	Title          string
	CreatedBy      string // user ID
	CreatedAt      time.Time
}
