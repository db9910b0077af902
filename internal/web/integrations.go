package web

import (
	"net/http"
	"strings"

	"verdict/internal/domain"
	"verdict/internal/integrations"
	"verdict/internal/integrations/tracker"
)

// The tracker integrations (/settings/integrations): the organization's settings of each
// registered tracker (integrations.Trackers), saved by admins through integrations.Service
// (which checks a new key with the tracker before sealing it; the page only ever shows whether
// one is stored), and the ticket buttons of a finished run's page. A tracker's panel, form and
// button are made from its tracker.Spec: a new tracker needs nothing here.

const integrationsPath = "/settings/integrations"

var errNoTracker = domain.NotFound("Integration not found", "No such tracker")

var errTrackersOff = domain.Unavailable("Integrations not available", "Tracker integrations are not available on this server")

type integrationsData struct {
	Admin       bool
	Trackers    []trackerPanel
	ReadError   *formError
	Unavailable bool
	// SCM are the source-control hosts' panels (scm.go); SCMError the refusal of reading them.
	SCM      []scmPanel
	SCMError *formError
}

// trackerPanel is a tracker's part of the page: its settings and the refusal of its form,
// shown above it with what was typed (never the key).
type trackerPanel struct {
	tracker.Spec
	Settings *integrations.Settings
	Error    *formError
}

func (s *Server) integrationsData(r *http.Request) integrationsData {
	st := stateOf(r)
	d := integrationsData{Admin: st.p.IsAdmin()}
	d.SCM, d.SCMError = s.scmPanels(r)
	if s.trackers == nil {
		d.Unavailable = true
		return d
	}
	for _, t := range integrations.Trackers() {
		settings, err := s.trackers.Settings(r.Context(), st.p, t.Provider)
		if err != nil {
			d.ReadError = s.formErrorOf(r, err)
			d.Trackers = nil
			return d
		}
		d.Trackers = append(d.Trackers, trackerPanel{Spec: t, Settings: settings})
	}
	return d
}

func (s *Server) integrationsPage(w http.ResponseWriter, r *http.Request) {
	s.render(w, r, http.StatusOK, "integrations", "Integrations", s.integrationsData(r))
}

// knownTracker serves h for a registered tracker's {provider}; any other is the not-found page,
// as for a path that does not exist.
func (s *Server) knownTracker(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if _, ok := integrations.Lookup(r.PathValue("provider")); !ok {
			s.errorPage(w, r, http.StatusNotFound, "Page not found", "There is no page at this address.")
			return
		}
		h(w, r)
	}
}

// apiKeyOf is the key field: empty keeps the stored key (nil to the service).
func apiKeyOf(r *http.Request) *string {
	if k := r.PostFormValue("apiKey"); strings.TrimSpace(k) != "" {
		return &k
	}
	return nil
}

// saveTracker saves a tracker's settings from its form (/settings/integrations/{provider}).
func (s *Server) saveTracker(w http.ResponseWriter, r *http.Request) {
	if s.trackers == nil {
		s.fail(w, r, errTrackersOff)
		return
	}
	t, _ := integrations.Lookup(r.PathValue("provider"))
	enabled := r.PostFormValue("enabled") == "on"
	in := integrations.Input{APIKey: apiKeyOf(r), Values: make(map[string]string, len(t.Fields)), Enabled: &enabled}
	for _, f := range t.Fields {
		in.Values[f.Key] = r.PostFormValue(f.Key)
	}
	if _, err := s.trackers.Save(r.Context(), stateOf(r).p, t.Provider, in); err != nil {
		d := s.integrationsData(r)
		fe := s.formErrorOf(r, err)
		for i := range d.Trackers {
			if p := &d.Trackers[i]; p.Provider == t.Provider {
				p.Error = fe
				p.Settings.Values, p.Settings.Enabled = in.Values, enabled
			}
		}
		s.render(w, r, fe.Status, "integrations", "Integrations", d)
		return
	}
	s.done(w, r, integrationsPath, t.Name+" settings saved.")
}

// trackerName is how the page names provider: its tracker's or source-control host's name,
// else the provider itself.
func trackerName(provider string) string {
	if t, ok := integrations.Lookup(provider); ok {
		return t.Name
	}
	if name := scmName(provider); name != "" {
		return name
	}
	return provider
}

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
	name := trackerName(provider)
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
	for _, t := range integrations.Trackers() {
		if set, err := s.trackers.Settings(r.Context(), st.p, t.Provider); err == nil && set.Enabled {
			out = append(out, ticketButton{Provider: t.Provider, Name: t.Name})
		}
	}
	return out
}

// createTicket creates a ticket in the tracker {provider} from the run, as the tracker's API
// route does (POST /api/linear/issues, /api/monday/items), and goes back to the run's page,
// which lists it.
func (s *Server) createTicket(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("taskId")
	if s.trackers == nil {
		s.fail(w, r, errTrackersOff)
		return
	}
	t, ok := integrations.Lookup(r.PathValue("provider"))
	if !ok {
		s.refused(w, r, runPath(id), errNoTracker)
		return
	}
	in := integrations.TicketInput{TaskID: id, Title: strings.TrimSpace(r.PostFormValue("title"))}
	c, err := s.trackers.CreateTicket(r.Context(), stateOf(r).p, t.Provider, in)
	if err != nil {
		s.refused(w, r, runPath(id), err)
		return
	}
	text := t.Name + " ticket created"
	if c.Ticket.Identifier != "" {
		text = t.Name + " " + t.TicketNoun + " " + c.Ticket.Identifier + " created"
	}
	text += ": " + c.Ticket.URL
	if c.Warning != "" {
		text += ". " + c.Warning
	}
	s.done(w, r, runPath(id), text)
}
