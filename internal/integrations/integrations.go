// Package integrations links an organization to issue trackers and creates tickets from its
// runs. It keeps each organization's tracker settings with the API key sealed (secretbox, a key
// of its own), checks a key with the tracker before saving it, unlinks any of the integration
// providers, and turns a finished run into a ticket whose description tells the run's story
// (status, failing tests, analysis, report link), recording the ticket on the run.
//
// The trackers are the providers of registry.go (Linear and Monday.com today), each a
// tracker.Tracker that speaks to its tracker (typed GraphQL operations over gqlclient): every
// call is bounded in time, and a key never appears in an error or a log line. The service
// knows a tracker only by its tracker.Spec: its name, its settings, its routes.
package integrations

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"verdict/internal/crypto/secretbox"
	"verdict/internal/domain"
	"verdict/internal/egress"
	"verdict/internal/identity"
	"verdict/internal/integrations/gqlclient"
	"verdict/internal/integrations/tracker"
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
	// Endpoints say where each tracker is, by provider; a tracker not named is reached at its
	// public API.
	Endpoints map[string]Endpoint
	// Timeout bounds each call to a tracker (default 15 s).
	Timeout time.Duration
	// HTTPClient, if set, carries the calls to the trackers at the server's addresses.
	HTTPClient *http.Client
	// Egress checks the addresses organizations choose for their own trackers (Jira's site) and
	// carries the calls to them; nil refuses every internal address.
	Egress *egress.Guard
	// ReportURL is the absolute link to a run's report, "" when it has none (the execution
	// view's htmlReportUrl); nil: tickets carry no link.
	ReportURL func(ctx context.Context, e *domain.Execution) string
	// Events, if set, hears of each ticket recorded on a run.
	Events Events
	Clock  domain.Clock
	NewID  func() string
	Log    *slog.Logger
}

// Endpoint is where a tracker is: its URL ("": its public API) and the API version to ask for
// ("": its default).
type Endpoint struct {
	URL     string
	Version string
}

// Service is the trackers' service.
type Service struct {
	store     store.Store
	box       *secretbox.Box
	egress    *egress.Guard
	trackers  map[string]tracker.Tracker // the registry's, opened, by provider
	timeout   time.Duration              // of each call to a tracker
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
	if d.Timeout <= 0 {
		d.Timeout = gqlclient.DefaultTimeout
	}
	trackers := make(map[string]tracker.Tracker, len(registry))
	for _, p := range registry {
		e := d.Endpoints[p.Provider]
		hc := d.HTTPClient
		if p.TenantURL() {
			hc = d.Egress.Client(d.Timeout)
		}
		trackers[p.Provider] = p.New(tracker.Config{URL: e.URL, Version: e.Version, Timeout: d.Timeout, HTTPClient: hc})
	}
	return &Service{store: d.Store, box: d.Box, egress: d.Egress, trackers: trackers, timeout: d.Timeout, reportURL: d.ReportURL,
		events: d.Events, clock: d.Clock, newID: d.NewID, log: d.Log}
}

// errUnknownTracker answers a tracker that is not registered.
var errUnknownTracker = domain.NotFound("Integration not found", "No such tracker")

// open is the registered tracker named provider and its description.
func (s *Service) open(provider string) (tracker.Spec, tracker.Tracker, error) {
	spec, ok := Lookup(provider)
	if !ok {
		return spec, nil, errUnknownTracker
	}
	return spec, s.trackers[provider], nil
}

// Bounds of what is saved.
const maxKeyBytes = 1024

func validation(format string, args ...any) *domain.Error {
	return domain.BadRequest("Validation error", fmt.Sprintf(format, args...))
}

func errNotConfigured(t tracker.Spec) *domain.Error {
	return domain.BadRequest("Integration not configured", fmt.Sprintf(
		"%s is not set up for your organization: an admin saves its settings with PUT /api/integrations/%s",
		t.Name, t.Provider))
}

func errDisabled(t tracker.Spec) *domain.Error {
	return domain.BadRequest("Integration disabled", fmt.Sprintf(
		"%s is turned off for your organization: an admin turns it on with PUT /api/integrations/%s",
		t.Name, t.Provider))
}

