package api

import (
	"net/http"
	"time"

	"verdict/internal/domain"
	"verdict/internal/history"
)

// Test is a tracked test as the API shows it: its identity, its newest result's status and
// the figures of its window of newest results.
type Test struct {
	ID          string            `json:"id"`
	ProjectID   *string           `json:"projectId"`
	Image       *string           `json:"image"` // for a test of runs without a project
	Suite       string            `json:"suite"`
	Name        string            `json:"name"`
	LastStatus  domain.TestStatus `json:"lastStatus"`
	PassRate    float64           `json:"passRate"`
	FlakeRate   float64           `json:"flakeRate"`
	Flaky       bool              `json:"flaky"`
	Runs        int               `json:"runs"`
	FirstSeenAt string            `json:"firstSeenAt"`
	LastSeenAt  string            `json:"lastSeenAt"`
	Quarantine  *Quarantine       `json:"quarantine"`
}

// Quarantine is a test's quarantine in force.
type Quarantine struct {
	Reason    string `json:"reason"`
	Until     string `json:"until"`
	By        string `json:"by"`
	CreatedAt string `json:"createdAt"`
}

// TestResultView is one result of a test's history.
type TestResultView struct {
	TaskID     string            `json:"taskId"`
	Status     domain.TestStatus `json:"status"`
	DurationMs int64             `json:"durationMs"`
	Retries    int               `json:"retries"`
	Signature  *string           `json:"signature"`
	Message    *string           `json:"message"`
	Branch     *string           `json:"branch"`
	Commit     *string           `json:"commit"`
	CreatedAt  string            `json:"createdAt"`
}

// TestStats are a test's figures.
type TestStats struct {
	PassRate         float64 `json:"passRate"`
	FlakeRate        float64 `json:"flakeRate"`
	FlakeEvents      int     `json:"flakeEvents"`
	Flaky            bool    `json:"flaky"`
	MedianMs         int64   `json:"medianMs"`
	P90Ms            int64   `json:"p90Ms"`
	FirstSeenAt      string  `json:"firstSeenAt"`
	LastFailedTaskID *string `json:"lastFailedTaskId"`
	LastPassedTaskID *string `json:"lastPassedTaskId"`
}

// TestView is t as the API shows it.
func TestView(t *domain.TrackedTest) Test {
	r := domain.Rates(t.Recent)
	v := Test{ID: t.ID, ProjectID: nullable(t.ProjectID), Suite: t.Suite, Name: t.Name, LastStatus: t.LastStatus(),
		PassRate: r.PassRate, FlakeRate: r.FlakeRate, Flaky: r.Flaky, Runs: t.Runs,
		FirstSeenAt: ts(t.FirstSeenAt), LastSeenAt: ts(t.LastSeenAt)}
	if t.ProjectID == "" {
		if image, ok := domain.ScopeImage(t.Scope); ok {
			v.Image = &image
		}
	}
	if q := t.Quarantine; q != nil {
		v.Quarantine = &Quarantine{Reason: q.Reason, Until: ts(q.Until), By: q.By, CreatedAt: ts(q.CreatedAt)}
	}
	return v
}

// listTests: GET /api/tests?projectId=&image=&q=&status=&flaky=&quarantined=&limit=&offset=.
func (s *Server) listTests(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := history.Filter{ProjectID: q.Get("projectId"), Image: q.Get("image"), Query: q.Get("q"), Status: q.Get("status")}
	qp := &query{v: q}
	f.Limit = qp.int("limit", history.DefaultListLimit, 1, history.MaxListLimit)
	f.Offset = qp.int("offset", 0, 0, 1<<30)
	f.Flaky, f.Quarantined = qp.flag("flaky"), qp.flag("quarantined")
	if qp.bad != nil {
		writeDomainError(w, qp.bad)
		return
	}
	tests, total, err := s.histories.List(r.Context(), principalFrom(r), f)
	if err != nil {
		s.fail(w, r, err, "Failed to list tests")
		return
	}
	out := make([]Test, len(tests))
	for i := range tests {
		out[i] = TestView(&tests[i])
	}
	ok(w, obj{"data": obj{"tests": out, "total": total}})
}

