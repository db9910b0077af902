//go:build integration

package app_test

import (
	"bufio"
	"strconv"
	"strings"
	"testing"
	"time"

	"verdict/internal/testenv"
)

// scrape is one reading of GET /metrics: each sample's value by its series as the exposition
// writes it, e.g. `verdict_runs_finished_total{status="PASSED"}` (labels in name order).
type scrape map[string]float64

func parseExposition(t *testing.T, text string) scrape {
	t.Helper()
	s := scrape{}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			t.Fatalf("bad exposition line %q", line)
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("bad value in %q: %v", line, err)
		}
		s[line[:i]] = v
	}
	return s
}

func (h *harness) scrape(token string) (scrape, string) {
	h.t.Helper()
	a := anon
	if token != "" {
		a = bearer(token)
	}
	r := h.do("GET", "/metrics", a, nil)
	if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain") {
		h.t.Fatalf("GET /metrics: %d %s\n%s", r.status, r.header.Get("Content-Type"), r.raw)
	}
	return parseExposition(h.t.(*testing.T), r.raw), r.raw
}

// has fails unless the series is in the scrape, and returns its value.
func (s scrape) has(t *testing.T, series string) float64 {
	t.Helper()
	v, ok := s[series]
	if !ok {
		t.Fatalf("the scrape has no %s", series)
	}
	return v
}

// moved checks that series went from before to after by want.
func moved(t *testing.T, before, after scrape, series string, want float64) {
	t.Helper()
	if d := after.has(t, series) - before[series]; d != want {
		t.Errorf("%s moved by %v, want %v (before %v, after %v)", series, d, want, before[series], after[series])
	}
}

// TestMetricsAfterRealRuns runs a passing and a failing suite on the Docker engine and reads
// /metrics before and after, with a token set: every instrument moved as it should, routes are
// labelled by pattern, never by path.
func TestMetricsAfterRealRuns(t *testing.T) {
	for _, d := range []string{"sqlite", "postgres"} {
		t.Run(d, func(t *testing.T) {
			const token = "metrics-token-0123456789"
			h := runHarnessWith(t, d, map[string]string{"VERDICT_METRICS_TOKEN": token})

			// The token is required: none, another one, or one not sent as a bearer is a 401.
			for _, hdr := range [][]string{nil, {"Authorization", "Bearer wrong"}, {"Authorization", token},
				{"Authorization", "Basic " + token}} {
				r := h.do("GET", "/metrics", anon, nil, hdr...)
				if r.status != 401 || r.header.Get("WWW-Authenticate") == "" || strings.Contains(r.raw, "verdict_") {
					t.Fatalf("GET /metrics with %v: %d %q", hdr, r.status, r.raw)
				}
			}

			admin := h.signup("metrics@example.com", "Metrics Co")
			before, _ := h.scrape(token)
			for _, series := range []string{"verdict_runs_pending", "verdict_runs_running", "verdict_realtime_connections",
				"verdict_mail_outbox_pending", `verdict_webhooks_total{outcome="applied"}`, "go_goroutines",
				`verdict_runs_finished_total{status="PASSED"}`, "verdict_run_queue_seconds_count", "verdict_run_duration_seconds_count"} {
				before.has(t, series)
			}

			pass := h.queue(bearer(admin.token), map[string]any{"image": passImage})
			h.waitFor(bearer(admin.token), pass, 90*time.Second, final)
			fail := h.queue(bearer(admin.token), map[string]any{"image": failImage})
			r := h.waitFor(bearer(admin.token), fail, 90*time.Second, final)
			if got := r.str("execution", "status"); got != "FAILED" {
				t.Fatalf("the failing suite ended %s", got)
			}
			// GET /api/executions/{taskId} is polled by waitFor; the counter moves once the
			// handler has returned, so one more request settles the count.
			h.do("GET", "/api/executions/"+fail, bearer(admin.token), nil)

			after, raw := h.scrape(token)
			moved(t, before, after, `verdict_runs_finished_total{status="PASSED"}`, 1)
			moved(t, before, after, `verdict_runs_finished_total{status="FAILED"}`, 1)
			moved(t, before, after, `verdict_runs_finished_total{status="ERROR"}`, 0)
			moved(t, before, after, "verdict_run_queue_seconds_count", 2)
			moved(t, before, after, "verdict_run_duration_seconds_count", 2)
			if sum := after.has(t, "verdict_run_duration_seconds_sum") - before["verdict_run_duration_seconds_sum"]; sum <= 0 {
				t.Errorf("run durations sum to %v", sum)
			}
			moved(t, before, after, `verdict_http_requests_total{code="201",route="POST /api/executions"}`, 2)
			if n := after.has(t, `verdict_http_requests_total{code="200",route="GET /api/executions/{taskId}"}`); n < 2 {
				t.Errorf("GET /api/executions/{taskId} counted %v times", n)
			}
			if n := after.has(t, `verdict_http_request_seconds_count{route="POST /api/executions"}`); n < 2 {
				t.Errorf("the request histogram of POST /api/executions counted %v", n)
			}
			// The 401s above were served by the route and counted under its pattern.
			if n := after.has(t, `verdict_http_requests_total{code="401",route="GET /metrics"}`); n != 4 {
				t.Errorf("401s of GET /metrics: %v, want 4", n)
			}
			if after.has(t, "verdict_runs_pending") != 0 || after.has(t, "verdict_runs_running") != 0 {
				t.Errorf("runs still counted as going: pending %v, running %v", after["verdict_runs_pending"], after["verdict_runs_running"])
			}
			for _, leak := range []string{pass, fail, admin.orgID} {
				if strings.Contains(raw, leak) {
					t.Errorf("the exposition names %q: labels must be route patterns", leak)
				}
			}
		})
	}
}

