package web

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"verdict/internal/domain"
	"verdict/internal/executions"
	"verdict/internal/identity"
	"verdict/internal/store"
)

type overviewExecs struct {
	execs
	o   *executions.Overview
	err error
}

func (e overviewExecs) Overview(context.Context, *identity.Principal) (*executions.Overview, error) {
	return e.o, e.err
}

func TestChartOf(t *testing.T) {
	days := make([]executions.DayHealth, 30)
	days[0] = executions.DayHealth{Runs: 4, Passed: 4}
	days[1] = executions.DayHealth{Runs: 2, Passed: 1}
	days[3] = executions.DayHealth{Runs: 1, Passed: 0}
	c := chartOf(days)
	if c.MaxRuns != 4 || len(c.Bars) != 3 || len(c.Dots) != 3 {
		t.Fatalf("chart: %+v", c)
	}
	// A slot is 10 wide: the bar takes its middle 7, full height for the busiest day.
	if b := c.Bars[0]; b.X != 1.5 || b.W != 7 || b.H != chartHeight || b.Y != chartTop {
		t.Fatalf("first bar: %+v", b)
	}
	if b := c.Bars[1]; b.H != chartHeight/2 || b.Y != chartBottom-chartHeight/2 {
		t.Fatalf("second bar: %+v", b)
	}
	// The line is broken over day 2, which had no runs; 100 % at the top, 0 % at the bottom.
	if len(c.Lines) != 2 || c.Lines[0] != "5,4 15,54" || c.Lines[1] != "35,104" {
		t.Fatalf("lines: %q", c.Lines)
	}
	if empty := chartOf(make([]executions.DayHealth, 30)); len(empty.Bars) != 0 || len(empty.Lines) != 0 {
		t.Fatalf("empty chart: %+v", empty)
	}
}

var inlineStyle = regexp.MustCompile(`(?i)<style|\sstyle=|\son[a-z]+=|<script>|javascript:`)

func TestOverviewPage(t *testing.T) {
	since := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	runs := []store.RunOutcome{
		{ID: "e-2", TaskID: "r-2", ProjectID: "p1", Status: domain.ExecFailed, QueuedAt: since.Add(50 * time.Hour)},
		{ID: "e-1", TaskID: "r-1", ProjectID: "p1", Status: domain.ExecPassed, QueuedAt: since.Add(time.Hour)},
		{ID: "e-0", TaskID: "r-0", Status: domain.ExecPassed, QueuedAt: since.Add(time.Hour)},
	}
	// cart › pays passed in r-1 and failed in r-2: a flake event.
	pays := domain.TrackedTest{ID: "t-1", ProjectID: "p1", Suite: "cart", Name: "pays"}
	pays.Merge(domain.TestPoint{TaskID: "r-1", Status: domain.TestPassed, At: since.Add(time.Hour)})
	pays.Merge(domain.TestPoint{TaskID: "r-2", Status: domain.TestFailed, At: since.Add(50 * time.Hour)})
	o := executions.BuildOverview(runs, []domain.TrackedTest{pays}, []domain.Project{{ID: "p1", Name: "Shop <b>"}}, since, 30)
	o.AddResults([]domain.TestOutcome{{ExecutionID: "e-2", TestID: "t-1", Suite: "cart", Name: "pays", Status: domain.TestFailed,
		Message: "expected 200, got <500>"}}, nil)
	if len(o.Flaky) != 1 || len(o.RecentFailures) != 1 {
		t.Fatalf("overview: %+v", o)
	}
	s := New(Deps{Identity: ids{}, Executions: overviewExecs{o: o}, JWT: tokens{}, CSRFKey: []byte("k"),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	res, body := get(t, s, "/overview")
	if res.StatusCode != 200 || res.Header.Get("Content-Security-Policy") != ContentSecurityPolicy {
		t.Fatalf("status %d: %s", res.StatusCode, body)
	}
	for _, want := range []string{
		`<a href="/overview" aria-current="page">Overview</a>`, "Shop &lt;b&gt;", "No project", "50%", "(1 of 2)",
		`role="img"`, `<title id="project-1-title">`, `class="chart-bar"`, `class="chart-line"`,
		`<a href="/runs/r-2">r-2</a>`, "cart › pays", "expected 200, got &lt;500&gt;", "UNSTABLE",
		"<th scope=\"row\">2026-03-03</th><td>1</td><td>0</td><td>0%</td>",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("overview lacks %q", want)
		}
	}
	if m := inlineStyle.FindString(body); m != "" {
		t.Errorf("overview holds inline %q", m)
	}
	if strings.Index(body, "Overview</a>") > strings.Index(body, ">Runs</a>") {
		t.Error("Overview is not first in the navigation")
	}

	empty := New(Deps{Identity: ids{}, Executions: overviewExecs{o: executions.BuildOverview(nil, nil, nil, since, 30)},
		JWT: tokens{}, CSRFKey: []byte("k")})
	if res, body := get(t, empty, "/overview"); res.StatusCode != 200 || !strings.Contains(body, "No finished runs in the last 30 days") ||
		strings.Contains(body, "<svg") {
		t.Fatalf("empty overview: %d %s", res.StatusCode, body)
	}

	broken := New(Deps{Identity: ids{}, Executions: overviewExecs{err: errors.New("database gone")}, JWT: tokens{},
		CSRFKey: []byte("k"), Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if res, body := get(t, broken, "/overview"); res.StatusCode != 500 || !strings.Contains(body, "Something went wrong") ||
		strings.Contains(body, "database gone") {
		t.Fatalf("failing overview: %d %s", res.StatusCode, body)
	}
}
