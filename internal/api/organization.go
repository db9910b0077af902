package api

import (
	"net/http"

	"verdict/internal/domain"
	"verdict/internal/identity"
)

func (s *Server) getOrganization(w http.ResponseWriter, r *http.Request) {
	org, n, err := s.identity.Organization(r.Context(), principalFrom(r))
	if err != nil {
		s.fail(w, r, err, "Failed to fetch organization")
		return
	}
	ok(w, obj{"organization": orgView(org, n)})
}

func (s *Server) updateOrganization(w http.ResponseWriter, r *http.Request, patch identity.OrganizationPatch, message string) {
	org, err := s.identity.UpdateOrganization(r.Context(), principalFrom(r), patch)
	if err != nil {
		s.fail(w, r, err, "Failed to update organization")
		return
	}
	ok(w, obj{"message": message, "organization": obj{"id": org.ID, "name": org.Name,
		"aiAnalysisEnabled": org.AIAnalysisEnabled, "features": org.Features, "allowedImages": nonNil(org.AllowedImages)}})
}

func (s *Server) patchOrganization(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Name              *string   `json:"name"`
		AIAnalysisEnabled *bool     `json:"aiAnalysisEnabled"`
		AllowedImages     *[]string `json:"allowedImages"`
	}
	if err := decode(w, r, &in); err != nil {
		writeDomainError(w, err)
		return
	}
	if in.Name == nil && in.AIAnalysisEnabled == nil && in.AllowedImages == nil {
		writeDomainError(w, domain.BadRequest("Missing required fields", "Send name, aiAnalysisEnabled and/or allowedImages"))
		return
	}
	s.updateOrganization(w, r, identity.OrganizationPatch{Name: in.Name, AIAnalysisEnabled: in.AIAnalysisEnabled,
		AllowedImages: in.AllowedImages}, "Organization updated")
}

func (s *Server) patchAIAnalysis(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Enabled *bool `json:"enabled"`
	}
	if err := decode(w, r, &in); err != nil {
		writeDomainError(w, err)
		return
	}
	if in.Enabled == nil {
		writeDomainError(w, domain.BadRequest("Missing required fields", "enabled (boolean) is required"))
		return
	}
	s.updateOrganization(w, r, identity.OrganizationPatch{AIAnalysisEnabled: in.Enabled}, "AI analysis setting updated")
}

func (s *Server) patchFeatures(w http.ResponseWriter, r *http.Request) {
	var in struct {
		AIFeatures *struct {
			AutomationPlanner *bool `json:"automationPlanner"`
		} `json:"aiFeatures"`
	}
	if err := decode(w, r, &in); err != nil {
		writeDomainError(w, err)
		return
	}
	if in.AIFeatures == nil || in.AIFeatures.AutomationPlanner == nil {
		writeDomainError(w, domain.BadRequest("Missing required fields", "Send {aiFeatures:{automationPlanner: boolean}}"))
		return
	}
	s.updateOrganization(w, r, identity.OrganizationPatch{AutomationPlanner: in.AIFeatures.AutomationPlanner}, "Features updated")
}

func (s *Server) usage(w http.ResponseWriter, r *http.Request) {
	u, err := s.identity.Usage(r.Context(), principalFrom(r))
	if err != nil {
		s.fail(w, r, err, "Failed to fetch usage")
		return
	}
	alerts := u.Alerts
	if alerts == nil {
		alerts = []domain.UsageAlert{}
	}
	ok(w, obj{"usage": obj{
		"currentPeriod": obj{"startDate": ts(u.PeriodStart), "endDate": ts(u.PeriodEnd)},
		"testRuns":      obj{"used": u.RunsUsed, "limit": u.Limits.MaxTestRuns, "percentUsed": domain.PercentUsed(int64(u.RunsUsed), int64(u.Limits.MaxTestRuns))},
		"users":         obj{"active": u.ActiveUsers, "limit": u.Limits.MaxUsers},
		"projects":      obj{"used": u.Projects, "limit": u.Limits.MaxProjects},
		"storage":       obj{"usedBytes": u.StorageUsed, "limitBytes": u.Limits.MaxStorageBytes},
	}, "alerts": alerts})
}