// upstreamError is the answer to a tracker's failure: 504 when it did not answer in time, else
// 502 with what it said. suffix ends the message ("; nothing was saved").
func (s *Service) upstreamError(t tracker.Spec, err error, suffix string) error {
	var ge *tracker.Error
	if !errors.As(err, &ge) || errors.Is(ge.Kind, context.Canceled) {
		return err
	}
	name, provider := t.Name, t.Provider
	switch {
	case errors.Is(ge.Kind, tracker.ErrTimeout):
		return domain.UpstreamTimeout("Tracker timeout",
			fmt.Sprintf("%s did not answer within %s%s", name, s.timeout, suffix))
	case errors.Is(ge.Kind, tracker.ErrKeyRefused):
		return domain.Upstream("Tracker error",
			fmt.Sprintf("%s refused the stored API key (%s): an admin saves a new one with PUT /api/integrations/%s%s",
				name, orDefault(ge.Message, "not authenticated"), provider, suffix))
	case errors.Is(ge.Kind, tracker.ErrUnreachable):
		return domain.Upstream("Tracker error", fmt.Sprintf("%s could not be reached: %s%s", name, ge.Message, suffix))
	case errors.Is(ge.Kind, tracker.ErrMalformed):
		return domain.Upstream("Tracker error",
			fmt.Sprintf("%s's answer could not be read: %s%s", name, ge.Message, suffix))
	default:
		return domain.Upstream("Tracker error", fmt.Sprintf("%s: %s%s", name, ge.Message, suffix))
	}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// Settings are an organization's settings of one tracker as the API shows them: never the key.
type Settings struct {
	Configured bool // a key is stored
	Enabled    bool // tickets can be created: a key is stored and the integration is on
	// Values are the tracker's settings (its Spec.Fields), by key; "" when unset.
	Values map[string]string
}

// Input saves an organization's settings of one tracker. APIKey nil keeps the stored key.
type Input struct {
	APIKey  *string
	Values  map[string]string // by the Spec.Fields' keys; a missing optional one is unset
	Enabled *bool             // nil: true
}

// stored returns the organization's integration with provider, nil when none is stored.
func (s *Service) stored(ctx context.Context, orgID, provider string) (*domain.Integration, error) {
	in, err := s.store.Integrations().Get(ctx, orgID, provider)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	return in, err
}

// Settings returns the organization's settings of the tracker provider; every member may read
// them.
func (s *Service) Settings(ctx context.Context, p *identity.Principal, provider string) (*Settings, error) {
	t, _, err := s.open(provider)
	if err != nil {
		return nil, err
	}
	in, err := s.stored(ctx, p.OrgID, provider)
	if err != nil || in == nil {
		return &Settings{Values: map[string]string{}}, err
	}
	return settingsView(t, in), nil
}

func settingsView(t tracker.Spec, in *domain.Integration) *Settings {
	v := &Settings{Configured: true, Enabled: in.Enabled, Values: make(map[string]string, len(t.Fields))}
	for _, f := range t.Fields {
		v.Values[f.Key] = in.Settings[f.Key]
	}
	return v
}

// checkedKey validates a key from a request: trimmed, 1 to maxKeyBytes, no blanks inside.
func checkedKey(t tracker.Spec, k *string) (string, error) {
	key := strings.TrimSpace(*k)
	if key == "" || len(key) > maxKeyBytes || strings.ContainsAny(key, " \t\r\n") {
		return "", validation("%s must be a key of 1 to %d characters without spaces", t.KeyMember(), maxKeyBytes)
	}
	return key, nil
}

// checkedValues validates a request's settings in the order of the tracker's fields: trimmed,
// present when required, matching the field's pattern; an address the organization chose is
// one the server may call (no internal address).
func (s *Service) checkedValues(t tracker.Spec, in map[string]string) (map[string]string, error) {
	out := make(map[string]string, len(t.Fields))
	for _, f := range t.Fields {
		v := strings.TrimSpace(in[f.Key])
		switch {
		case v == "" && f.Required:
			return nil, domain.BadRequest("Missing required fields", f.Key+" is required")
		case v != "" && f.Pattern != nil && !f.Pattern.MatchString(v):
			return nil, validation("%s", f.Rule)
		case v != "" && f.URL:
			if err := s.egress.CheckURL(v); err != nil {
				return nil, validation("%s %s", f.Key, strings.TrimPrefix(err.Error(), egress.ErrRefused.Error()+": "))
			}
			// The key travels in every call: only https, but to a host the operator allowed
			// (a service on their own network).
			if u, _ := url.Parse(v); u.Scheme != "https" && !s.egress.Allows(u.Hostname()) {
				return nil, validation("%s must be an https address (plain http only to a host the server's VERDICT_EGRESS_ALLOW names)", f.Key)
			}
		}
		out[f.Key] = v
	}
	return out, nil
}

// Save saves the organization's settings of the tracker provider (admins only). A new key is
// first checked with the tracker: one it refuses is 400 Invalid API key and nothing changes.
func (s *Service) Save(ctx context.Context, p *identity.Principal, provider string, in Input) (*Settings, error) {
	t, tr, err := s.open(provider)
	if err != nil {
		return nil, err
	}
	if err := p.RequireAdmin(); err != nil {
		return nil, err
	}
	values, err := s.checkedValues(t, in.Values)
	if err != nil {
		return nil, err
	}
	var key string
	var learnt map[string]string
	if in.APIKey != nil {
		if key, err = checkedKey(t, in.APIKey); err != nil {
			return nil, err
		}
		if learnt, err = tr.Check(ctx, key, values); err != nil {
			return nil, s.keyCheckFailed(p, t, err)
		}
	} else if t.CheckWithSettings {
		if err := s.recheck(ctx, p, t, tr, values); err != nil {
			return nil, err
		}
	}
	saved, err := s.save(ctx, p, t, key, in.Enabled, func(st domain.IntegrationSettings) {
		for k, v := range values {
			st[k] = v
		}
		for k, v := range learnt { // only with a new key: what the old one told stays
			st[k] = v
		}
	})
	if err != nil {
		return nil, err
	}
	return settingsView(t, saved), nil
}

// recheck checks the stored key of a tracker whose key depends on its settings against the
// settings being saved without a new key, when they differ from the stored ones.
func (s *Service) recheck(ctx context.Context, p *identity.Principal, t tracker.Spec, tr tracker.Tracker, values map[string]string) error {
	cur, err := s.stored(ctx, p.OrgID, t.Provider)
	if err != nil || cur == nil {
		return err // none stored: save asks for a key
	}
	same := true
	for _, f := range t.Fields {
		same = same && cur.Settings[f.Key] == values[f.Key]
	}
	if same {
		return nil
	}
	key, err := s.box.Open(cur.KeyCipher)
	if err != nil {
		return errors.New("the stored tracker key could not be opened")
	}
	if _, err := tr.Check(ctx, string(key), values); err != nil {
		return s.keyCheckFailed(p, t, err)
	}
	return nil
}

// keyCheckFailed is the answer when checking a new key failed: 400 Invalid API key when the
// tracker refused it, else the tracker's failure (502, 504); nothing is saved either way.
func (s *Service) keyCheckFailed(p *identity.Principal, t tracker.Spec, err error) error {
	if errors.Is(err, tracker.ErrKeyRefused) {
		return domain.BadRequest("Invalid API key", t.Name+" refused this API key; nothing was saved")
	}
	var te *tracker.Error
	if errors.As(err, &te) && errors.Is(te.Kind, tracker.ErrSettingsRefused) {
		return domain.BadRequest("Invalid settings", t.Name+": "+te.Message+"; nothing was saved")
	}
	s.log.Warn("checking an organization's tracker key failed", "org", p.OrgID, "provider", t.Provider, "err", err)
	return s.upstreamError(t, err, "; the key could not be checked, and nothing was saved")
}

// save stores the organization's integration with provider: the settings edit makes, the key
// (sealed) when one is given, else the stored one. Saving turns the integration on unless
// enabled says false. The change is audit-logged, without the key.
func (s *Service) save(ctx context.Context, p *identity.Principal, t tracker.Spec, key string, enabled *bool,
	edit func(domain.IntegrationSettings)) (*domain.Integration, error) {
	provider := t.Provider
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
				return domain.BadRequest("Missing required fields", t.KeyMember()+" is required: no key is stored yet")
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
		in.Settings = maps.Clone(cur.Settings)
		if in.Settings == nil {
			in.Settings = domain.IntegrationSettings{}
		}
		edit(in.Settings)
		in.Enabled = enabled == nil || *enabled
		in.UpdatedAt = now
		if err := tx.Integrations().Put(ctx, &in); err != nil {
			return err
		}
		details := map[string]any{"provider": provider, "enabled": in.Enabled, "keyChanged": key != ""}
		for _, f := range t.Fields {
			details[f.Key] = in.Settings[f.Key]
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
	if _, registered := Lookup(provider); !registered && !domain.ValidIntegrationProvider(provider) {
		return false, domain.BadRequest("Unknown provider", "provider must be one of "+strings.Join(providers(), ", "))
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

// providers are the providers an organization can unlink: domain.IntegrationProviders, then
// any registered tracker they do not name.
func providers() []string {
	out := slices.Clone(domain.IntegrationProviders)
	for _, p := range registry {
		if !slices.Contains(out, p.Provider) {
			out = append(out, p.Provider)
		}
	}
	return out
}
