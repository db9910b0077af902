package web

import (
	"errors"
	"net/http"
	"strings"
	"unicode"

	"verdict/internal/domain"
	"verdict/internal/scm"
)

// Source control on the dashboard: the "Source control" part of /settings/integrations (the
// organization's GitHub and GitLab tokens, saved by admins through scm.Service, which checks a
// token with its host before sealing it; the page only shows whether one is stored) and a
// project's inbound hooks (/projects/{id}/hooks), whose secret is shown once, on the page that
// answers the form creating the hook (never a redirect, a cookie or a URL), as a new API key is.
// Each action takes from the bucket of its API twin; the service decides the roles.

// scmHosts are the source-control hosts and how the pages name them.
var scmHosts = []struct{ Provider, Name string }{
	{domain.ProviderGitHub, "GitHub"},
	{domain.ProviderGitLab, "GitLab"},
}

// scmName is the name of the source-control host provider, "" for another provider.
func scmName(provider string) string {
	for _, h := range scmHosts {
		if h.Provider == provider {
			return h.Name
		}
	}
	return ""
}

// scmPanel is a host's part of the integrations page: its settings and the refusal of its form,
// shown above it with the API URL typed (never the token).
type scmPanel struct {
	Provider, Name string
	Settings       *scm.Settings
	APIURL         string // the form's API URL: the stored one, or the one typed
	Error          *formError
}

// scmPanels reads the organization's source-control settings; nil and no error when the server
// has no source-control service.
func (s *Server) scmPanels(r *http.Request) ([]scmPanel, *formError) {
	if s.scm == nil {
		return nil, nil
	}
	p := stateOf(r).p
	out := make([]scmPanel, 0, len(scmHosts))
	for _, h := range scmHosts {
		st, err := s.scm.Settings(r.Context(), p, h.Provider)
		if err != nil {
			return nil, s.formErrorOf(r, err)
		}
		out = append(out, scmPanel{Provider: h.Provider, Name: h.Name, Settings: st, APIURL: st.APIURL})
	}
	return out, nil
}

var errSCMOff = domain.Unavailable("Source control not available", "Source-control integrations are not available on this server")

// saveSCM saves the organization's token for provider (POST /settings/integrations/github and
// …/gitlab, twins of PUT /api/integrations/{github,gitlab}): the token is required, as the API
// requires it, since the service checks every token it saves with the host. A refusal (400
// Invalid token, an API address the egress guard refuses, 403 for a member who is not an admin)
// is the page again with the service's words above the form.
func (s *Server) saveSCM(provider string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.scm == nil {
			s.fail(w, r, errSCMOff)
			return
		}
		in := scm.SaveInput{Token: r.PostFormValue("token"), APIURL: strings.TrimSpace(r.PostFormValue("apiUrl"))}
		if _, err := s.scm.Save(r.Context(), stateOf(r).p, provider, in); err != nil {
			if forbiddenOrMissing(err) {
				s.fail(w, r, err) // a form a member who is not an admin does not have
				return
			}
			d := s.integrationsData(r)
			fe := s.formErrorOf(r, err)
			for i := range d.SCM {
				if p := &d.SCM[i]; p.Provider == provider {
					p.Error, p.APIURL = fe, in.APIURL
				}
			}
			s.render(w, r, fe.Status, "integrations", "Integrations", d)
			return
		}
		s.done(w, r, integrationsPath, scmName(provider)+" token saved.")
	}
}

// hooksData is a project's hooks page.
type hooksData struct {
	ProjectID, ProjectName, Repository string
	Hooks                              []hookRow
	// Created is the hook just created with its secret, shown only in the answer to its
	// creation.
	Created *createdHook
	Error   *formError
	Form    hookForm
}

// hookRow is a hook as its row shows it.
type hookRow struct {
	ID, Provider, Name, URL, BaseURL string
	Branches, Events                 string // "" for the defaults: every branch, both events
	CreatedAt                        string
}

type createdHook struct {
	hookRow
	Secret string
}

// hookForm is what the form holds: empty for a new form, what was typed after a refusal.
type hookForm struct {
	Provider, Branches, BaseURL string
	Push, Requests              bool
}

func viewHook(h *scm.HookInfo) hookRow {
	return hookRow{ID: h.ID, Provider: h.Provider, Name: scmName(h.Provider), URL: h.URL, BaseURL: h.BaseURLTemplate,
		Branches: strings.Join(h.Branches, ", "), Events: strings.Join(h.Events, ", "), CreatedAt: stamp(&h.CreatedAt)}
}

