// Package planning is the automation planner's service: it checks the organization's flag,
// the project and every selected test case against the caller's organization, feeds the
// built-in planner (internal/ai/planner) the project's manual test cases and failure history,
// asks the organization's model for the document when it has one (checking the answer, and
// falling back to the built-in document), and keeps the plans.
package planning

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"

	"verdict/internal/ai/models"
	"verdict/internal/ai/planner"
	"verdict/internal/analysis"
	"verdict/internal/domain"
	"verdict/internal/identity"
	"verdict/internal/store"
)

// Models is what the planner needs of the model providers (*providers.Client).
type Models interface {
	Plan(ctx context.Context, p models.Provider, model, apiKey, instructions string, data json.RawMessage) (string, error)
}

// ModelChooser tells which model an organization uses (*analysis.Service).
type ModelChooser interface {
	ModelFor(ctx context.Context, orgID string) (analysis.Model, error)
}

// Deps are what New needs.
type Deps struct {
	Store  store.Store
	Models Models
	Choose ModelChooser
	Clock  domain.Clock
	Log    *slog.Logger
}

// Service is the planner's service.
type Service struct {
	store  store.Store
	models Models
	choose ModelChooser
	clock  domain.Clock
	log    *slog.Logger
}

// New builds the service.
func New(d Deps) *Service {
	if d.Clock == nil {
		d.Clock = domain.SystemClock
	}
	if d.Log == nil {
		d.Log = slog.Default()
	}
	return &Service{store: d.Store, models: d.Models, choose: d.Choose, clock: d.Clock, log: d.Log}
}

// Bounds of the planner's reads.
const (
	// maxScanned is the most test cases one discovery reads (a project's whole manual suite).
	maxScanned = 10000
	// historyRuns is how many of the project's latest runs discovery learns failures from.
	historyRuns = 10
	// HistoryPlans is how many saved plans the history lists.
	HistoryPlans = 20
)

var (
	errFeatureOff      = domain.Forbidden("Feature not enabled", "The automation planner is not enabled for this organization")
	errProjectNotFound = domain.NotFound("Project not found", "No such project in your organization")
	errCaseNotFound    = domain.NotFound("Test case not found", "A selected test case is not one of this project's in your organization")
	errPlanNotFound    = domain.NotFound("Plan not found", "No such plan in your organization")
	errReadOnly        = domain.Forbidden("Forbidden", "Viewers cannot generate automation plans")
	errCannotDelete    = domain.Forbidden("Forbidden", "Viewers cannot delete automation plans")
)

func validation(msg string) *domain.Error { return domain.BadRequest("Validation error", msg) }

// enabled checks the organization's flag and, when projectID is given, that the project is
// the organization's.
func (s *Service) enabled(ctx context.Context, p *identity.Principal, projectID string) error {
	org, err := s.store.Organizations().Get(ctx, p.OrgID)
	if err != nil {
		return err
	}
	if !org.Features.AIFeatures.AutomationPlanner {
		return errFeatureOff
	}
	if projectID == "" {
		return nil
	}
	if _, err := s.store.Projects().Get(ctx, p.OrgID, projectID); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return errProjectNotFound
		}
		return err
	}
	return nil
}

// DiscoverInput narrows a discovery to a project's suite and/or tag.
type DiscoverInput struct {
	ProjectID string
	Suite     string
	Tag       string
}

// Discover scans the project's manual test cases and rates their risk (every role).
func (s *Service) Discover(ctx context.Context, p *identity.Principal, in DiscoverInput) (*planner.Discovery, error) {
	if strings.TrimSpace(in.ProjectID) == "" {
		return nil, validation("projectId is required")
	}
	if err := s.enabled(ctx, p, in.ProjectID); err != nil {
		return nil, err
	}
	cases, _, err := s.store.TestCases().List(ctx, p.OrgID, store.TestCaseFilter{ProjectID: in.ProjectID, Limit: maxScanned})
	if err != nil {
		return nil, err
	}
	hist, err := s.history(ctx, p.OrgID, in.ProjectID)
	if err != nil {
		return nil, err
	}
	d := planner.Discover(toCases(cases), hist, planner.Options{ProjectID: in.ProjectID, Suite: in.Suite, Tag: in.Tag})
	return &d, nil
}

