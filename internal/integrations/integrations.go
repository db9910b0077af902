// Package integrations links an organization to issue trackers (Linear and Monday.com) and
// creates tickets from its runs. It keeps each organization's tracker settings with the API
// key sealed (secretbox, a key of its own), checks a key with the tracker before saving it,
// unlinks any of the integration providers, and turns a finished run into a Linear issue or a
// Monday.com item whose description tells the run's story (status, failing tests, analysis,
// report link), recording the ticket on the run.
//
// The trackers are reached through linear and monday (typed GraphQL operations over gqlclient):
// every call is bounded in time, and a key never appears in an error or a log line.
package integrations

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"time"

	"verdict/internal/crypto/secretbox"
	"verdict/internal/domain"
	"verdict/internal/identity"
	"verdict/internal/integrations/gqlclient"
	"verdict/internal/integrations/linear"
	"verdict/internal/integrations/monday"
	"verdict/internal/store"
)

// Events announces a run whose tickets changed (the realtime hub).
type Events interface {
	ExecutionUpdated(e *domain.Execution)
}

// Deps are what New needs. Store and Box are required.
type Deps struct {
	Store store.Store
	// Box seals the organizations' tracker keys.
	Box *secretbox.Box
	// LinearURL, MondayURL and MondayAPIVersion say where the trackers are (empty: their public
	// APIs and linear.DefaultURL, monday.DefaultURL, monday.DefaultAPIVersion).
	LinearURL        string
	MondayURL        string
	MondayAPIVersion string
	// Timeout bounds each call to a tracker (default 15 s).
	Timeout time.Duration
	// HTTPClient, if set, carries the calls to the trackers.
	HTTPClient *http.Client
	// ReportURL is the absolute link to a run's report, "" when it has none (the execution
	// view's htmlReportUrl); nil: tickets carry no link.
	ReportURL func(ctx context.Context, e *domain.Execution) string
	// Events, if set, hears of each ticket recorded on a run.
	Events Events
	Clock  domain.Clock
	NewID  func() string
	Log    *slog.Logger
}

// Service is the trackers' service.
type Service struct {
	store     store.Store
	box       *secretbox.Box
	linear    *linear.Client
	monday    *monday.Client
	timeout   time.Duration // of each call to a tracker
	reportURL func(ctx context.Context, e *domain.Execution) string
	events    Events
	clock     domain.Clock
	newID     func() string
	log       *slog.Logger
}

// New builds the service.
func New(d Deps) *Service {
	if d.Clock == nil {
		d.Clock = domain.SystemClock
	}
	if d.NewID == nil {
		d.NewID = domain.NewID
	}
	if d.Log == nil {
		d.Log = slog.Default()
	}
	if d.ReportURL == nil {
		d.ReportURL = func(context.Context, *domain.Execution) string { return "" }
	}
	lin := linear.New(linear.Config{URL: d.LinearURL, Timeout: d.Timeout, HTTPClient: d.HTTPClient})
	return &Service{store: d.Store, box: d.Box, linear: lin,
		monday: monday.New(monday.Config{URL: d.MondayURL, APIVersion: d.MondayAPIVersion, Timeout: d.Timeout,
			HTTPClient: d.HTTPClient}),
		timeout: lin.Timeout(), reportURL: d.ReportURL, events: d.Events, clock: d.Clock, newID: d.NewID, log: d.Log}
}

// trackerName is a provider's name in messages.
var trackerName = map[string]string{domain.ProviderLinear: "Linear", domain.ProviderMonday: "Monday.com"}

// Bounds of what is saved.
const maxKeyBytes = 1024