func hooksPath(projectID string) string { return projectPath(projectID) + "/hooks" }

// hooksOn answers the 404 page when the server has no source-control service.
func (s *Server) hooksOn(w http.ResponseWriter, r *http.Request) bool {
	if s.scm == nil {
		s.errorPage(w, r, http.StatusNotFound, "Page not found", "There is no page at this address.")
		return false
	}
	return true
}

// hooksPage renders the project's hooks page with d's form, refusal and new hook; another
// organization's project is the 404 page.
func (s *Server) hooksPage(w http.ResponseWriter, r *http.Request, status int, d hooksData) {
	p := stateOf(r).p
	proj, err := s.executions.GetProject(r.Context(), p, r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	hooks, err := s.scm.ListHooks(r.Context(), p, proj.ID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	d.ProjectID, d.ProjectName, d.Repository = proj.ID, proj.Name, proj.Repository
	for i := range hooks {
		d.Hooks = append(d.Hooks, viewHook(&hooks[i]))
	}
	s.render(w, r, status, "hooks", "Hooks of "+proj.Name, d)
}

func (s *Server) hooks(w http.ResponseWriter, r *http.Request) {
	if !s.hooksOn(w, r) {
		return
	}
	s.hooksPage(w, r, http.StatusOK, hooksData{Form: hookForm{Push: true, Requests: true}})
}

// requestEvents are the hosts' names of their pull (merge) request event.
var requestEvents = map[string]string{domain.ProviderGitHub: "pull_request", domain.ProviderGitLab: "merge_request"}

// hookInput reads the form that adds a hook: branch globs separated by commas or spaces, and the
// events ticked (both: the hook's default, left to the service).
func hookInput(f hookForm) (scm.HookInput, error) {
	in := scm.HookInput{Provider: f.Provider, BaseURL: f.BaseURL}
	if globs := strings.FieldsFunc(f.Branches, func(c rune) bool { return c == ',' || unicode.IsSpace(c) }); len(globs) > 0 {
		in.Branches = globs // none: nil, every branch, as when the API's field is left out
	}
	switch {
	case !f.Push && !f.Requests:
		return in, domain.BadRequest("Validation error", "Tick at least one event: pushes or pull (merge) requests")
	case !f.Requests:
		in.Events = []string{"push"}
	case !f.Push:
		if ev, ok := requestEvents[f.Provider]; ok {
			in.Events = []string{ev}
		}
	}
	return in, nil
}

// createHook adds a hook (POST /projects/{id}/hooks, twin of POST /api/projects/{id}/hooks) and
// answers with the page itself, not a redirect: the secret is shown this once.
func (s *Server) createHook(w http.ResponseWriter, r *http.Request) {
	if !s.hooksOn(w, r) {
		return
	}
	f := hookForm{Provider: r.PostFormValue("provider"), Branches: r.PostFormValue("branches"),
		BaseURL: strings.TrimSpace(r.PostFormValue("baseUrl")), Push: r.PostFormValue("push") == "on", Requests: r.PostFormValue("requests") == "on"}
	in, err := hookInput(f)
	if err == nil {
		var h *scm.CreatedHook
		if h, err = s.scm.CreateHook(r.Context(), stateOf(r).p, r.PathValue("id"), in); err == nil {
			s.hooksPage(w, r, http.StatusCreated, hooksData{Created: &createdHook{hookRow: viewHook(&h.HookInfo), Secret: h.Secret},
				Form: hookForm{Push: true, Requests: true}})
			return
		}
	}
	if forbiddenOrMissing(err) {
		s.fail(w, r, err) // a viewer's forged form, another organization's project
		return
	}
	fe := s.formErrorOf(r, err)
	s.hooksPage(w, r, fe.Status, hooksData{Error: fe, Form: f})
}

// forbiddenOrMissing: err is a 403 or a 404, shown as the error page rather than above a form
// the caller may not have.
func forbiddenOrMissing(err error) bool {
	var de *domain.Error
	return errors.As(err, &de) && (de.Kind == domain.KindForbidden || de.Kind == domain.KindNotFound)
}

func (s *Server) deleteHook(w http.ResponseWriter, r *http.Request) {
	if !s.hooksOn(w, r) {
		return
	}
	id := r.PathValue("id")
	if err := s.scm.DeleteHook(r.Context(), stateOf(r).p, id, r.PathValue("hookId")); err != nil {
		s.refused(w, r, hooksPath(id), err)
		return
	}
	s.done(w, r, hooksPath(id), "Hook deleted: its URL answers 404 from now on.")
}
