package web

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"verdict/internal/domain"
	"verdict/internal/history"
)

// Tests' histories (/tests): a project's tests with their figures, searchable and filtered
// (flaky, quarantined), a page per test with its status strip, duration chart, newest results
// and its quarantine form. Every write goes through history.Service, which decides the role.

const testsPath = "/tests"

var errTestsOff = domain.Unavailable("Tests not available", "Tests' histories are not available on this server")

type testRow struct {
	ID, Suite, Name, LastStatus string
	PassRate, FlakeRate         string
	Flaky                       bool
	Runs                        int
	Quarantine                  *domain.Quarantine
}

type testsData struct {
	Projects                []domain.Project
	Project, Query          string
	Flaky, Quarantined      bool
	Tests                   []testRow
	Total, First, Last      int
	PrevURL, NextURL        string
	ListError               *formError
	Unavailable, NoProjects bool
}

const testsPageSize = 50

func percent(f float64) string { return strconv.Itoa(int(f*100+0.5)) + "%" }

func (s *Server) testsPage(w http.ResponseWriter, r *http.Request) {
	st, q := stateOf(r), r.URL.Query()
	d := testsData{Project: q.Get("project"), Query: q.Get("q"), Flaky: q.Get("flaky") == "true", Quarantined: q.Get("quarantined") == "true"}
	if s.histories == nil {
		d.Unavailable = true
		s.render(w, r, http.StatusOK, "tests", "Tests", d)
		return
	}
	projects, err := s.executions.ListProjects(r.Context(), st.p)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	d.Projects = projects
	if len(projects) == 0 {
		d.NoProjects = true
		s.render(w, r, http.StatusOK, "tests", "Tests", d)
		return
	}
	if d.Project == "" {
		d.Project = projects[0].ID
	}
	offset := 0
	if n, err := strconv.Atoi(q.Get("offset")); err == nil && n > 0 {
		offset = n
	}
	list, total, err := s.histories.List(r.Context(), st.p, history.Filter{ProjectID: d.Project, Query: d.Query,
		Flaky: d.Flaky, Quarantined: d.Quarantined, Limit: testsPageSize, Offset: offset})
	if err != nil {
		d.ListError = s.formErrorOf(r, err)
		s.render(w, r, http.StatusOK, "tests", "Tests", d)
		return
	}
	now := s.clock()
	for i := range list {
		t := &list[i]
		rates := domain.Rates(t.Recent)
		row := testRow{ID: t.ID, Suite: t.Suite, Name: t.Name, LastStatus: string(t.LastStatus()), PassRate: percent(rates.PassRate),
			FlakeRate: percent(rates.FlakeRate), Flaky: rates.Flaky, Runs: t.Runs}
		if t.Quarantine.Active(now) {
			row.Quarantine = t.Quarantine
		}
		d.Tests = append(d.Tests, row)
	}
	d.Total = total
	if len(list) > 0 {
		d.First, d.Last = offset+1, offset+len(list)
	}
	pageURL := func(off int) string {
		v := url.Values{"project": {d.Project}}
		if d.Query != "" {
			v.Set("q", d.Query)
		}
		if d.Flaky {
			v.Set("flaky", "true")
		}
		if d.Quarantined {
			v.Set("quarantined", "true")
		}
		if off > 0 {
			v.Set("offset", strconv.Itoa(off))
		}
		return testsPath + "?" + v.Encode()
	}
	if offset > 0 {
		d.PrevURL = pageURL(max(offset-testsPageSize, 0))
	}
	if offset+len(list) < total {
		d.NextURL = pageURL(offset + testsPageSize)
	}
	s.render(w, r, http.StatusOK, "tests", "Tests", d)
}

// stripCell is one result in a test's status strip, oldest first.
type stripCell struct {
	TaskID, Status, Title string
}

// bar is one result in the duration chart (an SVG: no inline style, which the page's policy
// forbids), oldest first.
type bar struct {
	X, Y, Height int
	Status       string
	Title        string
}

