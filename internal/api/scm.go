package api

import (
	"errors"
	"fmt"
	"io"
	"net/http"

	"verdict/internal/domain"
	"verdict/internal/scm"
)

// The source-control routes: GET and PUT /api/integrations/{github,gitlab} (the organization's
// token, write-only), a project's hooks (POST, GET, DELETE /api/projects/{id}/hooks), and the
// hooks' public delivery route, POST /api/hooks/{provider}/{hookId}, which proves nothing but
// the signature: no session, no key, rate-limited by client address.

// errSCMOff answers the source-control routes of a server built without the service.
var errSCMOff = domain.Unavailable("Source control not configured", "Source-control integrations are not available on this server")

// maxDeliveryBytes bounds a hook delivery's body.
const maxDeliveryBytes = 1 << 20

func (s *Server) scmRoutes() {
	for _, provider := range domain.SCMProviders {
		s.handle("GET /api/integrations/"+provider, routeOpts{access: bearerOrKey, limit: "api"}, s.getSCM(provider))
		s.handle("PUT /api/integrations/"+provider, routeOpts{access: bearer, limit: "strict"}, s.putSCM(provider))
	}
	s.handle("POST /api/projects/{id}/hooks", routeOpts{access: bearerOrKey, limit: "api"}, s.createHook)
	s.handle("GET /api/projects/{id}/hooks", routeOpts{access: bearerOrKey, limit: "api"}, s.listHooks)
	s.handle("DELETE /api/projects/{id}/hooks/{hookId}", routeOpts{access: bearerOrKey, limit: "api"}, s.deleteHook)
	s.handle("POST /api/hooks/{provider}/{hookId}", routeOpts{access: public, limit: "webhooks"}, s.receiveHook)
}

func (s *Server) scmOn(w http.ResponseWriter) bool {
	if s.scm == nil {
		writeDomainError(w, errSCMOff)
		return false
	}
	return true
}

// SCMSettings are an organization's settings of a source-control host: never the token.
type SCMSettings struct {
	Configured bool    `json:"configured"`
	APIURL     *string `json:"apiUrl"` // null: the public host's
}

func scmSettingsView(st *scm.Settings) SCMSettings {
	return SCMSettings{Configured: st.Configured, APIURL: nullable(st.APIURL)}
}

// getSCM: GET /api/integrations/{github,gitlab}.
func (s *Server) getSCM(provider string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.scmOn(w) {
			return
		}
		st, err := s.scm.Settings(r.Context(), principalFrom(r), provider)
		if err != nil {
			s.fail(w, r, err, "Failed to fetch integration")
			return
		}
		ok(w, obj{"data": scmSettingsView(st)})
	}
}

// putSCM: PUT /api/integrations/{github,gitlab} {token, apiUrl?}.
func (s *Server) putSCM(provider string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.scmOn(w) {
			return
		}
		var in struct {
			Token  *string `json:"token"`
			APIURL *string `json:"apiUrl"`
		}
		if err := decode(w, r, &in); err != nil {
			writeDomainError(w, err)
			return
		}
		if in.Token == nil {
			writeDomainError(w, domain.BadRequest("Missing required fields", "token is required"))
			return
		}
		save := scm.SaveInput{Token: *in.Token}
		if in.APIURL != nil {
			save.APIURL = *in.APIURL
		}
		st, err := s.scm.Save(r.Context(), principalFrom(r), provider, save)
		if err != nil {
			s.fail(w, r, err, "Failed to save integration")
			return
		}
		name := "GitHub"
		if provider == domain.ProviderGitLab {
			name = "GitLab"
		}
		ok(w, obj{"message": name + " integration saved", "data": scmSettingsView(st)})
	}
}

// Hook is a project's inbound hook; Secret only in the answer that created it.
type Hook struct {
	ID        string   `json:"id"`
	ProjectID string   `json:"projectId"`
	Provider  string   `json:"provider"`
	URL       string   `json:"url"`
	Secret    string   `json:"secret,omitempty"`
	Branches  []string `json:"branches"`
	Events    []string `json:"events"`
	BaseURL   *string  `json:"baseUrl"`
	CreatedAt string   `json:"createdAt"`
}