// history counts the failures of each suite and test title in the project's latest runs.
func (s *Service) history(ctx context.Context, orgID, projectID string) (planner.History, error) {
	h := planner.History{Suites: map[string]int{}, Tests: map[string]int{}}
	runs, _, err := s.store.Executions().List(ctx, orgID, store.ExecutionFilter{ProjectID: projectID, Limit: historyRuns})
	if err != nil {
		return h, err
	}
	for i := range runs {
		if !runs[i].Status.Final() {
			continue
		}
		h.Runs++
		if runs[i].Summary.Failed == 0 && runs[i].Summary.Flaky == 0 {
			continue // nothing to count: skip reading its tests
		}
		e, err := s.store.Executions().Get(ctx, orgID, runs[i].TaskID)
		if errors.Is(err, store.ErrNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return h, err
		}
		for _, t := range e.Tests {
			if t.Status == domain.TestFailed || t.Status == domain.TestFlaky {
				h.Tests[t.Name]++
				if t.Suite != "" {
					h.Suites[t.Suite]++
				}
			}
		}
	}
	return h, nil
}

func toCases(cs []domain.TestCase) []planner.Case {
	out := make([]planner.Case, len(cs))
	for i, c := range cs {
		steps := make([]planner.Step, len(c.Steps))
		for j, st := range c.Steps {
			steps[j] = planner.Step{Action: st.Action, Expected: st.Expected}
		}
		out[i] = planner.Case{ID: c.ID, Title: c.Title, Suite: c.Suite, Tags: c.Tags, Priority: string(c.Priority),
			Preconditions: c.Preconditions, Steps: steps}
	}
	return out
}

// GenerateInput selects a project's test cases for a plan.
type GenerateInput struct {
	ProjectID     string
	TestIDs       []string
	Framework     string
	DesignPattern string
}

// Generate writes and saves the automation plan of the selected test cases (admins and
// developers). Every selected case is checked against the caller's organization and the
// project after it is read: one that is not theirs is 404, and nothing is planned.
func (s *Service) Generate(ctx context.Context, p *identity.Principal, in GenerateInput) (*domain.AutomationPlan, error) {
	if !p.CanWrite() {
		return nil, errReadOnly
	}
	switch {
	case strings.TrimSpace(in.ProjectID) == "":
		return nil, validation("projectId is required")
	case len(in.TestIDs) == 0:
		return nil, validation("testIds must name 1 to 30 test cases")
	case len(in.TestIDs) > planner.MaxTests:
		return nil, domain.BadRequest("Too many tests", "A plan covers at most 30 test cases")
	}
	if _, err := planner.ParseFramework(in.Framework); err != nil {
		return nil, validation(err.Error())
	}
	if _, err := planner.ParsePattern(in.DesignPattern); err != nil {
		return nil, validation(err.Error())
	}
	if err := s.enabled(ctx, p, in.ProjectID); err != nil {
		return nil, err
	}
	ids := unique(in.TestIDs)
	got, err := s.store.TestCases().GetMany(ctx, p.OrgID, ids)
	if err != nil {
		return nil, err
	}
	if len(got) != len(ids) {
		return nil, errCaseNotFound
	}
	for _, c := range got {
		if c.OrganizationID != p.OrgID || c.ProjectID != in.ProjectID {
			return nil, errCaseNotFound // re-checked after the read, whatever the query did
		}
	}
	cases := toCases(got)
	plan := &domain.AutomationPlan{OrganizationID: p.OrgID, ProjectID: in.ProjectID, Framework: in.Framework,
		DesignPattern: in.DesignPattern, TestIDs: ids, Provider: "builtin", Model: "builtin", CreatedBy: p.UserID,
		CreatedAt: s.clock()}
	if md, m, ok := s.askModel(ctx, p.OrgID, cases, in); ok {
		plan.Markdown, plan.Provider, plan.Model = md, string(m.Provider), m.Model
	} else {
		md, err := planner.Generate(cases, in.Framework, in.DesignPattern)
		var ie *planner.InputError
		if errors.As(err, &ie) {
			return nil, validation(ie.Message)
		}
		if err != nil {
			return nil, err
		}
		plan.Markdown = md
	}
	if err := s.store.Plans().Create(ctx, plan); err != nil {
		return nil, err
	}
	return plan, nil
}

