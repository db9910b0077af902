package integrations

import (
	"context"
	"errors"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"verdict/internal/domain"
	"verdict/internal/identity"
	"verdict/internal/store"
)

// TicketInput asks for a ticket from a run. Title and Description may be empty.
type TicketInput struct {
	TaskID string
	// Title is the issue's title or the item's name; empty: one made from the run.
	Title string
	// Description is the caller's own Markdown, put before the run's details.
	Description string
}

// Created is a ticket just created and recorded on its run.
type Created struct {
	Ticket domain.Ticket
	// Warning says what did not go as asked although the ticket exists (a Monday.com item
	// whose update with the run's details could not be posted); empty when all went well.
	Warning string
}

// Bounds of a ticket request.
const (
	maxTitleRunes       = 255
	maxDescriptionBytes = 16 << 10
)

var (
	errNotFound = domain.NotFound("Execution not found", "No such execution in your organization")
)

// CreateLinearIssue creates a Linear issue from a finished run of the caller's organization
// (admins and developers) in the team of the organization's settings, and records it on the run.
func (s *Service) CreateLinearIssue(ctx context.Context, p *identity.Principal, in TicketInput) (*Created, error) {
	in, integ, run, key, err := s.prepare(ctx, p, domain.ProviderLinear, in)
	if err != nil {
		return nil, err
	}
	title := in.Title
	if title == "" {
		title = defaultTitle(run)
	}
	body := describe(run, s.reportURL(ctx, run)).markdown(in.Description)
	// Once asked, the issue may exist: the call and the record outlive a caller who leaves.
	issue, err := s.linear.CreateIssue(context.WithoutCancel(ctx), key, integ.Settings.TeamID, title, body)
	if err != nil {
		s.log.Warn("creating a Linear issue failed", "org", p.OrgID, "task", run.TaskID, "err", err)
		return nil, s.upstreamError(domain.ProviderLinear, err, "")
	}
	t := domain.Ticket{OrganizationID: p.OrgID, ExecutionID: run.ID, Provider: domain.ProviderLinear,
		ExternalID: issue.ID, Identifier: issue.Identifier, URL: issue.URL, Title: orDefault(issue.Title, title)}
	return s.record(ctx, p, run, t, "")
}

// CreateMondayItem creates a Monday.com item from a finished run of the caller's organization
// (admins and developers) on the board (and group) of the organization's settings, posts the
// run's details as the item's first update, and records the item on the run. The item is
// recorded even when the update fails; Created.Warning then says so.
func (s *Service) CreateMondayItem(ctx context.Context, p *identity.Principal, in TicketInput) (*Created, error) {
	in, integ, run, key, err := s.prepare(ctx, p, domain.ProviderMonday, in)
	if err != nil {
		return nil, err
	}
	name := in.Title
	if name == "" {
		name = defaultTitle(run)
	}
	st := integ.Settings
	// Once asked, the item may exist: the calls and the record outlive a caller who leaves.
	item, err := s.monday.CreateItem(context.WithoutCancel(ctx), key, st.BoardID, st.GroupID, name, st.AccountSlug)
	if err != nil {
		s.log.Warn("creating a Monday.com item failed", "org", p.OrgID, "task", run.TaskID, "err", err)
		return nil, s.upstreamError(domain.ProviderMonday, err, "")
	}
	warning := ""
	body := describe(run, s.reportURL(ctx, run)).html(in.Description)
	if err := s.monday.AddUpdate(context.WithoutCancel(ctx), key, item.ID, body); err != nil {
		s.log.Warn("posting a Monday.com item's update failed", "org", p.OrgID, "task", run.TaskID, "item", item.ID, "err", err)
		msg := "the update could not be posted"
		var de *domain.Error
		if errors.As(s.upstreamError(domain.ProviderMonday, err, ""), &de) {
			msg = de.Message
		}
		warning = "The item was created, but the update with the run's details was not posted: " + msg
	}
	t := domain.Ticket{OrganizationID: p.OrgID, ExecutionID: run.ID, Provider: domain.ProviderMonday,
		ExternalID: item.ID, URL: item.URL, Title: orDefault(item.Name, name)}
	return s.record(ctx, p, run, t, warning)
}

// prepare checks a ticket request in the order a client can act on (every member, viewers
// too, may file a ticket from a run they can read): the body, the
// organization's integration (stored and on), then the run (the organization's, finished). It
// returns the cleaned input, the integration, the run and the opened key.
func (s *Service) prepare(ctx context.Context, p *identity.Principal, provider string, in TicketInput) (
	TicketInput, *domain.Integration, *domain.Execution, string, error) {
	fail := func(err error) (TicketInput, *domain.Integration, *domain.Execution, string, error) {
		return in, nil, nil, "", err
	}
	in.TaskID = strings.TrimSpace(in.TaskID)
	if in.TaskID == "" {
		return fail(domain.BadRequest("Missing required fields", "taskId is required"))
	}
	in.Title = strings.TrimSpace(in.Title)
	if utf8.RuneCountInString(in.Title) > maxTitleRunes || strings.IndexFunc(in.Title, unicode.IsControl) >= 0 {
		return fail(validation("title must be one line of at most %d characters", maxTitleRunes))
	}
	in.Description = strings.TrimSpace(in.Description)
	if len(in.Description) > maxDescriptionBytes || !utf8.ValidString(in.Description) {
		return fail(validation("description must be UTF-8 text of at most %d bytes", maxDescriptionBytes))
	}
	integ, err := s.stored(ctx, p.OrgID, provider)
	switch {
	case err != nil:
		return fail(err)
	case integ == nil:
		return fail(errNotConfigured(provider))
	case !integ.Enabled:
		return fail(errDisabled(provider))
	}
	if !domain.ValidTaskID(in.TaskID) {
		return fail(errNotFound)
	}
	run, err := s.store.Executions().Get(ctx, p.OrgID, in.TaskID)
	if errors.Is(err, store.ErrNotFound) {
		return fail(errNotFound)
	}
	if err != nil {
		return fail(err)
	}
	if !run.Status.Final() {
		return fail(domain.Conflict("Execution not finished",
			"A ticket is created from a finished run; "+run.TaskID+" is "+string(run.Status)))
	}
	key, err := s.box.Open(integ.KeyCipher)
	if err != nil {
		s.log.Error("an organization's tracker key could not be opened", "org", p.OrgID, "provider", provider)
		return fail(errors.New("the stored tracker key could not be opened"))
	}
	return in, integ, run, string(key), nil
}

// record writes the ticket on the run, even when the caller has gone (the ticket exists in the
// tracker), and announces the run with its tickets.
func (s *Service) record(ctx context.Context, p *identity.Principal, run *domain.Execution, t domain.Ticket, warning string) (*Created, error) {
	ctx = context.WithoutCancel(ctx)
	t.ID, t.CreatedBy, t.CreatedAt = s.newID(), p.UserID, s.clock().UTC().Truncate(time.Millisecond) // as stored
	if err := s.store.Integrations().AddTicket(ctx, &t); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			s.log.Warn("a run was deleted while a ticket was created from it", "org", p.OrgID, "task", run.TaskID, "ticket", t.URL)
			return nil, domain.NotFound("Execution not found",
				"The execution was deleted while the ticket was created; the ticket is "+t.URL)
		}
		return nil, err
	}
	if s.events != nil {
		if e, err := s.store.Executions().GetByID(ctx, run.ID); err == nil {
			s.events.ExecutionUpdated(e)
		}
	}
	return &Created{Ticket: t, Warning: warning}, nil
}