// getTest: GET /api/tests/{testId}.
func (s *Server) getTest(w http.ResponseWriter, r *http.Request) {
	d, err := s.histories.Get(r.Context(), principalFrom(r), r.PathValue("testId"))
	if err != nil {
		s.fail(w, r, err, "Failed to fetch test")
		return
	}
	hist := make([]TestResultView, len(d.History))
	for i, o := range d.History {
		hist[i] = TestResultView{TaskID: o.TaskID, Status: o.Status, DurationMs: o.DurationMs, Retries: o.Retries,
			Signature: nullable(o.Signature), Message: nullable(o.Message), Branch: nullable(o.Branch),
			Commit: nullable(o.Commit), CreatedAt: ts(o.CreatedAt)}
	}
	st := d.Stats
	ok(w, obj{"data": obj{"test": TestView(d.Test), "history": hist, "stats": TestStats{
		PassRate: st.PassRate, FlakeRate: st.FlakeRate, FlakeEvents: st.FlakeEvents, Flaky: st.Flaky,
		MedianMs: st.MedianMs, P90Ms: st.P90Ms, FirstSeenAt: ts(st.FirstSeenAt),
		LastFailedTaskID: nullable(st.LastFailedTaskID), LastPassedTaskID: nullable(st.LastPassedTaskID)}}})
}

// quarantineTest: PUT /api/tests/{testId}/quarantine {reason, until}.
func (s *Server) quarantineTest(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Reason string `json:"reason"`
		Until  string `json:"until"`
	}
	if err := decode(w, r, &body); err != nil {
		writeDomainError(w, err)
		return
	}
	var until time.Time
	if body.Until != "" {
		var err error
		if until, err = time.Parse(time.RFC3339, body.Until); err != nil {
			writeDomainError(w, domain.BadRequest("Validation error", "until must be an RFC 3339 time, e.g. 2026-12-31T00:00:00Z"))
			return
		}
	}
	t, err := s.histories.Quarantine(r.Context(), principalFrom(r), r.PathValue("testId"), body.Reason, until)
	if err != nil {
		s.fail(w, r, err, "Failed to quarantine test")
		return
	}
	ok(w, obj{"data": obj{"test": TestView(t)}})
}

// unquarantineTest: DELETE /api/tests/{testId}/quarantine.
func (s *Server) unquarantineTest(w http.ResponseWriter, r *http.Request) {
	t, err := s.histories.Unquarantine(r.Context(), principalFrom(r), r.PathValue("testId"))
	if err != nil {
		s.fail(w, r, err, "Failed to lift the quarantine")
		return
	}
	ok(w, obj{"data": obj{"test": TestView(t)}})
}

// getAutoQuarantine: GET /api/projects/{id}/auto-quarantine.
func (s *Server) getAutoQuarantine(w http.ResponseWriter, r *http.Request) {
	rate, err := s.histories.AutoQuarantine(r.Context(), principalFrom(r), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err, "Failed to fetch the automatic quarantine rule")
		return
	}
	ok(w, obj{"data": obj{"flakeRate": rate, "days": history.AutoQuarantineDays}})
}

// putAutoQuarantine: PUT /api/projects/{id}/auto-quarantine {flakeRate}.
func (s *Server) putAutoQuarantine(w http.ResponseWriter, r *http.Request) {
	var body struct {
		FlakeRate *float64 `json:"flakeRate"`
	}
	if err := decode(w, r, &body); err != nil {
		writeDomainError(w, err)
		return
	}
	if err := s.histories.SetAutoQuarantine(r.Context(), principalFrom(r), r.PathValue("id"), body.FlakeRate); err != nil {
		s.fail(w, r, err, "Failed to change the automatic quarantine rule")
		return
	}
	ok(w, obj{"data": obj{"flakeRate": body.FlakeRate, "days": history.AutoQuarantineDays}})
}
