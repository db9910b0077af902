package web

import (
	"net/http"

	"verdict/internal/ai"
	"verdict/internal/domain"
)

// A failed or unstable run's page offers, to those who may write, the failure analysis's two
// actions: analyse again (the analyst works in the background and the page hears the result
// over Socket.IO) and triage (a person's category, which the next analyses learn from).

// analysisActions says what the run page offers for e.
type analysisActions struct {
	Reanalyse  bool
	Categories []ai.Category
}

func (s *Server) analysisActionsFor(e *domain.Execution, canWrite bool) *analysisActions {
	if s.analyst == nil || !canWrite || (e.Status != domain.ExecFailed && e.Status != domain.ExecUnstable) {
		return nil
	}
	return &analysisActions{Reanalyse: true, Categories: ai.Categories}
}

func (s *Server) reanalyse(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("taskId")
	if s.analyst == nil {
		s.refused(w, r, runPath(id), domain.Unavailable("Analysis not available", "Failure analysis is not set up on this server"))
		return
	}
	if err := s.analyst.Reanalyse(r.Context(), stateOf(r).p, id); err != nil {
		s.refused(w, r, runPath(id), err)
		return
	}
	s.done(w, r, runPath(id), "Analysis requested: it shows here when it is ready.")
}

func (s *Server) triage(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("taskId")
	if s.analyst == nil {
		s.refused(w, r, runPath(id), domain.Unavailable("Analysis not available", "Failure analysis is not set up on this server"))
		return
	}
	category := r.PostFormValue("category")
	if _, err := s.analyst.Triage(r.Context(), stateOf(r).p, id, category); err != nil {
		s.refused(w, r, runPath(id), err)
		return
	}
	s.done(w, r, runPath(id), "Triaged as "+category+": later analyses of this failure learn from it.")
}
