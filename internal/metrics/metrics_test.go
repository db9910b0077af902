package metrics

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"verdict/internal/domain"
)

func TestRequestsByRouteAndCode(t *testing.T) {
	m := New("test", Sources{}, nil)
	for range 3 {
		m.ObserveRequest("GET /api/executions/{taskId}", 200, 10*time.Millisecond)
	}
	m.ObserveRequest("GET /api/executions/{taskId}", 404, time.Millisecond)
	m.ObserveRequest(Unmatched, 404, time.Millisecond)
	m.ObserveRequest("GET /x", 799, time.Millisecond) // a code net/http does not name
	for _, c := range []struct {
		route, code string
		want        float64
	}{{"GET /api/executions/{taskId}", "200", 3}, {"GET /api/executions/{taskId}", "404", 1}, {Unmatched, "404", 1}, {"GET /x", "799", 1}} {
		if got := testutil.ToFloat64(m.requests.WithLabelValues(c.route, c.code)); got != c.want {
			t.Errorf("requests{%s,%s} = %v, want %v", c.route, c.code, got, c.want)
		}
	}
	if n := testutil.CollectAndCount(m.reqSeconds); n != 3 {
		t.Errorf("%d request histograms, want one per route", n)
	}
}

func TestRunsAndWebhooks(t *testing.T) {
	var nilMetrics *Metrics // records nothing, and does not panic
	nilMetrics.RunFinished(&domain.Execution{Status: domain.ExecPassed})
	nilMetrics.ObserveRequest("GET /", 200, 0)

	m := New("test", Sources{}, nil)
	queued := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	started, finished := queued.Add(3*time.Second), queued.Add(63*time.Second)
	m.RunStarted(&domain.Execution{Status: domain.ExecRunning, QueuedAt: queued, StartedAt: &started})
	m.RunFinished(&domain.Execution{Status: domain.ExecFailed, QueuedAt: queued, StartedAt: &started, FinishedAt: &finished})
	m.RunFinished(&domain.Execution{Status: domain.ExecCancelled, QueuedAt: queued, FinishedAt: &finished}) // never started
	m.RunFinished(&domain.Execution{Status: domain.ExecRunning})                                            // not final: ignored
	m.WebhookOutcome(WebhookApplied)
	if got := testutil.ToFloat64(m.runsFinished.WithLabelValues("FAILED")); got != 1 {
		t.Errorf("FAILED %v", got)
	}
	if got := testutil.ToFloat64(m.runsFinished.WithLabelValues("CANCELLED")); got != 1 {
		t.Errorf("CANCELLED %v", got)
	}
	exp := `
# HELP verdict_run_duration_seconds Time from a run's start to its final status, for runs that started.
# TYPE verdict_run_duration_seconds histogram
verdict_run_duration_seconds_bucket{le="1"} 0
verdict_run_duration_seconds_bucket{le="5"} 0
verdict_run_duration_seconds_bucket{le="10"} 0
verdict_run_duration_seconds_bucket{le="30"} 0
verdict_run_duration_seconds_bucket{le="60"} 1
verdict_run_duration_seconds_bucket{le="120"} 1
verdict_run_duration_seconds_bucket{le="300"} 1
verdict_run_duration_seconds_bucket{le="600"} 1
verdict_run_duration_seconds_bucket{le="1200"} 1
verdict_run_duration_seconds_bucket{le="1800"} 1
verdict_run_duration_seconds_bucket{le="3600"} 1
verdict_run_duration_seconds_bucket{le="7200"} 1
verdict_run_duration_seconds_bucket{le="14400"} 1
verdict_run_duration_seconds_bucket{le="43200"} 1
verdict_run_duration_seconds_bucket{le="86400"} 1
verdict_run_duration_seconds_bucket{le="+Inf"} 1
verdict_run_duration_seconds_sum 60
verdict_run_duration_seconds_count 1
`
	if err := testutil.CollectAndCompare(m.runSeconds, strings.NewReader(exp)); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(m.queueSeconds); n != 1 {
		t.Errorf("queue histogram: %d", n)
	}
	if got := testutil.ToFloat64(m.webhooks.WithLabelValues(WebhookApplied)); got != 1 {
		t.Errorf("applied %v", got)
	}
}

func TestHandlerTokenAndSources(t *testing.T) {
	m := New("v1.2.3", Sources{
		Runs:        func(context.Context) (int, int, error) { return 4, 2, nil },
		MailBacklog: func(context.Context) (int, error) { return 0, errors.New("database down") },
		Connections: func() int { return 7 },
	}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	h := m.Handler("s3cret")
	for _, authz := range []string{"", "Bearer wrong", "s3cret", "bearer s3cret", "Bearer s3cret "} {
		req := httptest.NewRequest("GET", "/metrics", nil)
		if authz != "" {
			req.Header.Set("Authorization", authz)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusUnauthorized || strings.Contains(w.Body.String(), "verdict_") {
			t.Errorf("Authorization %q: %d", authz, w.Code)
		}
	}
	req := httptest.NewRequest("GET", "/metrics", nil)
	req.Header.Set("Authorization", "Bearer s3cret")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	body := w.Body.String()
	for _, want := range []string{"verdict_runs_pending 4\n", "verdict_runs_running 2\n", "verdict_realtime_connections 7\n",
		`verdict_build_info{version="v1.2.3"} 1`, `verdict_runs_finished_total{status="UNSTABLE"} 0`,
		`verdict_webhooks_total{outcome="rejected"} 0`, "go_goroutines ", "process_"} {
		if !strings.Contains(body, want) {
			t.Errorf("the exposition lacks %q", want)
		}
	}
	if w.Code != 200 || strings.Contains(body, "verdict_mail_outbox_pending") {
		t.Errorf("a failing source is left out, the rest served: %d\n%s", w.Code, body)
	}
	w = httptest.NewRecorder()
	m.Handler("").ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	if w.Code != 200 {
		t.Errorf("open handler: %d", w.Code)
	}
}