func hookView(h *scm.HookInfo, secret string) Hook {
	return Hook{ID: h.ID, ProjectID: h.ProjectID, Provider: h.Provider, URL: h.URL, Secret: secret,
		Branches: nonNil(h.Branches), Events: nonNil(h.Events), BaseURL: nullable(h.BaseURLTemplate), CreatedAt: ts(h.CreatedAt)}
}

// createHook: POST /api/projects/{id}/hooks {provider, branches?, events?, baseUrl?}.
func (s *Server) createHook(w http.ResponseWriter, r *http.Request) {
	if !s.scmOn(w) {
		return
	}
	var in struct {
		Provider *string  `json:"provider"`
		Branches []string `json:"branches"`
		Events   []string `json:"events"`
		BaseURL  *string  `json:"baseUrl"`
	}
	if err := decode(w, r, &in); err != nil {
		writeDomainError(w, err)
		return
	}
	if in.Provider == nil {
		writeDomainError(w, domain.BadRequest("Missing required fields", "provider is required: github or gitlab"))
		return
	}
	hin := scm.HookInput{Provider: *in.Provider, Branches: in.Branches, Events: in.Events}
	if in.BaseURL != nil {
		hin.BaseURL = *in.BaseURL
	}
	h, err := s.scm.CreateHook(r.Context(), principalFrom(r), r.PathValue("id"), hin)
	if err != nil {
		s.fail(w, r, err, "Failed to create hook")
		return
	}
	created(w, obj{"message": "Hook created: its secret is shown only now", "data": obj{"hook": hookView(&h.HookInfo, h.Secret)}})
}

// listHooks: GET /api/projects/{id}/hooks.
func (s *Server) listHooks(w http.ResponseWriter, r *http.Request) {
	if !s.scmOn(w) {
		return
	}
	hooks, err := s.scm.ListHooks(r.Context(), principalFrom(r), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err, "Failed to list hooks")
		return
	}
	out := make([]Hook, len(hooks))
	for i := range hooks {
		out[i] = hookView(&hooks[i], "")
	}
	ok(w, obj{"data": obj{"hooks": out}})
}

// deleteHook: DELETE /api/projects/{id}/hooks/{hookId}.
func (s *Server) deleteHook(w http.ResponseWriter, r *http.Request) {
	if !s.scmOn(w) {
		return
	}
	if err := s.scm.DeleteHook(r.Context(), principalFrom(r), r.PathValue("id"), r.PathValue("hookId")); err != nil {
		s.fail(w, r, err, "Failed to delete hook")
		return
	}
	ok(w, obj{"message": "Hook deleted"})
}

// receiveHook: POST /api/hooks/{provider}/{hookId}, a source-control host's delivery. The raw
// body (at most maxDeliveryBytes, else 413) is what the signature covers. 200 for a ping, 202
// for anything taken: a run queued, a duplicate, or an event that queues nothing (with a note).
func (s *Server) receiveHook(w http.ResponseWriter, r *http.Request) {
	if !s.scmOn(w) {
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxDeliveryBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			writeDomainError(w, domain.TooLarge("Request body too large",
				fmt.Sprintf("A delivery's body must be at most %d bytes", maxDeliveryBytes)))
			return
		}
		writeDomainError(w, domain.BadRequest("Invalid payload", "The request body could not be read"))
		return
	}
	rc, err := s.scm.Receive(r.Context(), r.PathValue("provider"), r.PathValue("hookId"), r.Header, body)
	if err != nil {
		s.fail(w, r, err, "Hook delivery failed")
		return
	}
	switch {
	case rc.Ping:
		ok(w, obj{"message": rc.Note})
	case rc.TaskID != "":
		writeJSON(w, http.StatusAccepted, obj{"success": true, "message": "Run queued", "data": obj{"taskId": rc.TaskID}})
	default:
		writeJSON(w, http.StatusAccepted, obj{"success": true, "message": rc.Note, "duplicate": rc.Duplicate})
	}
}
