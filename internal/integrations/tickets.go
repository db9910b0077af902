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
	"verdict/internal/integrations/tracker"
	"verdict/internal/store"
)

// TicketInput asks for a ticket from a run. Title and Description may be empty.
type TicketInput struct {
	TaskID string
	// Title is the title or the item's name; empty: one made from the run.
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

// CreateTicket creates a ticket in the tracker provider from a finished run of the caller's
// organization, in the place of the organization's settings (a Linear team, a Monday.com board
// and group), and records it on the run. A ticket the tracker created but could not complete
// (a Monday.com item whose update with the run's details failed) is recorded too;
// Created.Warning then says so.
func (s *Service) CreateTicket(ctx context.Context, p *identity.Principal, provider string, in TicketInput) (*Created, error) {
	t, tr, err := s.open(provider)
	if err != nil {
		return nil, err
	}
	in, integ, run, key, err := s.prepare(ctx, p, t, in)
	if err != nil {
		return nil, err
	}
	title := in.Title
	if title == "" {
		title = defaultTitle(run)
	}
	story := describe(run, s.reportURL(ctx, run))
	ticket := tracker.Ticket{Title: title, Markdown: story.markdown(in.Description), HTML: story.html(in.Description),
		ADF: story.adf(in.Description)}
	// Once asked, the ticket may exist: the calls and the record outlive a caller who leaves.
	filed, err := tr.CreateTicket(context.WithoutCancel(ctx), key, integ.Settings, ticket)
	if err != nil {
		s.log.Warn("creating a "+t.Name+" "+t.TicketNoun+" failed", "org", p.OrgID, "task", run.TaskID, "err", err)
		return nil, s.upstreamError(t, err, "")
	}
	warning := ""
	if filed.Incomplete != nil {
		s.log.Warn("a "+t.Name+" "+t.TicketNoun+" was created but not completed", "org", p.OrgID, "task", run.TaskID,
			"ticket", filed.ExternalID, "err", filed.Incomplete)
		msg := "the update could not be posted"
		var de *domain.Error
		if errors.As(s.upstreamError(t, filed.Incomplete, ""), &de) {
			msg = de.Message
		}
		warning = "The " + t.TicketNoun + " was created, but the update with the run's details was not posted: " + msg
	}
	record := domain.Ticket{OrganizationID: p.OrgID, ExecutionID: run.ID, Provider: t.Provider, ExternalID: filed.ExternalID,
		Identifier: filed.Identifier, URL: filed.URL, Title: orDefault(filed.Title, title)}
	return s.record(ctx, p, run, record, warning)
}

// prepare checks a ticket request in the order a client can act on (every member, viewers
// too, may file a ticket from a run they can read): the body, the
// organization's integration (stored and on), then the run (the organization's, finished). It
// returns the cleaned input, the integration, the run and the opened key.
func (s *Service) prepare(ctx context.Context, p *identity.Principal, t tracker.Spec, in TicketInput) (
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
	integ, err := s.stored(ctx, p.OrgID, t.Provider)
	switch {
	case err != nil:
		return fail(err)
	case integ == nil:
		return fail(errNotConfigured(t))
	case !integ.Enabled:
		return fail(errDisabled(t))
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
		s.log.Error("an organization's tracker key could not be opened", "org", p.OrgID, "provider", t.Provider)
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
