package scm

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"verdict/internal/domain"
	"verdict/internal/executions"
	"verdict/internal/identity"
	"verdict/internal/store"
)

// HookInput is a new hook.
type HookInput struct {
	Provider string
	Branches []string // globs; none: every branch
	Events   []string // the host's event names; none: push and the host's request event
	// BaseURL is the base URL template of the runs the hook queues ({pr}, {branch}, {commit});
	// "": the project's.
	BaseURL string
}

// HookInfo is a hook as the API shows it: never its secret, which only CreateHook returns.
type HookInfo struct {
	domain.Hook
	URL string // where the host delivers its events
}

// CreatedHook is a new hook with its secret, shown once.
type CreatedHook struct {
	HookInfo
	Secret string
}

var (
	errProject404 = domain.NotFound("Project not found", "No such project in your organization")
	errHook404    = domain.NotFound("Hook not found", "No such hook on this project")
	errReadOnly   = domain.Forbidden("Forbidden", "Viewers cannot change projects' hooks")
)

// maxHooks bounds a project's hooks.
const maxHooks = 20

// url is where the host delivers to hook h.
func (s *Service) url(h *domain.Hook) string {
	return s.publicURL + "/api/hooks/" + h.Provider + "/" + h.ID
}

// CreateHook adds an inbound hook to the project (admins and developers). Its secret is in the
// answer only.
func (s *Service) CreateHook(ctx context.Context, p *identity.Principal, projectID string, in HookInput) (*CreatedHook, error) {
	if !p.CanWrite() {
		return nil, errReadOnly
	}
	pr, ok := providers[in.Provider]
	if !ok {
		return nil, validation("provider must be github or gitlab")
	}
	if len(in.Branches) > maxGlobs {
		return nil, validation("at most %d branches", maxGlobs)
	}
	for _, g := range in.Branches {
		if !validGlob(g) {
			return nil, validation("branches: %q must be a glob of 1 to %d characters without spaces (main, release/*)", g, maxGlobLen)
		}
	}
	for _, e := range in.Events {
		if !slices.Contains(pr.hooks.Events(), e) {
			return nil, validation("events: %q is not one of %s", e, strings.Join(pr.hooks.Events(), ", "))
		}
	}
	if in.BaseURL != "" {
		probe := expand(in.BaseURL, "1", "branch", "0123456789abcdef0123456789abcdef01234567")
		if len(in.BaseURL) > 2048 || !strings.HasPrefix(probe, "http://") && !strings.HasPrefix(probe, "https://") {
			return nil, validation("baseUrl must be an http(s) URL template such as https://pr-{pr}.preview.example.com")
		}
	}
	secret := domain.RandomHex(32)
	sealed, err := s.box.Seal([]byte(secret))
	if err != nil {
		return nil, err
	}
	h := &domain.Hook{ID: domain.NewID(), OrganizationID: p.OrgID, ProjectID: projectID, Provider: in.Provider,
		SecretCipher: sealed, Branches: in.Branches, Events: in.Events, BaseURLTemplate: in.BaseURL, CreatedAt: s.clock()}
	err = s.store.InTx(ctx, func(tx store.Store) error {
		if err := tx.Organizations().Lock(ctx, p.OrgID); err != nil {
			return err
		}
		hooks, err := tx.SourceControl().ListHooks(ctx, p.OrgID, projectID)
		if err != nil {
			return err
		}
		if len(hooks) >= maxHooks {
			return domain.Conflict("Hook limit reached", "A project has at most "+strconv.Itoa(maxHooks)+" hooks")
		}
		if err := tx.SourceControl().CreateHook(ctx, h); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return errProject404
			}
			return err
		}
		return tx.Audit().Append(ctx, &domain.AuditEntry{ID: domain.NewID(), OrganizationID: p.OrgID, ActorID: p.UserID,
			Action: "hook.created", TargetType: "project", TargetID: projectID,
			Details: map[string]any{"hook": h.ID, "provider": h.Provider}, CreatedAt: h.CreatedAt})
	})
	if err != nil {
		return nil, err
	}
	return &CreatedHook{HookInfo: HookInfo{Hook: *h, URL: s.url(h)}, Secret: secret}, nil
}

// ListHooks lists the project's hooks (every member), without their secrets.
func (s *Service) ListHooks(ctx context.Context, p *identity.Principal, projectID string) ([]HookInfo, error) {
	if _, err := s.store.Projects().Get(ctx, p.OrgID, projectID); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, errProject404
		}
		return nil, err
	}
	hooks, err := s.store.SourceControl().ListHooks(ctx, p.OrgID, projectID)
	if err != nil {
		return nil, err
	}
	out := make([]HookInfo, len(hooks))
	for i := range hooks {
		out[i] = HookInfo{Hook: hooks[i], URL: s.url(&hooks[i])}
	}
	return out, nil
}

