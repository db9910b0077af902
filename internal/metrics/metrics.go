// Package metrics is Verdict's Prometheus instrumentation: a private registry (no global
// state), the counters and histograms that the API and the run plane record into, the gauges
// read at scrape time, and the GET /metrics exposition with its optional bearer token.
//
// Who records what: the API's outer middleware records every request (ObserveRequest) and its
// webhook handler the payment provider's deliveries (WebhookOutcome); the runner records a run's
// start (RunStarted) and end (RunFinished), as does the lease reaper for the runs it ends, and
// app records a queued run cancelled before it started. The run gauges, the mail backlog and
// the live connections are read when Prometheus scrapes (Sources), not kept in memory.
package metrics

import (
	"context"
	"crypto/subtle"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"verdict/internal/domain"
)

// Unmatched is the route label of a request no route pattern took (an unknown path, a
// redirect to a cleaned path, a method no route has).
const Unmatched = "unmatched"

// Outcomes of a payment-provider webhook delivery (verdict_webhooks_total{outcome}).
const (
	WebhookApplied   = "applied"   // recorded and applied to an organization
	WebhookIgnored   = "ignored"   // recorded, nothing to apply (an event type Verdict ignores, no matching organization)
	WebhookError     = "error"     // recorded, but applying it failed for good (shown in the billing event log)
	WebhookDuplicate = "duplicate" // a redelivery of an event already recorded
	WebhookRejected  = "rejected"  // refused with a 4xx: no or a bad signature, a malformed event or body
	WebhookFailed    = "failed"    // not recorded, answered 5xx (no webhook secret configured, a database failure): the provider retries it
)

// Sources are read at scrape time; a nil one is left out of the exposition.
type Sources struct {
	// Runs counts every organization's waiting (PENDING) and going (RUNNING, ANALYZING) runs;
	// with several replicas on one database this is the truth, so it is read from the store.
	Runs func(ctx context.Context) (pending, running int, err error)
	// MailBacklog counts the outbox's mails not sent yet and not given up.
	MailBacklog func(ctx context.Context) (int, error)
	// Connections counts this replica's authenticated Socket.IO connections.
	Connections func() int
}

// scrapeTimeout bounds the store queries of one scrape.
const scrapeTimeout = 3 * time.Second

// Metrics holds the registry and the instruments. A nil *Metrics records nothing.
type Metrics struct {
	reg          *prometheus.Registry
	runsFinished *prometheus.CounterVec
	queueSeconds prometheus.Histogram
	runSeconds   prometheus.Histogram
	requests     *prometheus.CounterVec
	reqSeconds   *prometheus.HistogramVec
	webhooks     *prometheus.CounterVec
	unavailable  *prometheus.CounterVec
	routes       sync.Map // route → *routeInstruments
}

// New builds the registry with the Go runtime's and the process's collectors, Verdict's
// instruments, and a collector reading src at scrape time.
func New(version string, src Sources, log *slog.Logger) *Metrics {
	if log == nil {
		log = slog.Default()
	}
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		runsFinished: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "verdict_runs_finished_total",
			Help: "Runs that reached a final status in this process, by status (PASSED, FAILED, UNSTABLE, ERROR, CANCELLED).",
		}, []string{"status"}),
		queueSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "verdict_run_queue_seconds",
			Help:    "Time a run (each container of a sharded run: its shards and retry containers) waited from being queued to being started by this process's runner.",
			Buckets: []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600},
		}),
		runSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "verdict_run_duration_seconds",
			Help:    "Time from a run's start to its final status, for runs that started.",
			Buckets: []float64{1, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400, 43200, 86400},
		}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "verdict_http_requests_total",
			Help: `HTTP requests served, by route pattern ("unmatched" when none) and status code. Socket.IO's transport is not counted.`,
		}, []string{"route", "code"}),
		reqSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "verdict_http_request_seconds",
			Help:    "Time to serve an HTTP request, by route pattern, until the handler returned.",
			Buckets: prometheus.DefBuckets,
		}, []string{"route"}),
		webhooks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "verdict_webhooks_total",
			Help: "Payment-provider webhook deliveries, by outcome (applied, ignored, error, duplicate, rejected, failed).",
		}, []string{"outcome"}),
		unavailable: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "verdict_unavailable_total",
			Help: "Requests answered 503 because a dependency was away, by dependency (database).",
		}, []string{"dependency"}),
	}
	m.unavailable.WithLabelValues("database")
	for _, s := range []domain.ExecStatus{domain.ExecPassed, domain.ExecFailed, domain.ExecUnstable, domain.ExecError, domain.ExecCancelled} {
		m.runsFinished.WithLabelValues(string(s))
	}
	for _, o := range []string{WebhookApplied, WebhookIgnored, WebhookError, WebhookDuplicate, WebhookRejected, WebhookFailed} {
		m.webhooks.WithLabelValues(o)
	}
	build := prometheus.NewGauge(prometheus.GaugeOpts{Name: "verdict_build_info", Help: "Always 1; the version is a label.",
		ConstLabels: prometheus.Labels{"version": version}})
	build.Set(1)
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		build, m.runsFinished, m.queueSeconds, m.runSeconds, m.requests, m.reqSeconds, m.webhooks, m.unavailable,
		&scraped{src: src, log: log},
	)
	return m
}