type testData struct {
	Test       *domain.TrackedTest
	Quarantine *domain.Quarantine // in force; nil: none
	Stats      history.Stats
	PassRate   string
	FlakeRate  string
	History    []domain.TestOutcome
	Strip      []stripCell
	Bars       []bar
	ChartWidth int
	MaxMs      int64
	// DefaultUntil is the quarantine form's proposed end (14 days), MaxUntil the latest allowed.
	DefaultUntil, MaxUntil, MinUntil string
}

const durationChartHeight = 80

func (s *Server) testPage(w http.ResponseWriter, r *http.Request) {
	if s.histories == nil {
		s.fail(w, r, errTestsOff)
		return
	}
	st := stateOf(r)
	dt, err := s.histories.Get(r.Context(), st.p, r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	now := s.clock()
	d := testData{Test: dt.Test, Stats: dt.Stats, PassRate: percent(dt.Stats.PassRate), FlakeRate: percent(dt.Stats.FlakeRate),
		History: dt.History, DefaultUntil: now.AddDate(0, 0, 14).Format("2006-01-02"),
		MinUntil: now.AddDate(0, 0, 1).Format("2006-01-02"), MaxUntil: now.AddDate(0, 0, domain.MaxQuarantineDays).Format("2006-01-02")}
	if dt.Test.Quarantine.Active(now) {
		d.Quarantine = dt.Test.Quarantine
	}
	for _, o := range dt.History {
		d.MaxMs = max(d.MaxMs, o.DurationMs)
	}
	n := len(dt.History)
	d.ChartWidth = max(n*8, 8)
	for i := n - 1; i >= 0; i-- { // oldest first
		o := dt.History[i]
		title := fmt.Sprintf("%s: %s, %s", o.TaskID, o.Status, formatDuration(o.DurationMs))
		d.Strip = append(d.Strip, stripCell{TaskID: o.TaskID, Status: string(o.Status), Title: title})
		h := 1
		if d.MaxMs > 0 {
			h = max(int(o.DurationMs*durationChartHeight/d.MaxMs), 1)
		}
		d.Bars = append(d.Bars, bar{X: (n - 1 - i) * 8, Y: durationChartHeight - h, Height: h, Status: string(o.Status), Title: title})
	}
	s.render(w, r, http.StatusOK, "test", dt.Test.Name, d)
}

func testPath(id string) string { return testsPath + "/" + url.PathEscape(id) }

// quarantineTest quarantines a test until the end of the day the form names (UTC).
func (s *Server) quarantineTest(w http.ResponseWriter, r *http.Request) {
	if s.histories == nil {
		s.fail(w, r, errTestsOff)
		return
	}
	id := r.PathValue("id")
	until, err := time.Parse("2006-01-02", r.PostFormValue("until"))
	if err != nil {
		s.refused(w, r, testPath(id), domain.BadRequest("Validation error", "until must be a date"))
		return
	}
	until = until.Add(24*time.Hour - time.Second)
	if max := s.clock().AddDate(0, 0, domain.MaxQuarantineDays); until.After(max) {
		until = max // the last day allowed, up to the moment allowed
	}
	if _, err := s.histories.Quarantine(r.Context(), stateOf(r).p, id, r.PostFormValue("reason"), until); err != nil {
		s.refused(w, r, testPath(id), err)
		return
	}
	s.done(w, r, testPath(id), "Test quarantined: its failures do not fail runs until "+until.Format("2 Jan 2006")+".")
}

func (s *Server) unquarantineTest(w http.ResponseWriter, r *http.Request) {
	if s.histories == nil {
		s.fail(w, r, errTestsOff)
		return
	}
	id := r.PathValue("id")
	if _, err := s.histories.Unquarantine(r.Context(), stateOf(r).p, id); err != nil {
		s.refused(w, r, testPath(id), err)
		return
	}
	s.done(w, r, testPath(id), "Quarantine lifted: the test's failures count again.")
}
