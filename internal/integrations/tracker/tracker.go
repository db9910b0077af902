// Package tracker is what an issue tracker implements to take tickets from Verdict's runs, and
// how it describes itself to the service, the API and the dashboard. The trackers' service
// (internal/integrations) keeps each organization's settings and sealed key, checks a new key
// with the tracker, and turns a run into a ticket; a tracker package (integrations/linear,
// integrations/monday) only speaks to its tracker. A tracker is registered with one line in
// integrations/registry.go.
package tracker

import (
	"context"
	"net/http"
	"regexp"
	"time"
)

// Tracker speaks to one issue tracker on behalf of an organization: every call brings the
// organization's key. Its errors are [*Error] values (a refused key matches
// ErrKeyRefused), which the service words for the caller; they never carry the key.
type Tracker interface {
	// Check asks the tracker whose key this is, with the settings being saved (Spec.Fields'
	// values: where the tracker is, when it is the organization's own): nil when it accepts
	// it. learnt are settings the tracker told on the way (Monday.com's account slug), kept
	// with the organization's others and never shown.
	Check(ctx context.Context, key string, settings map[string]string) (learnt map[string]string, err error)
	// CreateTicket files a ticket in the place settings name (Spec.Fields' values, and what
	// Check learnt).
	CreateTicket(ctx context.Context, key string, settings map[string]string, t Ticket) (*Filed, error)
}

// Ticket is what a ticket says: its title and the run's story, in the forms trackers take.
type Ticket struct {
	Title    string
	Markdown string
	HTML     string
	// ADF is the story as an Atlassian Document Format document (JSON), for Jira.
	ADF []byte
}

// Filed is a ticket the tracker created.
type Filed struct {
	ExternalID string // the tracker's ID of the ticket
	Identifier string // a human key ("ENG-123"); empty when the tracker has none
	URL        string
	Title      string // as the tracker stored it; empty: as asked
	// Incomplete is what failed after the ticket was created (Monday.com's update with the
	// run's details): the ticket exists and is recorded, and the caller is told.
	Incomplete error
}

// Config is where a tracker is and how its calls are made.
type Config struct {
	URL     string // "": the tracker's public API
	Version string // the API version to ask for, where the tracker has versions; "": its default
	Timeout time.Duration
	// HTTPClient, if set, carries the calls.
	HTTPClient *http.Client
}

// Provider is a tracker as it is registered: its description and how to open it.
type Provider struct {
	Spec
	New func(Config) Tracker
}

// Spec describes a tracker: its name, the settings an organization gives it besides the key,
// and the names the API published for it, kept as they are.
type Spec struct {
	// Provider is its identifier in routes, forms and the store ("linear").
	Provider string
	// Name is how messages and pages name it ("Linear").
	Name string
	// Credential is what the tracker calls its key ("key", "token"): "API key" on the page.
	Credential string
	// CredentialMember is the member of the API's PUT body that carries the key; "": apiKey.
	CredentialMember string
	// CheckWithSettings says that the key is checked against the settings (Jira's site and
	// account e-mail), so a save that changes them checks the stored key again.
	CheckWithSettings bool
	// Fields are its settings besides the key, in the order the API and the page show them.
	Fields []Field
	// TicketRoute is the API's path that files a ticket ("/api/linear/issues").
	TicketRoute string
	// TicketNoun is what the tracker calls a ticket ("issue", "item"): the API shows a ticket's
	// ID and link as <noun>Id and <noun>Url, and words a failure "Failed to create <noun>".
	TicketNoun string
	// RunField is the member of a run's view that lists its tickets in this tracker
	// ("trackerAIssues").
	RunField string
	// Identifier says whether its tickets have a human key, shown as identifier.
	Identifier bool
}

// Field is one of a tracker's settings.
type Field struct {
	Key         string // its name in JSON, forms and the stored settings ("teamId")
	ID          string // its input's id on the page, after the provider's ("team": linear-team)
	Label       string // "Team ID"
	Required    bool
	Pattern     *regexp.Regexp // a value must match it
	Rule        string         // the message when it does not
	Unset       string         // what the page shows when it is empty ("none")
	Placeholder string         // the input's placeholder
	// URL marks the address of the organization's own tracker (Jira's site): checked on save as
	// every URL a tenant chooses, and the tracker's calls reach it only through a client that
	// refuses internal addresses.
	URL bool
}

// KeyMember is the member of the API's PUT body that carries the key.
func (s Spec) KeyMember() string {
	if s.CredentialMember == "" {
		return "apiKey"
	}
	return s.CredentialMember
}

// TenantURL reports whether the tracker is at an address the organization chose.
func (s Spec) TenantURL() bool {
	for _, f := range s.Fields {
		if f.URL {
			return true
		}
	}
	return false
}
