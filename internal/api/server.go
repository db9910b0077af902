// Package api is Verdict's HTTP interface: routing, middleware (authentication, tenancy, rate
// limits, errors) and a file per resource. Handlers are thin: decode, call a service, encode.
package api

import (
	"context"
	"log/slog"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"time"

	"verdict/internal/domain"
	"verdict/internal/follow"
	"verdict/internal/outage"
	"verdict/internal/ports"
	"verdict/internal/ratelimit"
	"verdict/internal/report"
)

// Checker is a readiness probe of one dependency.
type Checker struct {
	Name  string
	Check func(ctx context.Context) error
	// Optional ones are reported but do not make the service unready (the API serves without
	// a Docker engine; runs wait for one).
	Optional bool
}

// Deps are the services the API calls and its settings. Identity, Executions, Billing,
// TestCases, JWT and Limiter are required; New fills in RateLimits, Log and Clock.
type Deps struct {
	Identity   ports.Identity
	Executions ports.Executions
	Billing    ports.Billing
	TestCases  ports.TestCases
	// Histories are tests' histories (required).
	Histories ports.Histories
	// Analyst is the failure analyst; nil: its routes answer 503.
	Analyst ports.Analyst
	// Planner is the automation planner; nil: its routes answer 503.
	Planner ports.Planner
	// Trackers is the trackers' service; nil: the integration routes answer 503.
	Trackers ports.Trackers
	// Schedules are projects' schedules; nil: their routes answer 503.
	Schedules ports.Schedules
	// Gates are the release gates (gate rules, compare); nil: their routes answer 503.
	Gates ports.Gates
	// SourceControl is the source-control service (hosts' tokens, projects' hooks); nil: its
	// routes answer 503.
	SourceControl ports.SourceControl
	// Notifications are the projects' notifications; nil: their routes answer 503.
	Notifications ports.Notifications
	// SSO is sign-in through organizations' OpenID Connect providers; nil: its routes answer 503.
	SSO ports.SSO
	// Custody exports organizations' data; nil: its route answers 503.
	Custody ports.Custody
	// Runners lists the remote runners heard from; nil: GET /api/runners lists none.
	Runners Runners
	// Follow fans the run plane's live events out to the SSE streams of runs; nil: the streams
	// hear of a run's end only by re-reading it (every 15 s).
	Follow     Follow
	JWT        ports.TokenVerifier
	Limiter    *ratelimit.Limiter
	RateLimits RateLimits // nil = DefaultRateLimits
	Proxies    []netip.Prefix
	Reports    report.Store
	Signer     *report.Signer
	// SecureCookies marks report cookies Secure (the public URL is https).
	SecureCookies bool
	// PublicURL is where clients reach the API (config.Config.PublicURL); report links in
	// execution views are absolute URLs on it (or on ReportsURL). Empty: paths.
	PublicURL string
	// ReportsURL is the reports' own origin (http(s)://host[:port]); empty: they are served on
	// the API's. See splitOrigins.
	ReportsURL string
	// Mounts are handlers that bring their own authentication, by pattern (Socket.IO).
	Mounts map[string]http.Handler
	// Pages serve every request that no route (nor Mounts) takes outside /api/: the dashboard,
	// with its own authentication. They are not API routes, so Patterns does not list them.
	// nil: such requests answer the mux's 404.
	Pages http.Handler
	// Metrics records requests and webhook outcomes (metrics.Metrics); nil: nothing.
	Metrics RequestMetrics
	// MetricsHandler serves GET /metrics, checking its own token; nil: the route answers 404.
	MetricsHandler http.Handler
	Ready          []Checker
	// Outage answers requests that meet a dependency that is away (503, counted, logged);
	// nil: one of its own.
	Outage *outage.Reporter
	// BodyTimeout bounds the time to receive a request body (0: unbounded).
	BodyTimeout time.Duration
	Log         *slog.Logger
	Clock       domain.Clock
	Version     string
}