// Registry is the private registry, for tests and for adding collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the exposition. With a token, a request must carry `Authorization: Bearer
// <token>` (compared in constant time), else it answers 401.
func (m *Metrics) Handler(token string) http.Handler {
	h := promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
	if token == "" {
		return h
	}
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="metrics"`)
			http.Error(w, "401 Unauthorized: GET /metrics needs Authorization: Bearer <VERDICT_METRICS_TOKEN>", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// ObserveRequest records one served request: route is the ServeMux pattern (or Unmatched),
// never the path, so the labels stay few.
func (m *Metrics) ObserveRequest(route string, status int, elapsed time.Duration) {
	if m == nil {
		return
	}
	ri, ok := m.routes.Load(route)
	if !ok {
		ri, _ = m.routes.LoadOrStore(route, &routeInstruments{seconds: m.reqSeconds.WithLabelValues(route)})
	}
	r := ri.(*routeInstruments)
	r.seconds.Observe(elapsed.Seconds())
	c, ok := r.codes.Load(status)
	if !ok {
		c, _ = r.codes.LoadOrStore(status, m.requests.WithLabelValues(route, statusCode(status)))
	}
	c.(prometheus.Counter).Inc()
}

// routeInstruments are one route's request instruments, resolved once: looking a vector's
// child up by its label values hashes them on every call, which was most of the cost of a
// request's metrics. Routes are patterns and codes few, so these stay few.
type routeInstruments struct {
	seconds prometheus.Observer
	codes   sync.Map // status code (int) → prometheus.Counter
}

// WebhookOutcome counts one webhook delivery by its outcome (the Webhook* constants).
func (m *Metrics) WebhookOutcome(outcome string) {
	if m == nil {
		return
	}
	m.webhooks.WithLabelValues(outcome).Inc()
}

// Unavailable counts one request answered 503 because dependency was away.
func (m *Metrics) Unavailable(dependency string) {
	if m == nil {
		return
	}
	m.unavailable.WithLabelValues(dependency).Inc()
}

// RunStarted records how long a run, or a container of a sharded run, that has just started
// waited in the queue.
func (m *Metrics) RunStarted(e *domain.Execution) {
	if m == nil || e.StartedAt == nil {
		return
	}
	m.queueSeconds.Observe(max(e.StartedAt.Sub(e.QueuedAt).Seconds(), 0))
}

// RunFinished counts a run that reached its final status and, when it had started, records how
// long it took.
func (m *Metrics) RunFinished(e *domain.Execution) {
	if m == nil || !e.Status.Final() {
		return
	}
	m.runsFinished.WithLabelValues(string(e.Status)).Inc()
	if e.StartedAt != nil && e.FinishedAt != nil {
		m.runSeconds.Observe(max(e.FinishedAt.Sub(*e.StartedAt).Seconds(), 0))
	}
}

// codes are the label values of the usual status codes, made once.
var codes = func() map[int]string {
	m := map[int]string{}
	for c := 100; c < 600; c++ {
		if http.StatusText(c) != "" {
			m[c] = strconv.Itoa(c)
		}
	}
	return m
}()

func statusCode(status int) string {
	if s, ok := codes[status]; ok {
		return s
	}
	return strconv.Itoa(status)
}

// scraped reads the gauges' sources when Prometheus scrapes.
type scraped struct {
	src Sources
	log *slog.Logger
}

var (
	descPending = prometheus.NewDesc("verdict_runs_pending",
		"Runs queued and not started, in every organization (read from the database at scrape time).", nil, nil)
	descRunning = prometheus.NewDesc("verdict_runs_running",
		"Runs started and not finished (RUNNING or ANALYZING), in every organization, on every replica (read from the database at scrape time).", nil, nil)
	descOutbox = prometheus.NewDesc("verdict_mail_outbox_pending",
		"E-mails in the durable outbox not sent yet and not given up (read from the database at scrape time).", nil, nil)
	descConns = prometheus.NewDesc("verdict_realtime_connections",
		"Authenticated Socket.IO connections on this replica.", nil, nil)
)

func (c *scraped) Describe(ch chan<- *prometheus.Desc) {
	ch <- descPending
	ch <- descRunning
	ch <- descOutbox
	ch <- descConns
}

// Collect leaves out a gauge whose source fails (logged), so one failing query does not lose
// the whole scrape.
func (c *scraped) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	if c.src.Runs != nil {
		if pending, running, err := c.src.Runs(ctx); err != nil {
			c.log.Warn("metrics: counting runs failed", "err", err)
		} else {
			ch <- prometheus.MustNewConstMetric(descPending, prometheus.GaugeValue, float64(pending))
			ch <- prometheus.MustNewConstMetric(descRunning, prometheus.GaugeValue, float64(running))
		}
	}
	if c.src.MailBacklog != nil {
		if n, err := c.src.MailBacklog(ctx); err != nil {
			c.log.Warn("metrics: counting the mail outbox failed", "err", err)
		} else {
			ch <- prometheus.MustNewConstMetric(descOutbox, prometheus.GaugeValue, float64(n))
		}
	}
	if c.src.Connections != nil {
		ch <- prometheus.MustNewConstMetric(descConns, prometheus.GaugeValue, float64(c.src.Connections()))
	}
}
