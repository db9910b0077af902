package api

import (
	"net/http"

	"verdict/internal/domain"
	"verdict/internal/planning"
)

var errPlannerOff = domain.Unavailable("Planner not configured", "The automation planner is not available on this server")

// PlanSummary is a saved plan in the history: no document.
type PlanSummary struct {
	ID            string `json:"id"`
	ProjectID     string `json:"projectId"`
	Framework     string `json:"framework"`
	DesignPattern string `json:"designPattern"`
	TestCount     int    `json:"testCount"`
	Provider      string `json:"provider"`
	Model         string `json:"model"`
	CreatedAt     string `json:"createdAt"`
	CreatedBy     string `json:"createdBy"`
}

// Plan is a saved plan with its document.
type Plan struct {
	PlanSummary
	PlanID   string   `json:"planId"` // the same as id, under the name generate answers with
	TestIDs  []string `json:"testIds"`
	Markdown string   `json:"markdown"`
}

func planSummary(p *domain.AutomationPlan) PlanSummary {
	return PlanSummary{ID: p.ID, ProjectID: p.ProjectID, Framework: p.Framework, DesignPattern: p.DesignPattern,
		TestCount: len(p.TestIDs), Provider: p.Provider, Model: p.Model, CreatedAt: ts(p.CreatedAt), CreatedBy: p.CreatedBy}
}

func planView(p *domain.AutomationPlan) Plan {
	ids := p.TestIDs
	if ids == nil {
		ids = []string{}
	}
	return Plan{PlanSummary: planSummary(p), PlanID: p.ID, TestIDs: ids, Markdown: p.Markdown}
}

func (s *Server) discoverPlan(w http.ResponseWriter, r *http.Request) {
	if s.planner == nil {
		writeDomainError(w, errPlannerOff)
		return
	}
	var in struct {
		ProjectID string `json:"projectId"`
		Suite     string `json:"suite"`
		Tag       string `json:"tag"`
	}
	if err := decode(w, r, &in); err != nil {
		writeDomainError(w, err)
		return
	}
	d, err := s.planner.Discover(r.Context(), principalFrom(r), planning.DiscoverInput{ProjectID: in.ProjectID, Suite: in.Suite, Tag: in.Tag})
	if err != nil {
		s.fail(w, r, err, "Failed to discover tests")
		return
	}
	ok(w, obj{"data": d})
}

func (s *Server) generatePlan(w http.ResponseWriter, r *http.Request) {
	if s.planner == nil {
		writeDomainError(w, errPlannerOff)
		return
	}
	var in struct {
		ProjectID     string   `json:"projectId"`
		TestIDs       []string `json:"testIds"`
		Framework     string   `json:"framework"`
		DesignPattern string   `json:"designPattern"`
	}
	if err := decode(w, r, &in); err != nil {
		writeDomainError(w, err)
		return
	}
	p, err := s.planner.Generate(r.Context(), principalFrom(r), planning.GenerateInput{ProjectID: in.ProjectID,
		TestIDs: in.TestIDs, Framework: in.Framework, DesignPattern: in.DesignPattern})
	if err != nil {
		s.fail(w, r, err, "Failed to generate the plan")
		return
	}
	created(w, obj{"data": planView(p)})
}

func (s *Server) planHistory(w http.ResponseWriter, r *http.Request) {
	if s.planner == nil {
		writeDomainError(w, errPlannerOff)
		return
	}
	plans, err := s.planner.History(r.Context(), principalFrom(r), r.URL.Query().Get("projectId"))
	if err != nil {
		s.fail(w, r, err, "Failed to list plans")
		return
	}
	out := make([]PlanSummary, len(plans))
	for i := range plans {
		out[i] = planSummary(&plans[i])
	}
	ok(w, obj{"data": obj{"plans": out}})
}

func (s *Server) openPlan(w http.ResponseWriter, r *http.Request) {
	if s.planner == nil {
		writeDomainError(w, errPlannerOff)
		return
	}
	p, err := s.planner.Open(r.Context(), principalFrom(r), r.PathValue("planId"))
	if err != nil {
		s.fail(w, r, err, "Failed to open the plan")
		return
	}
	ok(w, obj{"data": planView(p)})
}

func (s *Server) deletePlan(w http.ResponseWriter, r *http.Request) {
	if s.planner == nil {
		writeDomainError(w, errPlannerOff)
		return
	}
	if err := s.planner.Delete(r.Context(), principalFrom(r), r.PathValue("planId")); err != nil {
		s.fail(w, r, err, "Failed to delete the plan")
		return
	}
	ok(w, obj{"message": "Plan deleted"})
}

func (s *Server) planFilterOptions(w http.ResponseWriter, r *http.Request) {
	if s.planner == nil {
		writeDomainError(w, errPlannerOff)
		return
	}
	o, err := s.planner.FilterOptions(r.Context(), principalFrom(r), r.URL.Query().Get("projectId"))
	if err != nil {
		s.fail(w, r, err, "Failed to list filter options")
		return
	}
	ok(w, obj{"data": obj{"suites": nonNil(o.Suites), "tags": nonNil(o.Tags)}})
}