// Server routes requests to handlers.
type Server struct {
	outage         *outage.Reporter
	identity       ports.Identity
	executions     ports.Executions
	billing        ports.Billing
	testCases      ports.TestCases
	schedules      ports.Schedules
	histories      ports.Histories
	planner        ports.Planner
	analyst        ports.Analyst
	trackers       ports.Trackers
	gates          ports.Gates
	scm            ports.SourceControl
	notifications  ports.Notifications
	sso            ports.SSO
	custody        ports.Custody
	runners        Runners
	follow         Follow
	reports        report.Store
	signer         *report.Signer
	secureCookies  bool
	reportsURL     string
	reportsHost    string
	views          Views
	finished       finishedItems
	jwt            ports.TokenVerifier
	limiter        *ratelimit.Limiter
	limits         RateLimits
	proxies        []netip.Prefix
	ready          []Checker
	readyLog       *readyLog
	observe        RequestMetrics
	metricsHandler http.Handler
	bodyTimeout    time.Duration
	log            *slog.Logger
	clock          domain.Clock
	version        string

	mux      *http.ServeMux
	patterns []string
	handler  http.Handler
}

// New builds the server and its routes.
func New(d Deps) *Server {
	if d.RateLimits == nil {
		d.RateLimits = DefaultRateLimits()
	}
	if d.Log == nil {
		d.Log = slog.Default()
	}
	if d.Clock == nil {
		d.Clock = domain.SystemClock
	}
	if d.Metrics == nil {
		d.Metrics = noMetrics{}
	}
	if d.Follow == nil {
		d.Follow = follow.New(follow.Options{Log: d.Log})
	}
	if d.Outage == nil {
		d.Outage = &outage.Reporter{Log: d.Log}
	}
	s := &Server{schedules: d.Schedules, observe: d.Metrics, metricsHandler: d.MetricsHandler, identity: d.Identity, executions: d.Executions, billing: d.Billing, testCases: d.TestCases, histories: d.Histories, planner: d.Planner, analyst: d.Analyst,
		trackers: d.Trackers, gates: d.Gates, scm: d.SourceControl, notifications: d.Notifications, sso: d.SSO, custody: d.Custody, runners: d.Runners, follow: d.Follow, reports: d.Reports, signer: d.Signer,
		secureCookies: d.SecureCookies, jwt: d.JWT, limiter: d.Limiter, limits: d.RateLimits, proxies: d.Proxies,
		ready: d.Ready, readyLog: &readyLog{log: d.Log, failing: map[string]readyFailure{}}, bodyTimeout: d.BodyTimeout, outage: d.Outage, log: d.Log, clock: d.Clock, version: d.Version, mux: http.NewServeMux()}
	if d.ReportsURL != "" {
		s.reportsURL = strings.TrimRight(d.ReportsURL, "/")
		s.reportsHost = reportsHost(s.reportsURL)
	}
	s.views = NewViews(d.PublicURL, s.reportsURL)
	s.routes()
	for pattern, h := range d.Mounts {
		s.Mount(pattern, h)
	}
	if d.Pages != nil {
		s.mux.Handle("/", s.pages(d.Pages))
	}
	s.handler = s.outer(s.mux)
	return s
}

// ServeHTTP serves the API. With a reports origin, splitOrigins first keeps the API and the
// tenants' reports on their own hosts. Socket.IO goes straight to its handler: its websocket
// upgrade needs the connection itself, which the status-recording wrapper does not offer.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	limitBodyTime(w, r, s.bodyTimeout)
	if s.reportsURL != "" && !s.splitOrigins(w, r) {
		return
	}
	if strings.HasPrefix(r.URL.Path, "/socket.io/") {
		s.mux.ServeHTTP(w, r)
		return
	}
	s.handler.ServeHTTP(w, r)
}

// Patterns lists every registered route pattern ("METHOD /path/{param}").
func (s *Server) Patterns() []string { return append([]string(nil), s.patterns...) }

// Mount adds a handler that brings its own authentication (Socket.IO, reports).
func (s *Server) Mount(pattern string, h http.Handler) {
	s.patterns = append(s.patterns, pattern)
	s.mux.Handle(pattern, h)
}

