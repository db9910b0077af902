// Package scm links an organization's projects to their source-control hosts (GitHub, GitLab):
// each organization's token per host, sealed (secretbox, a key of its own) and checked with the
// host on save; projects' inbound hooks, whose signed deliveries (a push, a pull or merge
// request with new commits) queue runs; and the post-run step that reports a run to the commit
// its labels name, as a commit status (pending when queued, then its verdict) and one
// pull-request comment kept up to date. Every call to a host goes through the egress guard
// (the API address is the tenant's choice), is bounded in time, and never carries the token
// into an error or a log line.
//
// The hosts are the providers of hosts.go: each a host.Host (its REST API) and host.Hooks (its
// webhooks).
package scm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"verdict/internal/crypto/secretbox"
	"verdict/internal/domain"
	"verdict/internal/egress"
	"verdict/internal/executions"
	"verdict/internal/history"
	"verdict/internal/identity"
	"verdict/internal/scm/host"
	"verdict/internal/store"
)

// Runs queues the runs hooks ask for (the executions service).
type Runs interface {
	Queue(ctx context.Context, p *identity.Principal, in executions.QueueInput) (*domain.Execution, error)
}

// Deps are what New needs. Store, Box, Egress and Runs are required.
type Deps struct {
	Store store.Store
	// Box seals the organizations' tokens and the hooks' secrets.
	Box *secretbox.Box
	// Egress guards the calls to the hosts, whose address an organization may choose.
	Egress *egress.Guard
	Runs   Runs
	// PublicURL is where the hosts reach Verdict (hooks' URLs) and people open runs.
	PublicURL string
	// ReportURL is the absolute link to a run's report, "" when it has none; nil: none.
	ReportURL func(ctx context.Context, e *domain.Execution) string
	// Compare compares a finished run with its baseline (history.Service.Compare), for the new
	// failures a pull request's comment lists; nil: the comment lists none.
	Compare func(ctx context.Context, p *identity.Principal, taskID, with string) (*history.Comparison, error)
	// Timeout bounds each call to a host (default 15 s).
	Timeout time.Duration
	Clock   domain.Clock
	Log     *slog.Logger
}

// Service is the source-control service.
type Service struct {
	store     store.Store
	box       *secretbox.Box
	guard     *egress.Guard
	client    *http.Client
	runs      Runs
	publicURL string
	reportURL func(ctx context.Context, e *domain.Execution) string
	compare   func(ctx context.Context, p *identity.Principal, taskID, with string) (*history.Comparison, error)
	timeout   time.Duration
	clock     domain.Clock
	log       *slog.Logger
	pruned    atomic.Int64 // when deliveries were last pruned, unix ms
}

// New builds the service.
func New(d Deps) *Service {
	if d.Clock == nil {
		d.Clock = domain.SystemClock
	}
	if d.Log == nil {
		d.Log = slog.Default()
	}
	if d.Timeout <= 0 {
		d.Timeout = host.DefaultTimeout
	}
	if d.ReportURL == nil {
		d.ReportURL = func(context.Context, *domain.Execution) string { return "" }
	}
	return &Service{store: d.Store, box: d.Box, guard: d.Egress, client: d.Egress.Client(d.Timeout), runs: d.Runs,
		publicURL: strings.TrimRight(d.PublicURL, "/"), reportURL: d.ReportURL, compare: d.Compare, timeout: d.Timeout, clock: d.Clock, log: d.Log}
}

var errUnknownProvider = domain.NotFound("Integration not found", "No such source-control host: github or gitlab")

func validation(format string, args ...any) *domain.Error {
	return domain.BadRequest("Validation error", fmt.Sprintf(format, args...))
}

// Settings are an organization's settings of one host as the API shows them: never the token.
type Settings struct {
	Configured bool   // a token is stored
	APIURL     string // the API address chosen; "" for the public host's
}

// SaveInput saves an organization's settings of one host: a token, always checked with the host.
type SaveInput struct {
	Token  string
	APIURL string // "" for the public host
}

// settingAPIURL is the integration setting that holds the API address.
const settingAPIURL = "apiUrl"

// maxTokenBytes bounds a token.
const maxTokenBytes = 1024

// Settings returns the organization's settings of provider; every member may read them.
func (s *Service) Settings(ctx context.Context, p *identity.Principal, provider string) (*Settings, error) {
	if !domain.ValidSCMProvider(provider) {
		return nil, errUnknownProvider
	}
	in, err := s.store.Integrations().Get(ctx, p.OrgID, provider)
	if errors.Is(err, store.ErrNotFound) {
		return &Settings{}, nil
	}
	if err != nil {
		return nil, err
	}
	return &Settings{Configured: true, APIURL: in.Settings[settingAPIURL]}, nil
}

