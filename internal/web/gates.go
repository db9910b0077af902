package web

import (
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"verdict/internal/domain"
	"verdict/internal/history"
)

// Release gates on the dashboard: a run's gate on its page (runGate), two runs compared
// (/runs/{taskId}/compare), a project's gate rules on its page, which admins and developers
// edit (POST /projects/{id}/gate).

// gateRow is a rule of a run's gate as its page shows it.
type gateRow struct {
	Rule, Actual, Threshold, Message string
	Passed                           bool
}

// runGate is a run's gate as its page shows it (nil: the run has none).
type runGate struct {
	Status   string
	Baseline string // the baseline run's taskId; "" when none
	Rules    []gateRow
}

func viewGate(g *domain.Gate) *runGate {
	if g == nil {
		return nil
	}
	v := &runGate{Status: g.Status, Baseline: g.BaselineTaskID}
	for _, r := range g.Rules {
		v.Rules = append(v.Rules, gateRow{Rule: r.Rule, Passed: r.Passed, Actual: gateNumber(r.Rule, r.Actual),
			Threshold: gateNumber(r.Rule, r.Threshold), Message: r.Message})
	}
	return v
}

// gateNumber shows a rule's figure: a pass rate as a percentage, seconds with their unit.
func gateNumber(rule string, f float64) string {
	switch rule {
	case domain.RuleMinPassRate:
		return strconv.FormatFloat(f*100, 'f', -1, 64) + "%"
	case domain.RuleMaxDurationSeconds:
		return strconv.FormatFloat(f, 'f', -1, 64) + " s"
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// gateForm is a project's gate rules as its form shows them: each rule's field, "" when off.
type gateForm struct {
	MinTests, MaxFailed, MinPassRate, MaxDurationSeconds string
	NoNewFailures, NoNewFlaky                            bool
	BaselineLabels                                       string // key:value, one a line
	Judges                                               bool   // a rule is on
}

func viewGateRules(r *domain.GateRules) *gateForm {
	f := &gateForm{Judges: r.Judges()}
	itoa := func(p *int) string {
		if p == nil {
			return ""
		}
		return strconv.Itoa(*p)
	}
	f.MinTests, f.MaxFailed, f.MaxDurationSeconds = itoa(r.MinTests), itoa(r.MaxFailed), itoa(r.MaxDurationSeconds)
	if r.MinPassRate != nil {
		f.MinPassRate = strconv.FormatFloat(*r.MinPassRate, 'f', -1, 64)
	}
	f.NoNewFailures = r.NoNewFailures != nil && *r.NoNewFailures
	f.NoNewFlaky = r.NoNewFlaky != nil && *r.NoNewFlaky
	var lines []string
	for _, k := range slices.Sorted(maps.Keys(r.BaselineLabels)) {
		lines = append(lines, k+":"+r.BaselineLabels[k])
	}
	f.BaselineLabels = strings.Join(lines, "\n")
	return f
}

// gateInput reads the gate form: an empty field is a rule off; a checkbox on is its rule on.
func gateInput(r *http.Request) (domain.GateRules, error) {
	var in domain.GateRules
	count := func(name string, into **int) error {
		v := strings.TrimSpace(r.PostFormValue(name))
		if v == "" {
			return nil
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return domain.BadRequest("Validation error", name+" must be a whole number")
		}
		*into = &n
		return nil
	}
	for _, c := range []struct {
		name string
		into **int
	}{{"minTests", &in.MinTests}, {"maxFailed", &in.MaxFailed}, {"maxDurationSeconds", &in.MaxDurationSeconds}} {
		if err := count(c.name, c.into); err != nil {
			return in, err
		}
	}
	if v := strings.TrimSpace(r.PostFormValue("minPassRate")); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return in, domain.BadRequest("Validation error", "minPassRate must be a number from 0 to 1")
		}
		in.MinPassRate = &f
	}
	on := func(name string) *bool {
		if r.PostFormValue(name) == "" {
			return nil
		}
		t := true
		return &t
	}
	in.NoNewFailures, in.NoNewFlaky = on("noNewFailures"), on("noNewFlaky")
	for _, line := range strings.Split(r.PostFormValue("baselineLabels"), "\n") {
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			return in, domain.BadRequest("Validation error", "baselineLabels: write one key:value a line")
		}
		if in.BaselineLabels == nil {
			in.BaselineLabels = map[string]string{}
		}
		in.BaselineLabels[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return in, nil
}

func (s *Server) updateGate(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if s.gates == nil {
		s.errorPage(w, r, http.StatusNotFound, "Page not found", "There is no page at this address.")
		return
	}
	in, err := gateInput(r)
	if err == nil {
		if _, err = s.gates.SetGateRules(r.Context(), stateOf(r).p, id, in); err == nil {
			s.done(w, r, projectPath(id), "Gate rules saved.")
			return
		}
	}
	s.refused(w, r, projectPath(id), err)
}

// compareData is the compare page: the run, the run it is compared with, and the lists.
type compareData struct {
	TaskID, With string // With: as asked ("" for the baseline)
	C            *history.Comparison
	Sections     []compareSection
}

type compareSection struct {
	ID, Title, Empty string
	Tests            []history.TestDiff
}

func (s *Server) compareRuns(w http.ResponseWriter, r *http.Request) {
	taskID, with := r.PathValue("taskId"), strings.TrimSpace(r.URL.Query().Get("with"))
	if s.gates == nil {
		s.errorPage(w, r, http.StatusNotFound, "Page not found", "There is no page at this address.")
		return
	}
	c, err := s.gates.Compare(r.Context(), stateOf(r).p, taskID, with)
	if err != nil {
		s.failRun(w, r, err)
		return
	}
	d := compareData{TaskID: taskID, With: with, C: c, Sections: []compareSection{
		{"new-failures", "New failures", "No new failures.", c.NewFailures},
		{"fixed", "Fixed", "Nothing fixed.", c.Fixed},
		{"still-failing", "Still failing", "Nothing still failing.", c.StillFailing},
		{"newly-flaky", "Newly flaky", "No newly flaky tests.", c.NewlyFlaky},
		{"slower", "Slower", "Nothing slower.", c.Slower},
		{"added", "Added", "No tests added.", c.Added},
		{"missing", "Missing", "No tests missing.", c.Missing},
	}}
	s.render(w, r, http.StatusOK, "compare", "Compare run "+taskID, d)
}