func (s *Server) routes() {
	pub := routeOpts{access: public}
	s.handle("GET /healthz", pub, s.healthz)
	s.handle("GET /readyz", pub, s.readyz)
	s.handle("GET /api/openapi.yaml", pub, serveOpenAPI)
	s.handle("GET /metrics", pub, s.serveMetrics)

	s.handle("POST /api/auth/signup", routeOpts{access: public, limit: "signup"}, s.signup)
	s.handle("POST /api/auth/login", routeOpts{access: public, limit: "login"}, s.login)
	s.handle("GET /api/auth/me", routeOpts{access: bearerOrKey, limit: "me"}, s.me)
	s.handle("POST /api/auth/logout", routeOpts{access: bearer, limit: "logout"}, s.logout)
	s.handle("POST /api/auth/revoke", routeOpts{access: bearer, limit: "logout"}, s.revoke)
	s.handle("POST /api/auth/api-keys", routeOpts{access: bearer, limit: "strict"}, s.createAPIKey)
	s.handle("GET /api/auth/api-keys", routeOpts{access: bearer, limit: "api"}, s.listAPIKeys)
	s.handle("DELETE /api/auth/api-keys/{id}", routeOpts{access: bearer, limit: "strict"}, s.revokeAPIKey)

	s.handle("GET /api/users", routeOpts{access: bearerOrKey, limit: "api"}, s.listUsers)
	s.handle("GET /api/users/{id}", routeOpts{access: bearerOrKey, limit: "api"}, s.getUser)
	s.handle("PATCH /api/users/{id}/role", routeOpts{access: bearer, limit: "strict"}, s.changeRole)
	s.handle("PATCH /api/users/{id}/status", routeOpts{access: bearer, limit: "strict"}, s.changeStatus)
	s.handle("DELETE /api/users/{id}", routeOpts{access: bearer, limit: "strict"}, s.deleteUser)

	s.handle("GET /api/organization", routeOpts{access: bearerOrKey, limit: "api"}, s.getOrganization)
	s.handle("PATCH /api/organization", routeOpts{access: bearer, limit: "strict"}, s.patchOrganization)
	s.handle("GET /api/organization/usage", routeOpts{access: bearerOrKey, limit: "api"}, s.usage)
	s.handle("PATCH /api/organization/ai-analysis", routeOpts{access: bearer, limit: "strict"}, s.patchAIAnalysis)
	s.handle("PATCH /api/organization/features", routeOpts{access: bearer, limit: "strict"}, s.patchFeatures)
	s.handle("GET /api/organization/ai-config", routeOpts{access: bearerOrKey, limit: "api"}, s.getAIConfig)
	s.handle("PATCH /api/organization/ai-config", routeOpts{access: bearer, limit: "strict"}, s.patchAIConfig)
	s.handle("GET /api/organization/retention", routeOpts{access: bearerOrKey, limit: "api"}, s.getRetention)
	s.handle("PATCH /api/organization/retention", routeOpts{access: bearer, limit: "strict"}, s.patchRetention)
	s.handle("GET /api/audit", routeOpts{access: bearerOrKey, limit: "api"}, s.listAudit)
	s.handle("GET /api/organization/sso", routeOpts{access: bearerOrKey, limit: "api"}, s.getSSO)
	s.handle("PUT /api/organization/sso", routeOpts{access: bearer, limit: "strict"}, s.putSSO)
	s.handle("GET /api/organization/export", routeOpts{access: bearer, limit: "strict"}, s.exportOrganization)
	s.handle("DELETE /api/organization", routeOpts{access: bearer, limit: "strict"}, s.eraseOrganization)
	s.handle("POST /api/organization/erase/cancel", routeOpts{access: bearer, limit: "strict"}, s.cancelErase)

	s.handle("POST /api/invitations", routeOpts{access: bearer, limit: "invite"}, s.invite)
	s.handle("POST /api/organizations/me/users/invite", routeOpts{access: bearer, limit: "invite"}, s.invite)
	s.handle("GET /api/invitations", routeOpts{access: bearer, limit: "invitations"}, s.listInvitations)
	s.handle("DELETE /api/invitations/{id}", routeOpts{access: bearer, limit: "invitations"}, s.revokeInvitation)
	s.handle("GET /api/invitations/validate/{token}", routeOpts{access: public, limit: "invitations-public"}, s.validateInvitation)
	s.handle("POST /api/invitations/accept", routeOpts{access: bearer, limit: "invitations"}, s.acceptInvitation)

	s.handle("GET /api/projects", routeOpts{access: bearerOrKey, limit: "api"}, s.listProjects)
	s.handle("POST /api/projects", routeOpts{access: bearerOrKey, limit: "api"}, s.createProject)
	s.handle("GET /api/projects/{id}", routeOpts{access: bearerOrKey, limit: "api"}, s.getProject)
	s.handle("PATCH /api/projects/{id}", routeOpts{access: bearerOrKey, limit: "api"}, s.patchProject)
	s.handle("DELETE /api/projects/{id}", routeOpts{access: bearerOrKey, limit: "api"}, s.deleteProject)
	s.handle("GET /api/projects/{id}/gate", routeOpts{access: bearerOrKey, limit: "api"}, s.getGate)
	s.handle("PUT /api/projects/{id}/gate", routeOpts{access: bearerOrKey, limit: "api"}, s.putGate)
	s.notificationRoutes()

	cases := routeOpts{access: bearerOrKey, limit: "api"}
	s.handle("GET /api/test-cases", cases, s.listTestCases)
	s.handle("POST /api/test-cases", cases, s.createTestCase)
	s.handle("POST /api/test-cases/import", cases, s.importTestCases)
	s.handle("GET /api/test-cases/{id}", cases, s.getTestCase)
	s.handle("PATCH /api/test-cases/{id}", cases, s.patchTestCase)
	s.handle("DELETE /api/test-cases/{id}", cases, s.deleteTestCase)

	s.handle("GET /api/tests", cases, s.listTests)
	s.handle("GET /api/tests/{testId}", cases, s.getTest)
	s.handle("PUT /api/tests/{testId}/quarantine", cases, s.quarantineTest)
	s.handle("DELETE /api/tests/{testId}/quarantine", cases, s.unquarantineTest)
	s.handle("GET /api/projects/{id}/auto-quarantine", cases, s.getAutoQuarantine)
	s.handle("PUT /api/projects/{id}/auto-quarantine", cases, s.putAutoQuarantine)

	s.handle("POST /api/ai/automation-planner/discover", routeOpts{access: bearer, limit: "api"}, s.discoverPlan)
	s.handle("POST /api/ai/automation-planner/generate", routeOpts{access: bearer, limit: "strict"}, s.generatePlan)
	s.handle("GET /api/ai/automation-planner/history", routeOpts{access: bearer, limit: "api"}, s.planHistory)
	s.handle("GET /api/ai/automation-planner/history/{planId}", routeOpts{access: bearer, limit: "api"}, s.openPlan)
	s.handle("DELETE /api/ai/automation-planner/history/{planId}", routeOpts{access: bearer, limit: "api"}, s.deletePlan)
	s.handle("GET /api/ai/automation-planner/filter-options", routeOpts{access: bearer, limit: "api"}, s.planFilterOptions)

	execs := routeOpts{access: bearerOrKey, limit: "executions"}
	s.handle("POST /api/executions", execs, s.queueExecution)
	s.handle("POST /api/execution-request", execs, s.queueExecution)
	s.handle("GET /api/executions", execs, s.listExecutions)
	s.handle("GET /api/executions/{taskId}", execs, s.getExecution)
	s.handle("GET /api/executions/{taskId}/logs", execs, s.executionLogs)
	s.handle("GET /api/executions/{taskId}/events", execs, s.executionEvents)
	s.handle("POST /api/executions/{taskId}/cancel", execs, s.cancelExecution)
	s.handle("PUT /api/executions/{taskId}/pin", execs, s.pinExecution)
	s.handle("DELETE /api/executions/{taskId}/pin", execs, s.pinExecution)
	s.handle("DELETE /api/executions/{taskId}", execs, s.deleteExecution)
	s.handle("GET /api/executions/{taskId}/report-token", execs, s.reportToken)
	s.handle("GET /api/executions/{taskId}/junit", execs, s.executionJUnit)
	s.handle("POST /api/executions/{taskId}/analysis", execs, s.reanalyse)
	s.handle("PATCH /api/executions/{taskId}/analysis", execs, s.triage)
	s.handle("GET /api/executions/{taskId}/compare", execs, s.compareExecutions)
	s.handle("GET /config/defaults", routeOpts{access: bearerOrKey, limit: "api"}, s.configDefaults)
	s.handle("GET /api/tests-structure", routeOpts{access: bearerOrKey, limit: "api"}, s.testsStructure)
	s.handle("GET /api/metrics/{image...}", routeOpts{access: bearerOrKey, limit: "api"}, s.metrics)
	s.handle("GET /reports/{org}/{task}/{path...}", pub, s.serveReport)
	s.handle("GET /trace/{path...}", pub, serveTraceViewer)

	s.trackerRoutes()
	s.scheduleRoutes()
	s.scmRoutes()

	s.handle("POST /api/billing/checkout", routeOpts{access: bearer, limit: "strict"}, s.checkout)
	s.handle("POST /api/billing/portal", routeOpts{access: bearer, limit: "strict"}, s.billingPortal)
	s.handle("GET /api/billing/subscription", routeOpts{access: bearerOrKey, limit: "api"}, s.subscription)
	s.handle("GET /api/billing/events", routeOpts{access: bearer, limit: "api"}, s.billingEvents)
	s.handle("POST /api/webhooks/stripe", routeOpts{access: public, limit: "webhooks"}, s.stripeWebhook)
	s.handle("GET /api/webhooks/test", routeOpts{access: public, limit: "webhooks"}, s.webhookTest)

	s.handle("GET /api/runners", routeOpts{access: bearer, limit: "api", operator: s.listAllRunners}, s.listRunners)

	// Unknown /api routes answer JSON, not the mux's text 404.
	s.mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeDomainError(w, domain.NotFound("Not found", "No such route: "+r.Method+" "+r.URL.Path))
	})
}

