package api

import (
	"net/http"

	"verdict/internal/domain"
	"verdict/internal/history"
)

// Release gates: a project's quality-gate rules (GET and PUT /api/projects/{id}/gate) and two
// runs compared (GET /api/executions/{taskId}/compare). A run's gate itself is in its views
// (ExecutionListItem.Gate).

var errNoGates = domain.Unavailable("Release gates unavailable", "Release gates are not available on this server")

func (s *Server) getGate(w http.ResponseWriter, r *http.Request) {
	if s.gates == nil {
		writeDomainError(w, errNoGates)
		return
	}
	rules, err := s.gates.GateRules(r.Context(), principalFrom(r), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err, "Failed to read gate rules")
		return
	}
	ok(w, obj{"data": obj{"gate": rules}})
}

func (s *Server) putGate(w http.ResponseWriter, r *http.Request) {
	if s.gates == nil {
		writeDomainError(w, errNoGates)
		return
	}
	var in domain.GateRules
	if err := decode(w, r, &in); err != nil {
		writeDomainError(w, err)
		return
	}
	rules, err := s.gates.SetGateRules(r.Context(), principalFrom(r), r.PathValue("id"), in)
	if err != nil {
		s.fail(w, r, err, "Failed to save gate rules")
		return
	}
	ok(w, obj{"data": obj{"gate": rules}})
}

// Gate is a run's quality gate as the execution views show it.
type Gate struct {
	Status string            `json:"status"` // passed or failed
	Rules  []domain.GateRule `json:"rules"`
	// BaselineTaskID is the run the gate compared this one with; null when it had none.
	BaselineTaskID *string `json:"baselineTaskId"`
}

// gateView is g's view; nil (the project has no rules) is null.
func gateView(g *domain.Gate) *Gate {
	if g == nil {
		return nil
	}
	rules := g.Rules
	if rules == nil {
		rules = []domain.GateRule{}
	}
	return &Gate{Status: g.Status, Rules: rules, BaselineTaskID: nullable(g.BaselineTaskID)}
}

// CompareTest is a test of a comparison: its result in the run (status and durationMs, null
// when it is not in it) and in the base run (baseStatus, baseDurationMs).
type CompareTest struct {
	TestID         *string            `json:"testId"`
	Suite          string             `json:"suite"`
	Name           string             `json:"name"`
	Status         *domain.TestStatus `json:"status"`
	BaseStatus     *domain.TestStatus `json:"baseStatus"`
	DurationMs     *int64             `json:"durationMs"`
	BaseDurationMs *int64             `json:"baseDurationMs"`
}

// Comparison is the answer of GET /api/executions/{taskId}/compare.
type Comparison struct {
	TaskID       string        `json:"taskId"`
	BaseTaskID   *string       `json:"baseTaskId"` // null: no run to compare with (every list empty)
	NewFailures  []CompareTest `json:"newFailures"`
	Fixed        []CompareTest `json:"fixed"`
	StillFailing []CompareTest `json:"stillFailing"`
	NewlyFlaky   []CompareTest `json:"newlyFlaky"`
	Added        []CompareTest `json:"added"`
	Missing      []CompareTest `json:"missing"`
	Slower       []CompareTest `json:"slower"`
}

// ComparisonView is c's view.
func ComparisonView(c *history.Comparison) Comparison {
	list := func(ds []history.TestDiff) []CompareTest {
		out := make([]CompareTest, len(ds))
		for i, d := range ds {
			t := CompareTest{TestID: nullable(d.TestID), Suite: d.Suite, Name: d.Name}
			if d.Status != "" {
				st, ms := d.Status, d.DurationMs
				t.Status, t.DurationMs = &st, &ms
			}
			if d.BaseStatus != "" {
				st, ms := d.BaseStatus, d.BaseDurationMs
				t.BaseStatus, t.BaseDurationMs = &st, &ms
			}
			out[i] = t
		}
		return out
	}
	v := Comparison{TaskID: c.Run.TaskID, NewFailures: list(c.NewFailures), Fixed: list(c.Fixed),
		StillFailing: list(c.StillFailing), NewlyFlaky: list(c.NewlyFlaky), Added: list(c.Added),
		Missing: list(c.Missing), Slower: list(c.Slower)}
	if c.Base != nil {
		v.BaseTaskID = &c.Base.TaskID
	}
	return v
}

func (s *Server) compareExecutions(w http.ResponseWriter, r *http.Request) {
	if s.gates == nil {
		writeDomainError(w, errNoGates)
		return
	}
	c, err := s.gates.Compare(r.Context(), principalFrom(r), r.PathValue("taskId"), r.URL.Query().Get("with"))
	if err != nil {
		s.fail(w, r, err, "Failed to compare executions")
		return
	}
	ok(w, obj{"data": ComparisonView(c)})
}
