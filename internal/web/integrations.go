package web

import (
	"net/http"
	"strings"

	"verdict/internal/domain"
	"verdict/internal/integrations"
)

// The tracker integrations (/settings/integrations): the organization's Linear and Monday.com
// settings, saved by admins through integrations.Service (which checks a new key with the
// tracker before sealing it; the page only ever shows whether one is stored), and the ticket
// buttons of a finished run's page.

const integrationsPath = "/settings/integrations"

var errTrackersOff = domain.Unavailable("Integrations not available", "Tracker integrations are not available on this server")

type integrationsData struct {
	Admin       bool
	Linear      *integrations.LinearSettings
	Monday      *integrations.MondaySettings
	ReadError   *formError
	Unavailable bool
	// The refusal of a form, shown above it, with what was typed (never the key).
	LinearError, MondayError *formError
}

func (s *Server) integrationsData(r *http.Request) integrationsData {
	st := stateOf(r)
	d := integrationsData{Admin: st.p.IsAdmin()}
	if s.trackers == nil {
		d.Unavailable = true
		return d
	}
	var err error
	if d.Linear, err = s.trackers.Linear(r.Context(), st.p); err == nil {
		d.Monday, err = s.trackers.Monday(r.Context(), st.p)
	}
	if err != nil {
		d.ReadError = s.formErrorOf(r, err)
		d.Linear, d.Monday = nil, nil
	}
	return d
}

func (s *Server) integrationsPage(w http.ResponseWriter, r *http.Request) {
	s.render(w, r, http.StatusOK, "integrations", "Integrations", s.integrationsData(r))
}

// apiKeyOf is the key field: empty keeps the stored key (nil to the service).
func apiKeyOf(r *http.Request) *string {
	if k := r.PostFormValue("apiKey"); strings.TrimSpace(k) != "" {
		return &k
	}
	return nil
}

func (s *Server) saveLinear(w http.ResponseWriter, r *http.Request) {
	if s.trackers == nil {
		s.fail(w, r, errTrackersOff)
		return
	}
	enabled := r.PostFormValue("enabled") == "on"
	team := r.PostFormValue("teamId")
	_, err := s.trackers.SaveLinear(r.Context(), stateOf(r).p, integrations.LinearInput{APIKey: apiKeyOf(r), TeamID: team, Enabled: &enabled})
	if err != nil {
		d := s.integrationsData(r)
		d.LinearError = s.formErrorOf(r, err)
		if d.Linear != nil {
			d.Linear.TeamID, d.Linear.Enabled = team, enabled
		}
		s.render(w, r, d.LinearError.Status, "integrations", "Integrations", d)
		return
	}
	s.done(w, r, integrationsPath, "Linear settings saved.")
}

func (s *Server) saveMonday(w http.ResponseWriter, r *http.Request) {
	if s.trackers == nil {
		s.fail(w, r, errTrackersOff)
		return
	}
	enabled := r.PostFormValue("enabled") == "on"
	board, group := r.PostFormValue("boardId"), r.PostFormValue("groupId")
	_, err := s.trackers.SaveMonday(r.Context(), stateOf(r).p, integrations.MondayInput{APIKey: apiKeyOf(r), BoardID: board,
		GroupID: group, Enabled: &enabled})
	if err != nil {
		d := s.integrationsData(r)
		d.MondayError = s.formErrorOf(r, err)
		if d.Monday != nil {
			d.Monday.BoardID, d.Monday.GroupID, d.Monday.Enabled = board, group, enabled
		}
		s.render(w, r, d.MondayError.Status, "integrations", "Integrations", d)
		return
	}
	s.done(w, r, integrationsPath, "Monday.com settings saved.")
}

var providerNames = map[string]string{domain.ProviderLinear: "Linear", domain.ProviderMonday: "Monday.com"}

func (s *Server) removeIntegration(w http.ResponseWriter, r *http.Request) {
	if s.trackers == nil {
		s.fail(w, r, errTrackersOff)
		return
	}
	provider := r.PathValue("provider")
	removed, err := s.trackers.Remove(r.Context(), stateOf(r).p, provider)
	if err != nil {
		s.refused(w, r, integrationsPath, err)
		return
	}
	name := providerNames[provider]
	if name == "" {
		name = provider
	}
	if !removed {
		s.done(w, r, integrationsPath, name+" had no stored settings.")
		return
	}
	s.done(w, r, integrationsPath, name+" disconnected.")
}

// ticketButton is a tracker a run's page offers a ticket in.
type ticketButton struct {
	Provider, Name string
}

// runTickets are the ticket buttons of a finished run's page: one per tracker the
// organization has turned on. A tracker whose settings cannot be read is left out.
func (s *Server) runTickets(r *http.Request) []ticketButton {
	if s.trackers == nil {
		return nil
	}
	st := stateOf(r)
	var out []ticketButton
	if l, err := s.trackers.Linear(r.Context(), st.p); err == nil && l.Enabled {
		out = append(out, ticketButton{Provider: domain.ProviderLinear, Name: "Linear"})
	}
	if m, err := s.trackers.Monday(r.Context(), st.p); err == nil && m.Enabled {
		out = append(out, ticketButton{Provider: domain.ProviderMonday, Name: "Monday.com"})
	}
	return out
}

// createTicket creates a Linear issue or a Monday.com item from the run, as POST
// /api/linear/issues and /api/monday/items do, and goes back to the run's page, which lists it.
func (s *Server) createTicket(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("taskId")
	if s.trackers == nil {
		s.fail(w, r, errTrackersOff)
		return
	}
	in := integrations.TicketInput{TaskID: id, Title: strings.TrimSpace(r.PostFormValue("title"))}
	var c *integrations.Created
	var err error
	switch r.PathValue("provider") {
	case domain.ProviderLinear:
		c, err = s.trackers.CreateLinearIssue(r.Context(), stateOf(r).p, in)
	case domain.ProviderMonday:
		c, err = s.trackers.CreateMondayItem(r.Context(), stateOf(r).p, in)
	default:
		err = domain.NotFound("Integration not found", "No such tracker")
	}
	if err != nil {
		s.refused(w, r, runPath(id), err)
		return
	}
	text := providerNames[c.Ticket.Provider] + " ticket created"
	if c.Ticket.Identifier != "" {
		text = providerNames[c.Ticket.Provider] + " issue " + c.Ticket.Identifier + " created"
	}
	text += ": " + c.Ticket.URL
	if c.Warning != "" {
		text += ". " + c.Warning
	}
	s.done(w, r, runPath(id), text)
}