// pages hands the dashboard what the API's routes leave, except a known path asked with
// another method: that keeps its 405 (with Allow), as without the dashboard.
func (s *Server) pages(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var allowed []string
		for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
			if m == r.Method {
				continue
			}
			probe := r.Clone(r.Context())
			probe.Method = m
			if _, pattern := s.mux.Handler(probe); pattern != "" && pattern != "/" {
				allowed = append(allowed, m)
			}
		}
		if len(allowed) > 0 {
			if slices.Contains(allowed, http.MethodGet) {
				allowed = append(allowed, http.MethodHead)
			}
			w.Header().Set("Allow", strings.Join(allowed, ", "))
			http.Error(w, http.StatusText(http.StatusMethodNotAllowed), http.StatusMethodNotAllowed)
			return
		}
		// The dashboard's changes are audited with the client's address, as the API's are. The
		// dashboard's mux names its route on the request it is handed: the access log and the
		// metrics read it from this one.
		inner := r.WithContext(domain.WithClientIP(r.Context(), clientIP(r, s.proxies)))
		h.ServeHTTP(w, inner)
		r.Pattern = inner.Pattern
	})
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	ok(w, obj{"status": "ok", "version": s.version})
}

// readyz reports each dependency; 503 when a required one fails. The route is public, so it
// says which check fails and never how: a dependency's error names its host and port. The
// error goes to the log instead (readyLog).
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
	defer cancel()
	checks := obj{}
	ready := true
	for _, c := range s.ready {
		err := c.Check(ctx)
		s.readyLog.note(c, err, s.clock())
		if err != nil {
			checks[c.Name] = obj{"ok": false, "optional": c.Optional}
			ready = ready && c.Optional
		} else {
			checks[c.Name] = obj{"ok": true}
		}
	}
	status := http.StatusOK
	if !ready {
		status = http.StatusServiceUnavailable
	}
	writeJSON(w, status, obj{"success": ready, "ready": ready, "checks": checks})
}
