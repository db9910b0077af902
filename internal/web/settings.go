package web

import (
	"net/http"
	"strconv"
	"strings"

	"verdict/internal/ai/models"
	"verdict/internal/analysis"
	"verdict/internal/domain"
	"verdict/internal/identity"
	"verdict/internal/sso"
)

// The settings page: the organization and its model settings on /settings. Every form is for
// admins; the services refuse anyone else anyway.

const (
	settingsPath = "/settings"
	billingPath  = "/settings/billing"
)

// providerRow is a model provider on /settings: whether the organization saved its own key
// (the key itself is never read back).
type providerRow struct {
	Name   string
	OwnKey bool
}

type settingsData struct {
	Org   *domain.Organization
	Admin bool
	// AI is the analyst's model settings, nil when the server has no analyst or they could not
	// be read (AIError says so).
	AI        *analysis.Config
	AIError   string
	Providers []providerRow
	// Retention is the organization's retention, nil when it could not be read.
	Retention *identity.RetentionSettings
	// SSO is the organization's OpenID Connect provider as admins see it (the client secret
	// only as set or not), nil for others or when the server has no single sign-on.
	SSO *sso.View
	// Roles are the roles new members may get through the provider.
	Roles []domain.Role
	// Erasable: the server erases organizations (the danger zone is shown to admins).
	Erasable bool
}

func (s *Server) settings(w http.ResponseWriter, r *http.Request) {
	st := stateOf(r)
	if st.org == nil {
		s.fail(w, r, domain.NotFound("Organization not found", "The organization no longer exists"))
		return
	}
	d := settingsData{Org: st.org, Admin: st.p.IsAdmin()}
	if ret, err := s.identity.Retention(r.Context(), st.p); err != nil {
		s.log.Warn("reading the retention for /settings", "err", err)
	} else {
		d.Retention = ret
	}
	if s.sso != nil && d.Admin {
		if v, err := s.sso.Get(r.Context(), st.p); err != nil {
			s.log.Warn("reading single sign-on for /settings", "err", err)
		} else {
			d.SSO, d.Roles = v, []domain.Role{domain.RoleViewer, domain.RoleDeveloper, domain.RoleAdmin}
		}
	}
	d.Erasable = s.custody != nil
	if s.analyst != nil {
		c, err := s.analyst.Config(r.Context(), st.p)
		if err != nil {
			s.log.Warn("reading the model settings for /settings", "err", err)
			d.AIError = "The model settings could not be read."
		} else {
			d.AI = c
			for _, p := range models.Providers {
				d.Providers = append(d.Providers, providerRow{Name: string(p), OwnKey: c.OwnKeys[p]})
			}
		}
	}
	s.render(w, r, http.StatusOK, "settings", "Settings", d)
}

// updateOrganization saves the organization form: its name and the two AI flags (an unticked
// checkbox is not sent, so its absence is "off").
func (s *Server) updateOrganization(w http.ResponseWriter, r *http.Request) {
	name := r.PostFormValue("name")
	ai, planner := r.PostFormValue("aiAnalysis") == "on", r.PostFormValue("automationPlanner") == "on"
	_, err := s.identity.UpdateOrganization(r.Context(), stateOf(r).p, identity.OrganizationPatch{Name: &name,
		AIAnalysisEnabled: &ai, AutomationPlanner: &planner})
	if err != nil {
		s.refused(w, r, settingsPath, err)
		return
	}
	s.done(w, r, settingsPath, "Organization settings saved.")
}

func (s *Server) updateAI(w http.ResponseWriter, r *http.Request, patch analysis.ConfigPatch, text string) {
	if s.analyst == nil {
		s.fail(w, r, domain.Unavailable("Analysis not configured", "Failure analysis is not available on this server"))
		return
	}
	if _, err := s.analyst.UpdateConfig(r.Context(), stateOf(r).p, patch); err != nil {
		s.refused(w, r, settingsPath, err)
		return
	}
	s.done(w, r, settingsPath, text)
}

func (s *Server) setDefaultModel(w http.ResponseWriter, r *http.Request) {
	m := r.PostFormValue("defaultModel")
	s.updateAI(w, r, analysis.ConfigPatch{DefaultModel: &m}, "Default model set to "+m+".")
}

