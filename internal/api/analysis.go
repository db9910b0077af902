package api

import (
	"net/http"

	"verdict/internal/ai/models"
	"verdict/internal/analysis"
	"verdict/internal/domain"
)

// errAnalysisOff answers the analysis routes of a server built without an analyst.
var errAnalysisOff = domain.Unavailable("Analysis not configured", "Failure analysis is not available on this server")

// reanalyse: POST /api/executions/{taskId}/analysis analyses a FAILED or UNSTABLE run again;
// the result arrives as execution-updated.
func (s *Server) reanalyse(w http.ResponseWriter, r *http.Request) {
	if s.analyst == nil {
		writeDomainError(w, errAnalysisOff)
		return
	}
	if err := s.analyst.Reanalyse(r.Context(), principalFrom(r), r.PathValue("taskId")); err != nil {
		s.fail(w, r, err, "Failed to analyse execution")
		return
	}
	writeJSON(w, http.StatusAccepted, obj{"success": true, "message": "Analysis started; the result arrives as execution-updated"})
}

// triage: PATCH /api/executions/{taskId}/analysis {category} records a person's category.
func (s *Server) triage(w http.ResponseWriter, r *http.Request) {
	if s.analyst == nil {
		writeDomainError(w, errAnalysisOff)
		return
	}
	var in struct {
		Category *string `json:"category"`
	}
	if err := decode(w, r, &in); err != nil {
		writeDomainError(w, err)
		return
	}
	if in.Category == nil {
		writeDomainError(w, domain.BadRequest("Missing required fields", "category is required"))
		return
	}
	e, err := s.analyst.Triage(r.Context(), principalFrom(r), r.PathValue("taskId"), *in.Category)
	if err != nil {
		s.fail(w, r, err, "Failed to record triage")
		return
	}
	s.recordIndexes(r.Context(), e)
	ok(w, obj{"message": "Triage recorded", "execution": s.views.Execution(e, s.clock())})
}

// AIConfig is the view of an organization's model settings: never a key.
type AIConfig struct {
	DefaultModel   string          `json:"defaultModel"`
	Models         []string        `json:"models"`
	BYOKConfigured map[string]bool `json:"byokConfigured"`
}

func aiConfigView(c *analysis.Config) AIConfig {
	v := AIConfig{DefaultModel: c.DefaultModel, Models: c.Models, BYOKConfigured: map[string]bool{}}
	for _, p := range models.Providers {
		v.BYOKConfigured[string(p)] = c.OwnKeys[p]
	}
	return v
}

func (s *Server) getAIConfig(w http.ResponseWriter, r *http.Request) {
	if s.analyst == nil {
		writeDomainError(w, errAnalysisOff)
		return
	}
	c, err := s.analyst.Config(r.Context(), principalFrom(r))
	if err != nil {
		s.fail(w, r, err, "Failed to fetch AI configuration")
		return
	}
	ok(w, obj{"data": aiConfigView(c)})
}

func (s *Server) patchAIConfig(w http.ResponseWriter, r *http.Request) {
	if s.analyst == nil {
		writeDomainError(w, errAnalysisOff)
		return
	}
	var in struct {
		DefaultModel *string `json:"defaultModel"`
		BYOK         *struct {
			Provider string `json:"provider"`
			APIKey   string `json:"apiKey"`
		} `json:"byok"`
		RemoveBYOK *string `json:"removeByok"`
	}
	if err := decode(w, r, &in); err != nil {
		writeDomainError(w, err)
		return
	}
	patch := analysis.ConfigPatch{DefaultModel: in.DefaultModel, RemoveOwnKey: in.RemoveBYOK}
	if in.BYOK != nil {
		patch.OwnKey = &analysis.OwnKey{Provider: in.BYOK.Provider, APIKey: in.BYOK.APIKey}
	}
	c, err := s.analyst.UpdateConfig(r.Context(), principalFrom(r), patch)
	if err != nil {
		s.fail(w, r, err, "Failed to update AI configuration")
		return
	}
	ok(w, obj{"message": "AI configuration updated", "data": aiConfigView(c)})
}