// runHarnessWith is runHarness with more settings.
func runHarnessWith(t *testing.T, dialect string, env map[string]string) *harness {
	testenv.DockerHost(t)
	return newHarness(t, harnessOpts{dialect: dialect, realClock: true, workers: true, lease: 2 * time.Second, env: env})
}

// TestMetricsGaugesAndWebhooks: without a runner, a queued run is counted pending, and once
// cancelled it is gone from the gauge and counted CANCELLED; the outbox backlog counts the
// welcome mail; unknown paths are "unmatched"; webhook deliveries are counted by outcome; an
// open /metrics needs no token.
func TestMetricsGaugesAndWebhooks(t *testing.T) {
	forEachDBWith(t, harnessOpts{env: map[string]string{"STRIPE_WEBHOOK_SECRET": webhookSecret}}, func(t *testing.T, h *harness) {
		before, _ := h.scrape("")
		admin := h.signup("gauges@example.com", "Gauges Co")
		task := h.queue(bearer(admin.token), map[string]any{"image": passImage})
		mid, _ := h.scrape("")
		moved(t, before, mid, "verdict_runs_pending", 1)
		moved(t, before, mid, "verdict_runs_running", 0)
		if mid.has(t, "verdict_mail_outbox_pending") < 1 {
			t.Errorf("the welcome mail is not in the outbox backlog")
		}
		expect(t, h.do("POST", "/api/executions/"+task+"/cancel", bearer(admin.token), nil), 200, "")

		h.do("GET", "/api/no-such-route/"+admin.orgID, anon, nil)
		h.do("GET", "/no-such-page-"+admin.orgID, anon, nil)
		body := event("evt_metrics_1", "charge.succeeded", time.Now(), map[string]any{"id": "ch_1", "object": "charge"})
		expect(t, h.webhook(body, ""), 400, "Missing signature")
		for range 2 {
			if r := h.webhook(body, sign(body, webhookSecret, time.Now())); r.status != 200 {
				t.Fatalf("webhook: %d %s", r.status, r.raw)
			}
		}

		after, raw := h.scrape("")
		moved(t, before, after, "verdict_runs_pending", 0)
		moved(t, before, after, `verdict_runs_finished_total{status="CANCELLED"}`, 1)
		moved(t, before, after, "verdict_run_queue_seconds_count", 0)
		moved(t, before, after, `verdict_webhooks_total{outcome="rejected"}`, 1)
		moved(t, before, after, `verdict_webhooks_total{outcome="ignored"}`, 1)
		moved(t, before, after, `verdict_webhooks_total{outcome="duplicate"}`, 1)
		moved(t, before, after, `verdict_webhooks_total{outcome="applied"}`, 0)
		if after.has(t, `verdict_http_requests_total{code="404",route="unmatched"}`) < 1 {
			t.Errorf("an unknown /api/ route is not counted as unmatched")
		}
		if after.has(t, `verdict_http_requests_total{code="200",route="POST /api/executions/{taskId}/cancel"}`) != 1 {
			t.Errorf("the cancel is not counted under its pattern")
		}
		if strings.Contains(raw, admin.orgID) || strings.Contains(raw, task) {
			t.Errorf("the exposition names a path's values")
		}
	})
}
