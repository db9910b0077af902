package api

import (
	"net/http"

	"verdict/internal/domain"
	"verdict/internal/integrations"
)

// errIntegrationsOff answers the integration routes of a server built without the trackers'
// service.
var errIntegrationsOff = domain.Unavailable("Integrations not configured", "Tracker integrations are not available on this server")

// LinearIntegration is the view of an organization's Linear settings: never the key.
type LinearIntegration struct {
	Enabled    bool    `json:"enabled"`
	Configured bool    `json:"configured"`
	TeamID     *string `json:"teamId"`
}

// MondayIntegration is the view of an organization's Monday.com settings: never the token.
type MondayIntegration struct {
	Enabled    bool    `json:"enabled"`
	Configured bool    `json:"configured"`
	BoardID    *string `json:"boardId"`
	GroupID    *string `json:"groupId"`
}

func linearIntegrationView(s *integrations.LinearSettings) LinearIntegration {
	return LinearIntegration{Enabled: s.Enabled, Configured: s.Configured, TeamID: nullable(s.TeamID)}
}

func mondayIntegrationView(s *integrations.MondaySettings) MondayIntegration {
	return MondayIntegration{Enabled: s.Enabled, Configured: s.Configured, BoardID: nullable(s.BoardID), GroupID: nullable(s.GroupID)}
}

func (s *Server) trackersOn(w http.ResponseWriter) bool {
	if s.trackers == nil {
		writeDomainError(w, errIntegrationsOff)
		return false
	}
	return true
}

// getLinear: GET /api/integrations/linear.
func (s *Server) getLinear(w http.ResponseWriter, r *http.Request) {
	if !s.trackersOn(w) {
		return
	}
	st, err := s.trackers.Linear(r.Context(), principalFrom(r))
	if err != nil {
		s.fail(w, r, err, "Failed to fetch integration")
		return
	}
	ok(w, obj{"data": linearIntegrationView(st)})
}

// putLinear: PUT /api/integrations/linear {apiKey?, teamId, enabled?}.
func (s *Server) putLinear(w http.ResponseWriter, r *http.Request) {
	if !s.trackersOn(w) {
		return
	}
	var in struct {
		APIKey  *string `json:"apiKey"`
		TeamID  *string `json:"teamId"`
		Enabled *bool   `json:"enabled"`
	}
	if err := decode(w, r, &in); err != nil {
		writeDomainError(w, err)
		return
	}
	// Like the other organization settings, a body without its required field is 400 whatever
	// the caller's role.
	if in.TeamID == nil {
		writeDomainError(w, domain.BadRequest("Missing required fields", "teamId is required"))
		return
	}
	st, err := s.trackers.SaveLinear(r.Context(), principalFrom(r),
		integrations.LinearInput{APIKey: in.APIKey, TeamID: *in.TeamID, Enabled: in.Enabled})
	if err != nil {
		s.fail(w, r, err, "Failed to save integration")
		return
	}
	ok(w, obj{"message": "Linear integration saved", "data": linearIntegrationView(st)})
}

// getMonday: GET /api/integrations/monday.
func (s *Server) getMonday(w http.ResponseWriter, r *http.Request) {
	if !s.trackersOn(w) {
		return
	}
	st, err := s.trackers.Monday(r.Context(), principalFrom(r))
	if err != nil {
		s.fail(w, r, err, "Failed to fetch integration")
		return
	}
	ok(w, obj{"data": mondayIntegrationView(st)})
}

// putMonday: PUT /api/integrations/monday {apiKey?, boardId, groupId?, enabled?}.
func (s *Server) putMonday(w http.ResponseWriter, r *http.Request) {
	if !s.trackersOn(w) {
		return
	}
	var in struct {
		APIKey  *string `json:"apiKey"`
		BoardID *string `json:"boardId"`
		GroupID string  `json:"groupId"`
		Enabled *bool   `json:"enabled"`
	}
	if err := decode(w, r, &in); err != nil {
		writeDomainError(w, err)
		return
	}
	if in.BoardID == nil {
		writeDomainError(w, domain.BadRequest("Missing required fields", "boardId is required"))
		return
	}
	st, err := s.trackers.SaveMonday(r.Context(), principalFrom(r),
		integrations.MondayInput{APIKey: in.APIKey, BoardID: *in.BoardID, GroupID: in.GroupID, Enabled: in.Enabled})
	if err != nil {
		s.fail(w, r, err, "Failed to save integration")
		return
	}
	ok(w, obj{"message": "Monday.com integration saved", "data": mondayIntegrationView(st)})
}

// deleteIntegration: DELETE /api/integrations/{provider} removes the stored credentials; 200
// whether or not there were any (removed says which).
func (s *Server) deleteIntegration(w http.ResponseWriter, r *http.Request) {
	if !s.trackersOn(w) {
		return
	}
	provider := r.PathValue("provider")
	removed, err := s.trackers.Remove(r.Context(), principalFrom(r), provider)
	if err != nil {
		s.fail(w, r, err, "Failed to remove integration")
		return
	}
	msg := "Integration " + provider + " removed"
	if !removed {
		msg = "Integration " + provider + " had no stored credentials"
	}
	ok(w, obj{"message": msg, "removed": removed})
}

// ticketBody is the body of both ticket routes.
type ticketBody struct {
	TaskID      string `json:"taskId"`
	Title       string `json:"title"`
	Description string `json:"description"`
}

// createLinearIssue: POST /api/linear/issues {taskId, title?, description?}.
func (s *Server) createLinearIssue(w http.ResponseWriter, r *http.Request) {
	if !s.trackersOn(w) {
		return
	}
	var in ticketBody
	if err := decode(w, r, &in); err != nil {
		writeDomainError(w, err)
		return
	}
	c, err := s.trackers.CreateLinearIssue(r.Context(), principalFrom(r),
		integrations.TicketInput{TaskID: in.TaskID, Title: in.Title, Description: in.Description})
	if err != nil {
		s.fail(w, r, err, "Failed to create issue")
		return
	}
	created(w, obj{"data": trackerIssueView(&c.Ticket)})
}

// createMondayItem: POST /api/monday/items {taskId, title?, description?}.
func (s *Server) createMondayItem(w http.ResponseWriter, r *http.Request) {
	if !s.trackersOn(w) {
		return
	}
	var in ticketBody
	if err := decode(w, r, &in); err != nil {
		writeDomainError(w, err)
		return
	}
	c, err := s.trackers.CreateMondayItem(r.Context(), principalFrom(r),
		integrations.TicketInput{TaskID: in.TaskID, Title: in.Title, Description: in.Description})
	if err != nil {
		s.fail(w, r, err, "Failed to create item")
		return
	}
	body := obj{"data": trackerItemView(&c.Ticket)}
	if c.Warning != "" {
		body["warning"] = c.Warning
	}
	created(w, body)
}