var (
	teamIDPattern  = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	boardIDPattern = regexp.MustCompile(`^[0-9]{1,20}$`)
	groupIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,100}$`)
)

func validation(format string, args ...any) *domain.Error {
	return domain.BadRequest("Validation error", fmt.Sprintf(format, args...))
}

func errNotConfigured(provider string) *domain.Error {
	return domain.BadRequest("Integration not configured", fmt.Sprintf(
		"%s is not set up for your organization: an admin saves its settings with PUT /api/integrations/%s",
		trackerName[provider], provider))
}

func errDisabled(provider string) *domain.Error {
	return domain.BadRequest("Integration disabled", fmt.Sprintf(
		"%s is turned off for your organization: an admin turns it on with PUT /api/integrations/%s",
		trackerName[provider], provider))
}

// upstreamError is the answer to a tracker's failure: 504 when it did not answer in time, else
// 502 with what it said. suffix ends the message ("; nothing was saved").
func (s *Service) upstreamError(provider string, err error, suffix string) error {
	var ge *gqlclient.Error
	if !errors.As(err, &ge) || errors.Is(ge.Kind, context.Canceled) {
		return err
	}
	name := trackerName[provider]
	switch {
	case errors.Is(ge.Kind, gqlclient.ErrTimeout):
		return domain.NewError(http.StatusGatewayTimeout, "Tracker timeout",
			fmt.Sprintf("%s did not answer within %s%s", name, s.timeout, suffix))
	case errors.Is(ge.Kind, gqlclient.ErrKeyRefused):
		return domain.NewError(http.StatusBadGateway, "Tracker error",
			fmt.Sprintf("%s refused the stored API key (%s): an admin saves a new one with PUT /api/integrations/%s%s",
				name, orDefault(ge.Message, "not authenticated"), provider, suffix))
	case errors.Is(ge.Kind, gqlclient.ErrUnreachable):
		return domain.NewError(http.StatusBadGateway, "Tracker error", fmt.Sprintf("%s could not be reached: %s%s", name, ge.Message, suffix))
	case errors.Is(ge.Kind, gqlclient.ErrMalformed):
		return domain.NewError(http.StatusBadGateway, "Tracker error",
			fmt.Sprintf("%s's answer could not be read: %s%s", name, ge.Message, suffix))
	default:
		return domain.NewError(http.StatusBadGateway, "Tracker error", fmt.Sprintf("%s: %s%s", name, ge.Message, suffix))
	}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// LinearSettings are an organization's Linear settings as the API shows them: never the key.
type LinearSettings struct {
	Configured bool // a key is stored
	Enabled    bool // tickets can be created: a key is stored and the integration is on
	TeamID     string
}

// MondaySettings are an organization's Monday.com settings as the API shows them: never the key.
type MondaySettings struct {
	Configured bool
	Enabled    bool
	BoardID    string
	GroupID    string
}

// LinearInput saves an organization's Linear settings. APIKey nil keeps the stored key.
type LinearInput struct {
	APIKey  *string
	TeamID  string
	Enabled *bool // nil: true
}

// MondayInput saves an organization's Monday.com settings. APIKey nil keeps the stored token.
type MondayInput struct {
	APIKey  *string
	BoardID string
	GroupID string // empty: the board's top group
	Enabled *bool  // nil: true
}

// stored returns the organization's integration with provider, nil when none is stored.
func (s *Service) stored(ctx context.Context, orgID, provider string) (*domain.Integration, error) {
	in, err := s.store.Integrations().Get(ctx, orgID, provider)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	return in, err
}

// Linear returns the organization's Linear settings; every member may read them.
func (s *Service) Linear(ctx context.Context, p *identity.Principal) (*LinearSettings, error) {
	in, err := s.stored(ctx, p.OrgID, domain.ProviderLinear)
	if err != nil || in == nil {
		return &LinearSettings{}, err
	}
	return linearView(in), nil
}

func linearView(in *domain.Integration) *LinearSettings {
	return &LinearSettings{Configured: true, Enabled: in.Enabled, TeamID: in.Settings.TeamID}
}

// Monday returns the organization's Monday.com settings; every member may read them.
func (s *Service) Monday(ctx context.Context, p *identity.Principal) (*MondaySettings, error) {
	in, err := s.stored(ctx, p.OrgID, domain.ProviderMonday)
	if err != nil || in == nil {
		return &MondaySettings{}, err
	}
	return mondayView(in), nil
}

func mondayView(in *domain.Integration) *MondaySettings {
	return &MondaySettings{Configured: true, Enabled: in.Enabled, BoardID: in.Settings.BoardID, GroupID: in.Settings.GroupID}
}

// checkedKey validates a key from a request: trimmed, 1 to maxKeyBytes, no blanks inside.
func checkedKey(k *string) (string, error) {
	key := strings.TrimSpace(*k)
	if key == "" || len(key) > maxKeyBytes || strings.ContainsAny(key, " \t\r\n") {
		return "", validation("apiKey must be a key of 1 to %d characters without spaces", maxKeyBytes)
	}
	return key, nil
}

// SaveLinear saves the organization's Linear settings (admins only). A new key is first checked
// with Linear (viewer { id }): one it refuses is 400 Invalid API key and nothing changes.
func (s *Service) SaveLinear(ctx context.Context, p *identity.Principal, in LinearInput) (*LinearSettings, error) {
	if err := p.RequireAdmin(); err != nil {
		return nil, err
	}
	team := strings.TrimSpace(in.TeamID)
	if team == "" {
		return nil, domain.BadRequest("Missing required fields", "teamId is required")
	}
	if !teamIDPattern.MatchString(team) {
		return nil, validation("teamId must be a Linear team ID (letters, digits, - and _, at most 64)")
	}
	var key string
	if in.APIKey != nil {
		var err error
		if key, err = checkedKey(in.APIKey); err != nil {
			return nil, err
		}
		if err := s.linear.CheckKey(ctx, key); err != nil {
			return nil, s.keyCheckFailed(p, domain.ProviderLinear, err)
		}
	}
	saved, err := s.save(ctx, p, domain.ProviderLinear, key, in.Enabled, func(st *domain.IntegrationSettings) {
		st.TeamID = team
	})
	if err != nil {
		return nil, err
	}
	return linearView(saved), nil
}

// SaveMonday saves the organization's Monday.com settings (admins only). A new token is first
// checked with Monday.com (me { id account { slug } }): one it refuses is 400 Invalid API key
// and nothing changes.
func (s *Service) SaveMonday(ctx context.Context, p *identity.Principal, in MondayInput) (*MondaySettings, error) {
	if err := p.RequireAdmin(); err != nil {
		return nil, err
	}
	board, group := strings.TrimSpace(in.BoardID), strings.TrimSpace(in.GroupID)
	if board == "" {
		return nil, domain.BadRequest("Missing required fields", "boardId is required")
	}
	if !boardIDPattern.MatchString(board) {
		return nil, validation("boardId must be a Monday.com board ID (digits, at most 20)")
	}
	if group != "" && !groupIDPattern.MatchString(group) {
		return nil, validation("groupId must be a Monday.com group ID (letters, digits, - and _, at most 100)")
	}
	var key, slug string
	if in.APIKey != nil {
		var err error
		if key, err = checkedKey(in.APIKey); err != nil {
			return nil, err
		}
		acct, err := s.monday.CheckKey(ctx, key)
		if err != nil {
			return nil, s.keyCheckFailed(p, domain.ProviderMonday, err)
		}
		slug = acct.Slug
	}
	saved, err := s.save(ctx, p, domain.ProviderMonday, key, in.Enabled, func(st *domain.IntegrationSettings) {
		st.BoardID, st.GroupID = board, group
		if key != "" {
			st.AccountSlug = slug
		}
	})
	if err != nil {
		return nil, err
	}
	return mondayView(saved), nil
}

// keyCheckFailed is the answer when checking a new key failed: 400 Invalid API key when the
// tracker refused it, else the tracker's failure (502, 504); nothing is saved either way.
func (s *Service) keyCheckFailed(p *identity.Principal, provider string, err error) error {
	if errors.Is(err, gqlclient.ErrKeyRefused) {
		return domain.BadRequest("Invalid API key", trackerName[provider]+" refused this API key; nothing was saved")
	}
	s.log.Warn("checking an organization's tracker key failed", "org", p.OrgID, "provider", provider, "err", err)
	return s.upstreamError(provider, err, "; the key could not be checked, and nothing was saved")
}

// save stores the organization's integration with provider: the settings edit makes, the key
// (sealed) when one is given, else the stored one. Saving turns the integration on unless
// enabled says false. The change is audit-logged, without the key.
func (s *Service) save(ctx context.Context, p *identity.Principal, provider, key string, enabled *bool,
	edit func(*domain.IntegrationSettings)) (*domain.Integration, error) {
	var saved *domain.Integration
	err := s.store.InTx(ctx, func(tx store.Store) error {
		if err := tx.Organizations().Lock(ctx, p.OrgID); err != nil {
			return err
		}
		now := s.clock()
		cur, err := tx.Integrations().Get(ctx, p.OrgID, provider)
		switch {
		case errors.Is(err, store.ErrNotFound):
			if key == "" {
				return domain.BadRequest("Missing required fields", "apiKey is required: no key is stored yet")
			}
			cur = &domain.Integration{OrganizationID: p.OrgID, Provider: provider, CreatedAt: now}
		case err != nil:
			return err
		}
		in := *cur
		if key != "" {
			sealed, err := s.box.Seal([]byte(key))
			if err != nil {
				return err
			}
			in.KeyCipher = sealed
		}
		edit(&in.Settings)
		in.Enabled = enabled == nil || *enabled
		in.UpdatedAt = now
		if err := tx.Integrations().Put(ctx, &in); err != nil {
			return err
		}
		details := map[string]any{"provider": provider, "enabled": in.Enabled, "keyChanged": key != ""}
		switch provider {
		case domain.ProviderLinear:
			details["teamId"] = in.Settings.TeamID
		case domain.ProviderMonday:
			details["boardId"], details["groupId"] = in.Settings.BoardID, in.Settings.GroupID
		}
		saved = &in
		return s.audit(ctx, tx, p, "integration.updated", provider, details)
	})
	return saved, err
}

func (s *Service) audit(ctx context.Context, tx store.Store, p *identity.Principal, action, provider string, details map[string]any) error {
	return tx.Audit().Append(ctx, &domain.AuditEntry{ID: s.newID(), OrganizationID: p.OrgID, ActorID: p.UserID,
		Action: action, TargetType: "integration", TargetID: provider, Details: details, CreatedAt: s.clock()})
}

// Remove unlinks the organization from provider (admins only): its stored credentials and
// settings are deleted, and removed says whether there were any. The tickets created through it
// stay on their runs. An unknown provider is 400.
func (s *Service) Remove(ctx context.Context, p *identity.Principal, provider string) (removed bool, err error) {
	if err := p.RequireAdmin(); err != nil {
		return false, err
	}
	if !domain.ValidIntegrationProvider(provider) {
		return false, domain.BadRequest("Unknown provider", "provider must be one of "+strings.Join(domain.IntegrationProviders, ", "))
	}
	err = s.store.InTx(ctx, func(tx store.Store) error {
		var err error
		if removed, err = tx.Integrations().Delete(ctx, p.OrgID, provider); err != nil || !removed {
			return err
		}
		return s.audit(ctx, tx, p, "integration.removed", provider, map[string]any{"provider": provider})
	})
	return removed, err
}
