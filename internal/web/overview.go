package web

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"verdict/internal/domain"
	"verdict/internal/executions"
)

// The overview's charts are drawn here, as SVG geometry the template writes into attributes
// (no style attribute: the CSP forbids inline style; classes in verdict.css colour them).
const (
	chartWidth  = 300 // the view box's width: one slot of chartWidth/days per day
	chartHeight = 100 // the plot's height; bars and the line share it
	chartTop    = 4   // room above 100 % for the line's dots
	chartBottom = chartTop + chartHeight
)

// chart is one project's daily runs (bars) and pass rate (a line through the days with runs,
// broken across days without any, and a dot on each).
type chart struct {
	Width, Height int // the view box
	Baseline      int
	Bars          []chartBar
	Lines         []string // polyline points, one line per stretch of days with runs
	Dots          []chartDot
	MaxRuns       int // the height of a full bar
}

type chartBar struct{ X, Y, W, H float64 }

type chartDot struct{ X, Y float64 }

// chartOf lays out a project's days (oldest first) in the chart's view box.
func chartOf(days []executions.DayHealth) chart {
	c := chart{Width: chartWidth, Height: chartBottom + chartTop, Baseline: chartBottom}
	for _, d := range days {
		c.MaxRuns = max(c.MaxRuns, d.Runs)
	}
	if len(days) == 0 || c.MaxRuns == 0 {
		return c
	}
	slot := float64(chartWidth) / float64(len(days))
	var line []string
	for i, d := range days {
		if d.Runs == 0 {
			if len(line) > 0 {
				c.Lines = append(c.Lines, strings.Join(line, " "))
				line = nil
			}
			continue
		}
		h := round1(float64(chartHeight) * float64(d.Runs) / float64(c.MaxRuns))
		x := round1(float64(i)*slot + slot*0.15)
		c.Bars = append(c.Bars, chartBar{X: x, Y: round1(chartBottom - h), W: round1(slot * 0.7), H: h})
		dot := chartDot{X: round1(float64(i)*slot + slot/2), Y: round1(chartTop + float64(chartHeight)*(1-d.PassRate()))}
		c.Dots = append(c.Dots, dot)
		line = append(line, num(dot.X)+","+num(dot.Y))
	}
	if len(line) > 0 {
		c.Lines = append(c.Lines, strings.Join(line, " "))
	}
	return c
}

func round1(f float64) float64 { return float64(int(f*10+0.5)) / 10 }

func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// healthView is a project's section of the overview.
type healthView struct {
	ID          string // the chart's element IDs
	Name        string // "No project" for runs without one
	ProjectID   string
	Runs        int
	Passed      int
	PassRate    float64
	Median, P90 string // "" when no run has a duration
	Chart       chart
	Days        []dayView // the days with runs, oldest first
	First, Last string    // the window's first and last day
}

type dayView struct {
	Day          string
	Runs, Passed int
	PassRate     float64
}

type flakyView struct {
	Test, Project                  string
	Passed, Failed, Flaky, Retried int
	LastTaskID                     string
	LastSeen                       time.Time
}

type failureView struct {
	TaskID, Project string
	Status          domain.ExecStatus
	QueuedAt        time.Time
	Test, Message   string
	MessageCut      bool
}

type overviewData struct {
	Days           int
	Since, Until   string
	Runs           int
	Capped         bool
	MaxRuns        int
	Projects       []healthView
	Flaky          []flakyView
	RecentFailures []failureView
}

// maxMessage bounds a failure's message on the overview (the run's page shows it whole).
const maxMessage = 400

func (s *Server) overview(w http.ResponseWriter, r *http.Request) {
	o, err := s.executions.Overview(r.Context(), stateOf(r).p)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "overview", "Overview", overviewDataOf(o))
}

// overviewDataOf is the overview as the template shows it.
func overviewDataOf(o *executions.Overview) overviewData {
	const day = "2006-01-02"
	d := overviewData{Days: o.Days, Since: o.Since.Format(day), Until: o.Since.AddDate(0, 0, o.Days-1).Format(day),
		Runs: o.Runs, Capped: o.Capped, MaxRuns: executions.OverviewMaxRuns}
	for i, p := range o.Projects {
		v := healthView{ID: "project-" + strconv.Itoa(i+1), Name: p.Name, ProjectID: p.ProjectID, Runs: p.Runs,
			Passed: p.Passed, PassRate: p.PassRate, Chart: chartOf(p.Daily), First: d.Since, Last: d.Until}
		if v.ProjectID == "" {
			v.Name = "No project"
		}
		if p.MedianMs > 0 || p.P90Ms > 0 {
			v.Median, v.P90 = formatDuration(p.MedianMs), formatDuration(p.P90Ms)
		}
		for _, dh := range p.Daily {
			if dh.Runs > 0 {
				v.Days = append(v.Days, dayView{Day: dh.Day.Format(day), Runs: dh.Runs, Passed: dh.Passed, PassRate: dh.PassRate()})
			}
		}
		d.Projects = append(d.Projects, v)
	}
	for _, f := range o.Flaky {
		v := flakyView{Test: testName(f.Suite, f.Name), Project: f.Project, Passed: f.Passed, Failed: f.Failed,
			Flaky: f.Flaky, Retried: f.Retried, LastTaskID: f.LastTaskID, LastSeen: f.LastSeen}
		if f.ProjectID == "" {
			v.Project = "No project"
		}
		d.Flaky = append(d.Flaky, v)
	}
	for _, f := range o.RecentFailures {
		v := failureView{TaskID: f.TaskID, Project: f.Project, Status: f.Status, QueuedAt: f.QueuedAt, Message: f.Message}
		if f.Test != "" {
			v.Test = testName(f.Suite, f.Test)
		}
		if f.ProjectID == "" {
			v.Project = "No project"
		}
		if len(v.Message) > maxMessage {
			v.Message, v.MessageCut = strings.ToValidUTF8(v.Message[:maxMessage], ""), true
		}
		d.RecentFailures = append(d.RecentFailures, v)
	}
	return d
}

// testName is a test's name after its suite's, as the run page lists them.
func testName(suite, name string) string {
	if suite == "" {
		return name
	}
	return suite + " › " + name
}