// askModel asks the organization's model for the document; false when it has none, or when the
// model failed or answered something that is not a complete plan of these cases.
func (s *Service) askModel(ctx context.Context, orgID string, cases []planner.Case, in GenerateInput) (string, analysis.Model, bool) {
	if s.choose == nil || s.models == nil {
		return "", analysis.Model{}, false
	}
	m, err := s.choose.ModelFor(ctx, orgID)
	if err != nil || m.Provider == "" {
		return "", m, false
	}
	instructions, data, err := planner.ModelInput(cases, in.Framework, in.DesignPattern)
	if err != nil {
		return "", m, false
	}
	md, err := s.models.Plan(ctx, m.Provider, m.Model, m.Key, instructions, data)
	if err != nil {
		s.log.Warn("the model could not write the plan; the built-in planner writes it", "org", orgID, "model", m.Name, "err", err)
		return "", m, false
	}
	if err := planner.Validate(md, cases); err != nil {
		s.log.Warn("the model's plan is incomplete; the built-in planner writes it", "org", orgID, "model", m.Name, "err", err)
		return "", m, false
	}
	return md, m, true
}

func unique(ids []string) []string {
	seen := map[string]bool{}
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		id = strings.TrimSpace(id)
		if id != "" && !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// History lists the organization's newest saved plans, of one project when projectID is given
// (every role).
func (s *Service) History(ctx context.Context, p *identity.Principal, projectID string) ([]domain.AutomationPlan, error) {
	if err := s.enabled(ctx, p, projectID); err != nil {
		return nil, err
	}
	return s.store.Plans().List(ctx, p.OrgID, projectID, HistoryPlans)
}

// Open returns a saved plan with its document, as it was written: no model is asked.
func (s *Service) Open(ctx context.Context, p *identity.Principal, planID string) (*domain.AutomationPlan, error) {
	if err := s.enabled(ctx, p, ""); err != nil {
		return nil, err
	}
	plan, err := s.store.Plans().Get(ctx, p.OrgID, planID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errPlanNotFound
	}
	return plan, err
}

// Delete removes a saved plan of the organization (admins and developers).
func (s *Service) Delete(ctx context.Context, p *identity.Principal, planID string) error {
	if !p.CanWrite() {
		return errCannotDelete
	}
	if err := s.enabled(ctx, p, ""); err != nil {
		return err
	}
	if err := s.store.Plans().Delete(ctx, p.OrgID, planID); errors.Is(err, store.ErrNotFound) {
		return errPlanNotFound
	} else if err != nil {
		return err
	}
	return nil
}

// FilterOptions lists the project's suites and tags (every role).
func (s *Service) FilterOptions(ctx context.Context, p *identity.Principal, projectID string) (*store.TestCaseOptions, error) {
	if strings.TrimSpace(projectID) == "" {
		return nil, validation("projectId is required")
	}
	if err := s.enabled(ctx, p, projectID); err != nil {
		return nil, err
	}
	o, err := s.store.TestCases().FilterOptions(ctx, p.OrgID, projectID)
	if err != nil {
		return nil, err
	}
	return &o, nil
}