// saveOwnKey saves a provider key of the organization's own, once the provider accepts it.
func (s *Server) saveOwnKey(w http.ResponseWriter, r *http.Request) {
	p := r.PostFormValue("provider")
	s.updateAI(w, r, analysis.ConfigPatch{OwnKey: &analysis.OwnKey{Provider: p, APIKey: r.PostFormValue("apiKey")}},
		"Your own "+p+" key was checked with the provider and saved.")
}

func (s *Server) removeOwnKey(w http.ResponseWriter, r *http.Request) {
	p := r.PostFormValue("provider")
	s.updateAI(w, r, analysis.ConfigPatch{RemoveOwnKey: &p}, "Your own "+p+" key was removed.")
}

// updateRetention saves the retention form: each field a number of days, or empty for the
// plan's value.
func (s *Server) updateRetention(w http.ResponseWriter, r *http.Request) {
	var patch identity.RetentionPatch
	for _, f := range []struct {
		name string
		dst  *identity.RetentionChange
	}{{"logsDays", &patch.LogsDays}, {"runsDays", &patch.RunsDays}} {
		v := strings.TrimSpace(r.PostFormValue(f.name))
		*f.dst = identity.RetentionChange{Set: true}
		if v == "" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			s.refused(w, r, settingsPath, domain.BadRequest("Validation error", f.name+" must be a whole number of days, or empty for the plan's value"))
			return
		}
		f.dst.Days = &n
	}
	if _, err := s.identity.UpdateRetention(r.Context(), stateOf(r).p, patch); err != nil {
		s.refused(w, r, settingsPath, err)
		return
	}
	s.done(w, r, settingsPath, "Retention saved.")
}

// saveSSO saves the single sign-on form, as PUT /api/organization/sso does: the domains one a
// line or comma-separated, the client secret kept when its field is left empty (it is never
// shown), "required" off when unticked.
func (s *Server) saveSSO(w http.ResponseWriter, r *http.Request) {
	if s.sso == nil {
		s.fail(w, r, domain.Unavailable("Single sign-on unavailable", "Single sign-on is not available on this server"))
		return
	}
	issuer, clientID, role := r.PostFormValue("issuer"), r.PostFormValue("clientId"), r.PostFormValue("defaultRole")
	domains := strings.FieldsFunc(r.PostFormValue("domains"), func(c rune) bool {
		return c == ',' || c == '\n' || c == '\r' || c == ' ' || c == '\t'
	})
	required := r.PostFormValue("required") == "on"
	in := sso.Input{Issuer: &issuer, ClientID: &clientID, Domains: &domains, DefaultRole: &role, Required: &required}
	if secret := r.PostFormValue("clientSecret"); secret != "" {
		in.ClientSecret = &secret
	}
	if _, err := s.sso.Put(r.Context(), stateOf(r).p, in); err != nil {
		s.refused(w, r, settingsPath, err)
		return
	}
	s.done(w, r, settingsPath, "Single sign-on saved.")
}

// scheduleErase schedules the organization's erasure, as DELETE /api/organization does: the
// organization's slug typed as confirmation.
func (s *Server) scheduleErase(w http.ResponseWriter, r *http.Request) {
	if s.custody == nil {
		s.fail(w, r, domain.Unavailable("Erasure unavailable", "Erasing organizations is not available on this server"))
		return
	}
	e, err := s.custody.ScheduleErase(r.Context(), stateOf(r).p, strings.TrimSpace(r.PostFormValue("confirm")))
	if err != nil {
		s.refused(w, r, settingsPath, err)
		return
	}
	s.done(w, r, settingsPath, "The organization will be erased at "+e.EraseAt.UTC().Format("2006-01-02 15:04 UTC")+
		"; an admin can cancel it until then.")
}

func (s *Server) cancelErase(w http.ResponseWriter, r *http.Request) {
	if s.custody == nil {
		s.fail(w, r, domain.Unavailable("Erasure unavailable", "Erasing organizations is not available on this server"))
		return
	}
	if err := s.custody.CancelErase(r.Context(), stateOf(r).p); err != nil {
		s.refused(w, r, settingsPath, err)
		return
	}
	s.done(w, r, settingsPath, "The organization's erasure is cancelled.")
}
