package domain

import (
	"encoding/json"
	"slices"
	"time"
)

// IntegrationProviders are the outside services an organization can link, by the lowercase
// identifier the API uses: source-control and CI hosts, issue and work trackers, and a chat
// provider. Only the trackers (Linear, Monday.com: integrations' registry) store anything today;
// every one of them can be unlinked, and so can any tracker registered later.
var IntegrationProviders = []string{"github", "gitlab", "bitbucket", "azuredevops", "jira", "linear", "monday", "slack"}

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

// IntegrationSettings are an integration's settings besides its key, by name ("teamId"),
// stored as one JSON document: each tracker declares its own and may learn some from the
// tracker (Monday.com's "accountSlug"). An empty value is not kept.
type IntegrationSettings map[string]string

// MarshalJSON writes the settings without their empty values; none is {}.
func (s IntegrationSettings) MarshalJSON() ([]byte, error) {
	kept := make(map[string]string, len(s))
	for k, v := range s {
		if v != "" {
			kept[k] = v
		}
	}
	return json.Marshal(kept)
}

// Ticket is an issue or item created in a tracker from a run, as recorded on the run.
type Ticket struct {
	ID             string
	OrganizationID string
	ExecutionID    string
	Provider       string // the tracker's provider ("linear")
	ExternalID     string // the tracker's ID of the issue or item
	Identifier     string // Linear's human key ("ENG-123"); empty for Monday.com
	URL            string
	Title          string
	CreatedBy      string // user ID
	CreatedAt      time.Time
}