// DeleteHook removes the project's hook (admins and developers): its URL answers 404 from then.
func (s *Service) DeleteHook(ctx context.Context, p *identity.Principal, projectID, hookID string) error {
	if !p.CanWrite() {
		return errReadOnly
	}
	return s.store.InTx(ctx, func(tx store.Store) error {
		if err := tx.SourceControl().DeleteHook(ctx, p.OrgID, projectID, hookID); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return errHook404
			}
			return err
		}
		return tx.Audit().Append(ctx, &domain.AuditEntry{ID: domain.NewID(), OrganizationID: p.OrgID, ActorID: p.UserID,
			Action: "hook.deleted", TargetType: "project", TargetID: projectID,
			Details: map[string]any{"hook": hookID}, CreatedAt: s.clock()})
	})
}

// Receipt is what a delivery did.
type Receipt struct {
	Ping      bool   // the host's ping: nothing to do
	Duplicate bool   // a delivery taken before: nothing more queued
	Note      string // why nothing was queued (Ping, Duplicate or an event that does not match)
	TaskID    string // the run queued
}

// Errors of a delivery. A hook that is not found and a signature that does not prove the secret
// are told apart only by the status, never by what the secret is.
var (
	errNoHook       = domain.NotFound("Hook not found", "No such hook")
	errBadSignature = domain.Unauthorized("Invalid signature", "The delivery's signature does not match the hook's secret")
)

// Receive takes a delivery to hook hookID of provider: it checks the signature over the raw
// body, reads the event and, when it matches the hook (event, branch globs), queues a run of the
// hook's project as the organization's automation, labelled with what it tests. A delivery ID
// taken before queues nothing more.
func (s *Service) Receive(ctx context.Context, provider, hookID string, header http.Header, body []byte) (*Receipt, error) {
	pr, ok := providers[provider]
	if !ok {
		return nil, errNoHook
	}
	h, err := s.store.SourceControl().FindHook(ctx, hookID)
	if errors.Is(err, store.ErrNotFound) || err == nil && h.Provider != provider {
		return nil, errNoHook
	}
	if err != nil {
		return nil, err
	}
	secret, err := s.box.Open(h.SecretCipher)
	if err != nil {
		return nil, err
	}
	if !pr.hooks.Verify(header, body, string(secret)) {
		return nil, errBadSignature
	}
	ev, err := pr.hooks.Parse(header, body)
	if err != nil {
		return nil, domain.BadRequest("Invalid payload", err.Error())
	}
	if ev.Kind == "ping" {
		return &Receipt{Ping: true, Note: "pong"}, nil
	}
	events := h.Events
	if len(events) == 0 {
		events = pr.hooks.Events()
	}
	switch {
	case ev.Skip != "":
		return &Receipt{Note: ev.Skip}, nil
	case !slices.Contains(events, ev.Kind):
		return &Receipt{Note: "the hook does not take " + ev.Kind + " events"}, nil
	case !matchAny(h.Branches, ev.Target):
		return &Receipt{Note: "branch " + strconv.Quote(ev.Target) + " matches none of the hook's branches"}, nil
	}
	s.prune(ctx)
	if ev.DeliveryID != "" {
		if len(ev.DeliveryID) > 128 {
			return nil, domain.BadRequest("Invalid payload", "the delivery ID is longer than 128 characters")
		}
		err := s.store.SourceControl().RecordDelivery(ctx, h.ID, ev.DeliveryID, s.clock())
		if errors.Is(err, store.ErrConflict) {
			return &Receipt{Duplicate: true, Note: "delivery " + ev.DeliveryID + " was taken before"}, nil
		}
		if err != nil {
			return nil, err
		}
	}
	labels := map[string]string{domain.TriggerLabel: provider, domain.RepoLabel: ev.Repo,
		domain.BranchLabel: ev.Branch, domain.CommitLabel: ev.Commit}
	prNumber := ""
	if ev.Request > 0 {
		prNumber = strconv.FormatInt(ev.Request, 10)
		labels[domain.PRLabel] = prNumber
	}
	in := executions.QueueInput{ProjectID: h.ProjectID, Labels: labels}
	if h.BaseURLTemplate != "" {
		in.BaseURL = expand(h.BaseURLTemplate, prNumber, ev.Branch, ev.Commit)
	}
	run, err := s.runs.Queue(ctx, identity.Automation(h.OrganizationID), in)
	if err != nil {
		if ev.DeliveryID != "" {
			// Not queued: the host's redelivery may try again.
			if ferr := s.store.SourceControl().ForgetDelivery(context.WithoutCancel(ctx), h.ID, ev.DeliveryID); ferr != nil {
				s.log.Warn("forgetting a delivery that queued nothing failed", "hook", h.ID, "err", ferr)
			}
		}
		return nil, err
	}
	return &Receipt{TaskID: run.TaskID}, nil
}

// expand fills a base URL template: {pr} with the request's number ("" for a push), {branch}
// with the branch made fit for a host name (lower case, runs of other characters as one '-'),
// {commit} with the commit.
func expand(tmpl, pr, branch, commit string) string {
	return strings.NewReplacer("{pr}", pr, "{branch}", slug(branch), "{commit}", commit).Replace(tmpl)
}

// slug is s in lower case letters, digits and single '-', at most 63 characters (a DNS label).
func slug(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
		if b.Len() >= 63 {
			break
		}
	}
	return strings.TrimRight(b.String(), "-")
}
