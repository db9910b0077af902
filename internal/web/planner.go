package web

import (
	"net/http"
	"net/url"

	"verdict/internal/ai/planner"
	"verdict/internal/domain"
	"verdict/internal/planning"
	"verdict/internal/store"
	"verdict/internal/testcases"
)

// The automation planner (/planner): a project's test cases to choose from (or all of them),
// the framework and design pattern, the plan written and saved by planning.Service (the
// built-in planner or the organization's model, as the service decides), the saved plans, and
// a page per plan with its document and delete button.

const plannerPath = "/planner"

var errPlannerOff = domain.Unavailable("Planner not available", "The automation planner is not available on this server")

type planRow struct {
	ID, Project, Framework, DesignPattern, Provider, Model string
	Tests                                                  int
	CreatedAt                                              string
}

type plannerData struct {
	Projects    []domain.Project
	Project     string
	Cases       []domain.TestCase
	CasesTotal  int
	Selected    map[string]bool
	All         bool
	Frameworks  []planner.Framework
	Patterns    []planner.Pattern
	Framework   string
	Pattern     string
	MaxTests    int
	Plans       []planRow
	Error       *formError // the generate form's refusal
	ListError   *formError // the history or the cases could not be read (the flag is off, …)
	Unavailable bool
	NoProjects  bool
}

func (s *Server) plannerData(r *http.Request, project string) (plannerData, error) {
	st := stateOf(r)
	d := plannerData{Project: project, Frameworks: planner.Frameworks, Patterns: planner.Patterns,
		Framework: string(planner.Frameworks[0]), Pattern: string(planner.Patterns[0]), MaxTests: planner.MaxTests,
		Selected: map[string]bool{}}
	if s.planner == nil || s.testCases == nil {
		d.Unavailable = true
		return d, nil
	}
	projects, err := s.executions.ListProjects(r.Context(), st.p)
	if err != nil {
		return d, err
	}
	d.Projects = projects
	names := map[string]string{}
	for _, p := range projects {
		names[p.ID] = p.Name
	}
	if len(projects) == 0 {
		d.NoProjects = true
		return d, nil
	}
	if d.Project == "" {
		d.Project = projects[0].ID
	}
	plans, err := s.planner.History(r.Context(), st.p, "")
	if err != nil {
		d.ListError = s.formErrorOf(r, err)
		return d, nil
	}
	for _, p := range plans {
		name := names[p.ProjectID]
		if name == "" {
			name = "(deleted project)"
		}
		d.Plans = append(d.Plans, planRow{ID: p.ID, Project: name, Framework: p.Framework, DesignPattern: p.DesignPattern,
			Provider: p.Provider, Model: p.Model, Tests: len(p.TestIDs), CreatedAt: p.CreatedAt.UTC().Format("2006-01-02 15:04 UTC")})
	}
	cases, total, err := s.testCases.List(r.Context(), st.p, store.TestCaseFilter{ProjectID: d.Project, Limit: testcases.MaxListLimit})
	if err != nil {
		d.ListError = s.formErrorOf(r, err)
		return d, nil
	}
	d.Cases, d.CasesTotal = cases, total
	return d, nil
}

func (s *Server) plannerPage(w http.ResponseWriter, r *http.Request) {
	d, err := s.plannerData(r, r.URL.Query().Get("project"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "planner", "Automation planner", d)
}

// generatePlan asks the service for the plan of the chosen test cases ("all": every test case
// of the project the list shows); the service checks the role, the flag, the count and each
// case, writes the plan and saves it.
func (s *Server) generatePlan(w http.ResponseWriter, r *http.Request) {
	if s.planner == nil || s.testCases == nil {
		s.fail(w, r, errPlannerOff)
		return
	}
	st := stateOf(r)
	_ = r.ParseForm()
	in := planning.GenerateInput{ProjectID: r.PostFormValue("project"), TestIDs: r.PostForm["case"],
		Framework: r.PostFormValue("framework"), DesignPattern: r.PostFormValue("designPattern")}
	all := r.PostFormValue("all") == "on"
	var err error
	if all && in.ProjectID != "" {
		var cases []domain.TestCase
		cases, _, err = s.testCases.List(r.Context(), st.p, store.TestCaseFilter{ProjectID: in.ProjectID, Limit: testcases.MaxListLimit})
		in.TestIDs = nil
		for _, c := range cases {
			in.TestIDs = append(in.TestIDs, c.ID)
		}
	}
	var plan *domain.AutomationPlan
	if err == nil {
		plan, err = s.planner.Generate(r.Context(), st.p, in)
	}
	if err != nil {
		d, derr := s.plannerData(r, in.ProjectID)
		if derr != nil {
			s.fail(w, r, derr)
			return
		}
		d.Error, d.All, d.Framework, d.Pattern = s.formErrorOf(r, err), all, in.Framework, in.DesignPattern
		for _, id := range in.TestIDs {
			d.Selected[id] = true
		}
		s.render(w, r, d.Error.Status, "planner", "Automation planner", d)
		return
	}
	s.done(w, r, planPath(plan.ID), "Plan generated and saved.")
}

func planPath(id string) string { return plannerPath + "/" + url.PathEscape(id) }

type planData struct {
	Plan    *domain.AutomationPlan
	Project string
	Blocks  []mdBlock
	Created string
}

func (s *Server) planPage(w http.ResponseWriter, r *http.Request) {
	if s.planner == nil {
		s.fail(w, r, errPlannerOff)
		return
	}
	st := stateOf(r)
	plan, err := s.planner.Open(r.Context(), st.p, r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	d := planData{Plan: plan, Blocks: markdownBlocks(plan.Markdown), Created: plan.CreatedAt.UTC().Format("2006-01-02 15:04 UTC")}
	if projects, err := s.executions.ListProjects(r.Context(), st.p); err == nil {
		for _, p := range projects {
			if p.ID == plan.ProjectID {
				d.Project = p.Name
			}
		}
	}
	s.render(w, r, http.StatusOK, "plan", "Plan "+plan.Framework+" · "+plan.DesignPattern, d)
}

func (s *Server) deletePlan(w http.ResponseWriter, r *http.Request) {
	if s.planner == nil {
		s.fail(w, r, errPlannerOff)
		return
	}
	id := r.PathValue("id")
	if err := s.planner.Delete(r.Context(), stateOf(r).p, id); err != nil {
		s.refused(w, r, planPath(id), err)
		return
	}
	s.done(w, r, plannerPath, "Plan deleted.")
}