// Save stores the organization's token for provider (admins only) once the host accepted it: a
// token the host refuses is 400 Invalid token and nothing changes; an API address the egress
// guard refuses is 400 too.
func (s *Service) Save(ctx context.Context, p *identity.Principal, provider string, in SaveInput) (*Settings, error) {
	if !domain.ValidSCMProvider(provider) {
		return nil, errUnknownProvider
	}
	if err := p.RequireAdmin(); err != nil {
		return nil, err
	}
	token := strings.TrimSpace(in.Token)
	if token == "" || len(token) > maxTokenBytes || strings.ContainsAny(token, " \t\r\n") {
		return nil, validation("token must be a token of 1 to %d characters without spaces", maxTokenBytes)
	}
	apiURL := strings.TrimRight(strings.TrimSpace(in.APIURL), "/")
	if apiURL != "" {
		if len(apiURL) > 2048 {
			return nil, validation("apiUrl is too long")
		}
		if err := s.guard.CheckURL(apiURL); err != nil {
			return nil, validation("apiUrl %s", err.Error())
		}
	}
	if err := s.open(provider, apiURL).Check(ctx, token); err != nil {
		return nil, s.checkFailed(p, provider, err)
	}
	sealed, err := s.box.Seal([]byte(token))
	if err != nil {
		return nil, err
	}
	err = s.store.InTx(ctx, func(tx store.Store) error {
		if err := tx.Organizations().Lock(ctx, p.OrgID); err != nil {
			return err
		}
		now := s.clock()
		created := now
		if cur, err := tx.Integrations().Get(ctx, p.OrgID, provider); err == nil {
			created = cur.CreatedAt
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if err := tx.Integrations().Put(ctx, &domain.Integration{OrganizationID: p.OrgID, Provider: provider, KeyCipher: sealed,
			Settings: domain.IntegrationSettings{settingAPIURL: apiURL}, Enabled: true, CreatedAt: created, UpdatedAt: now}); err != nil {
			return err
		}
		return tx.Audit().Append(ctx, &domain.AuditEntry{ID: domain.NewID(), OrganizationID: p.OrgID, ActorID: p.UserID,
			Action: "integration.updated", TargetType: "integration", TargetID: provider,
			Details: map[string]any{"provider": provider, "apiUrl": apiURL, "keyChanged": true}, CreatedAt: now})
	})
	if err != nil {
		return nil, err
	}
	return &Settings{Configured: true, APIURL: apiURL}, nil
}

// checkFailed is the answer when checking a token failed: 400 when the host refused it (or the
// address is not a host's API), else 502 or 504; nothing is saved either way.
func (s *Service) checkFailed(p *identity.Principal, provider string, err error) error {
	name := hostName(provider)
	var ce *host.CallError
	if !errors.As(err, &ce) {
		return err
	}
	switch {
	case errors.Is(err, host.ErrRefused):
		return domain.BadRequest("Invalid token", name+" refused this token; nothing was saved")
	case errors.Is(err, host.ErrNotFound):
		return domain.BadRequest("Invalid token", name+" answered 404 at this API address (is apiUrl the API's root?); nothing was saved")
	case errors.Is(err, egress.ErrRefused):
		return validation("apiUrl %s", ce.Message)
	case errors.Is(err, host.ErrTimeout):
		return domain.UpstreamTimeout("Host timeout", fmt.Sprintf("%s did not answer within %s; the token could not be checked, and nothing was saved", name, s.timeout))
	}
	s.log.Warn("checking an organization's source-control token failed", "org", p.OrgID, "provider", provider, "err", err)
	return domain.Upstream("Host error", fmt.Sprintf("%s: %s; the token could not be checked, and nothing was saved", name, ce.Message))
}

func hostName(provider string) string {
	if provider == domain.ProviderGitLab {
		return "GitLab"
	}
	return "GitHub"
}

// token is the organization's token for provider and the API address; ok false when none is
// stored.
func (s *Service) token(ctx context.Context, st store.Store, orgID, provider string) (token, apiURL string, ok bool, err error) {
	in, err := st.Integrations().Get(ctx, orgID, provider)
	if errors.Is(err, store.ErrNotFound) {
		return "", "", false, nil
	}
	if err != nil {
		return "", "", false, err
	}
	plain, err := s.box.Open(in.KeyCipher)
	if err != nil {
		return "", "", false, fmt.Errorf("source-control token of %s: %w", provider, err)
	}
	return string(plain), in.Settings[settingAPIURL], true, nil
}

// pruneEvery is how often a replica prunes the deliveries past deliveryMemory.
const pruneEvery = time.Minute

// deliveryMemory is how long a hook remembers a delivery's ID (the hosts redeliver within days).
const deliveryMemory = 7 * 24 * time.Hour

// prune removes the deliveries remembered longer than deliveryMemory, at most once per
// pruneEvery on this replica.
func (s *Service) prune(ctx context.Context) {
	now := s.clock()
	last := s.pruned.Load()
	if now.UnixMilli()-last < pruneEvery.Milliseconds() || !s.pruned.CompareAndSwap(last, now.UnixMilli()) {
		return
	}
	if _, err := s.store.SourceControl().PruneDeliveries(ctx, now.Add(-deliveryMemory)); err != nil {
		s.log.Warn("pruning source-control deliveries failed", "err", err)
	}
}
