// Package app assembles Verdict from its configuration: the store, limits, mail, services, the
// API and the background workers. `verdict serve` and the end-to-end tests build it the same way.
package app

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"verdict/internal/ai/analyst"
	"verdict/internal/ai/models"
	"verdict/internal/ai/planning"
	"verdict/internal/api"
	"verdict/internal/auth"
	"verdict/internal/billing"
	"verdict/internal/config"
	"verdict/internal/control"
	"verdict/internal/crypto/secretbox"
	"verdict/internal/domain"
	"verdict/internal/executions"
	"verdict/internal/follow"
	"verdict/internal/identity"
	"verdict/internal/integrations"
	"verdict/internal/mail"
	"verdict/internal/metrics"
	"verdict/internal/outage"
	"verdict/internal/peerhttp"
	"verdict/internal/ratelimit"
	"verdict/internal/realtime"
	"verdict/internal/report"
	"verdict/internal/run"
	"verdict/internal/run/engines"
	"verdict/internal/store/sqlstore"
	"verdict/internal/testcases"
	"verdict/internal/web"
)

// App is the assembled service.
type App struct {
	log   *slog.Logger
	Store *sqlstore.Store
	redis *redis.Client
	API   *api.Server
	hub   *realtime.Hub
	// Follow is the SSE followers' fan-out (its Stats are the followers' gauges).
	Follow  *follow.Broadcaster
	backend run.Backend
	events  control.Events
	runner  *run.Runner
	remote  *peerhttp.Server // the runner routes (/api/runner/): answer 404 without VERDICT_RUNNER_SECRET
	reaper  *control.Reaper
	mailer  *mail.Worker
	metrics *metrics.Metrics
	// reportCheck is the report bucket's readiness check (nil: reports in the data folder).
	reportCheck *api.Checker
	closers     []func()
}

// Options adjust an App for tests: a controlled clock, other rate limits.
type Options struct {
	Clock      domain.Clock
	RateLimits api.RateLimits
	// RedisPrefix namespaces this App's Redis keys (default "verdict:"); tests sharing one
	// Redis give each App its own.
	RedisPrefix string
	Version     string
	// MailConsole receives console e-mails when no SMTP host is set (default: standard error).
	MailConsole io.Writer
	// Lease and ReapInterval shorten the run plane's timings in tests (0 = defaults).
	Lease        time.Duration
	ReapInterval time.Duration
	// FollowBufferBytes bounds each SSE follower's queue (0: follow's default).
	FollowBufferBytes int64
}

// New wires every part from the configuration and applies pending migrations.
func New(ctx context.Context, cfg *config.Config, log *slog.Logger, o Options) (*App, error) {
	if o.Clock == nil {
		o.Clock = domain.SystemClock
	}
	if o.MailConsole == nil {
		o.MailConsole = os.Stderr
	}
	clock := o.Clock
	a := &App{log: log}
	ok := false
	defer func() {
		if !ok {
			a.Close()
		}
	}()

	// The data folder (database, reports, development secrets) is the service's alone.
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("data folder: %w", err)
	}
	if err := os.Chmod(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("data folder: %w", err)
	}
	st, err := sqlstore.Open(ctx, cfg.DatabaseURL, cfg.DataDir)
	if err != nil {
		return nil, fmt.Errorf("database: %w", err)
	}
	a.Store = st
	a.closers = append(a.closers, func() { st.Close() })
	if err := st.Migrate(ctx); err != nil {
		return nil, fmt.Errorf("database migrations: %w", err)
	}

	// The lockout counts failures in fixed windows (counters); the API's rate limits are GCRA
	// (limiter). Both are shared through Redis when there is one, and count in this replica's
	// memory while Redis is away.
	var counters ratelimit.Store
	var limiter *ratelimit.Limiter
	if cfg.RedisURL != "" {
		opts, err := redis.ParseURL(cfg.RedisURL)
		if err != nil {
			return nil, fmt.Errorf("REDIS_URL: %w", err)
		}
		a.redis = redis.NewClient(opts)
		a.closers = append(a.closers, func() { a.redis.Close() })
		if err := a.redis.Ping(ctx).Err(); err != nil {
			return nil, fmt.Errorf("redis: %w", err)
		}
		prefix := o.RedisPrefix
		if prefix == "" {
			prefix = "verdict:"
		}
		counters = ratelimit.StoreWithFallback(ratelimit.NewRedisStore(a.redis, prefix, clock), clock, log)
		limiter = ratelimit.NewRedisLimiter(a.redis, prefix, clock).WithFallback(log)
	} else {
		counters = ratelimit.NewMemoryStore(clock)
		limiter = ratelimit.NewMemoryLimiter(clock)
	}

	jwt, err := auth.NewTokens([]byte(cfg.JWTSecret), cfg.JWTExpiry, clock)
	if err != nil {
		return nil, err
	}

	sender, err := mail.NewSender(mail.SMTPConfig{Host: cfg.SMTPHost, Port: cfg.SMTPPort, Username: cfg.SMTPUsername,
		Password: cfg.SMTPPassword, From: cfg.SMTPFrom, TLS: cfg.SMTPTLS}, o.MailConsole)
	if err != nil {
		return nil, fmt.Errorf("mail: %w", err)
	}
	renderer, err := mail.NewRenderer(cfg.PublicURL)
	if err != nil {
		return nil, fmt.Errorf("mail: %w", err)
	}
	a.mailer = &mail.Worker{Repo: st.Outbox(), Sender: sender, Clock: clock, Logger: log}

	box, err := secretbox.New(cfg.EncKey)
	if err != nil {
		return nil, fmt.Errorf("ENCRYPTION_KEY: %w", err)
	}
	// Mail bodies (invitation links) are sealed at rest with a key of their own, so no other
	// sealed value copied into the outbox would be opened and mailed.
	mailBox, err := secretbox.New(deriveKey(string(cfg.EncKey), "verdict mail outbox"))
	if err != nil {
		return nil, err
	}
	st.SealOutbox(mailBox)
	reportStore, err := newReportStore(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("report store: %w", err)
	}
	reports := reportStore.Store
	a.reportCheck = reportStore.check
	// Report links are signed with a key derived from the JWT secret, so one secret to manage.
	signer, err := report.NewSigner(deriveKey(cfg.JWTSecret, "verdict report links"))
	if err != nil {
		return nil, err
	}

	alerts := billing.NewAlerts(billing.AlertsDeps{Renderer: renderer, Notify: a.mailer.Notify, Clock: clock, Log: log})
	var provider billing.Provider // none without a secret key: the billing routes answer 503
	if cfg.StripeSecretKey != "" {
		provider = billing.NewStripe(cfg.StripeSecretKey, cfg.StripeAPIBase)
	}
	bill := billing.New(billing.Deps{Store: st, Provider: provider, WebhookSecret: cfg.StripeWebhookSecret,
		Prices:    map[domain.Plan]string{domain.PlanTeam: cfg.StripePriceTeam, domain.PlanEnterprise: cfg.StripePriceEnterprise},
		PublicURL: cfg.PublicURL, Renderer: renderer, Notify: a.mailer.Notify, Alerts: alerts, Clock: clock, Log: log})

	// The one construction cycle: the hub authenticates a socket's handshake through identity,
	// and identity ends a member's sockets through the hub. The hub comes first (the run
	// plane's events go through it, and identity counts runs through executions), so it gets
	// this function, which reaches identity once ids is set below. Handshakes only arrive once
	// the API serves, after New has returned.
	var ids *identity.Service
	// The dashboard's pages open their sockets with tickets (web.SocketTickets), not the JWT.
	tickets := web.NewSocketTickets(deriveKey(cfg.JWTSecret, "verdict socket tickets"), clock)
	authenticate := func(ctx context.Context, token string) (realtime.Identity, error) {
		id, err := socketAuth(jwt, tickets, ids, clock)(ctx, token)
		if errors.Is(err, domain.ErrUnavailable) {
			err = fmt.Errorf("%w: %v", realtime.ErrUnavailable, err)
		}
		return id, err
	}
	hubOpts, err := socketBounds(cfg, o.RateLimits, limiter, log)
	if err != nil {
		return nil, err
	}
	hubOpts.Authenticate, hubOpts.RedisURL, hubOpts.RedisPrefix, hubOpts.Logger = authenticate, cfg.RedisURL,
		strings.TrimSuffix(o.RedisPrefix, ":"), log
	hub, err := realtime.New(hubOpts)
	if err != nil {
		return nil, fmt.Errorf("realtime: %w", err)
	}
	a.closers = append(a.closers, func() { hub.Close() })
	a.hub = hub
	// The SSE followers' fan-out; with Redis, one channel carries the runs' events to every replica.
	followOpts := follow.Options{Log: log, BufferBytes: o.FollowBufferBytes}
	if a.redis != nil {
		prefix := o.RedisPrefix
		if prefix == "" {
			prefix = "verdict:"
		}
		followOpts.Transport = redisFollow{client: a.redis, channel: prefix + "follow"}
	}
	followers := follow.New(followOpts)
	a.closers = append(a.closers, followers.Close)
	a.Follow = followers
	events := hubEvents{hub: hub, follow: followers, clock: clock, views: api.NewViews(cfg.PublicURL, cfg.ReportsURL)}

	// Metrics: the run gauges and the mail backlog are counted in the database when scraped, so
	// every replica on one database reports the same truth; connections are this replica's.
	a.metrics = metrics.New(o.Version, metrics.Sources{Runs: st.Executions().ActiveCounts,
		MailBacklog: st.Outbox().Backlog, Connections: hub.Connections}, log)

	res := engines.Resources(cfg.Engine)
	backend, err := engines.Open(cfg.Engine, log)
	if err != nil {
		return nil, err
	}
	a.closers = append(a.closers, func() { engines.Close(backend) })
	a.backend = backend
	a.events = events
	execDeps := executions.Deps{Store: st, Box: box, Backend: backend, Reports: reports, Events: cancelCounter{events, a.metrics},
		Alerts: alerts, Clock: clock, NewID: domain.NewID, Log: log, DefaultImage: cfg.DefaultImage, DefaultBaseURL: cfg.DefaultBaseURL,
		AllowedImages: cfg.AllowedImages, PlanTimeouts: planTimeouts(cfg.Timeouts)}
	// Organizations' own model keys are sealed with a key of their own, derived like the mail's.
	keysBox, err := secretbox.New(deriveKey(string(cfg.EncKey), "verdict provider keys"))
	if err != nil {
		return nil, err
	}
	modelClient := models.New(modelsConfig(cfg))
	analyses := analyst.New(analyst.Deps{Store: st, Box: keysBox, Models: modelClient,
		ServerKeys: map[models.Provider]string{models.OpenAI: cfg.OpenAIAPIKey, models.Gemini: cfg.GeminiAPIKey,
			models.Anthropic: cfg.AnthropicAPIKey},
		Events: events, Clock: clock, Log: log})
	a.closers = append(a.closers, analyses.Wait) // runs before the store closes
	// The outages of the database the runners' calls meet reach the lease reaper, which does not
	// count them against the runners' leases.
	outages := &control.Outages{}
	plane := &control.Plane{Store: st, Reports: reports, ReportDir: reportStore.dir, ReportFS: reportStore.fsys, Box: box, Events: events,
		Clock: clock, Log: log, Alerts: alerts, Analyst: analyses, Metrics: a.metrics, Outages: outages}
	lease := cfg.RunnerLease
	if o.Lease > 0 {
		lease = o.Lease
	}
	// Remote runners (`verdict runner`) reach the same plane over HTTP, each through its own
	// run.Peer; a queued run wakes their waiting /api/runner/next.
	remoteDeps := peerhttp.ServerDeps{Secret: cfg.RunnerSecret, Peer: plane.InstancePeer, Clock: clock, Log: log,
		Cancelled: cancelledRuns(st)}
	if a.redis != nil {
		prefix := o.RedisPrefix
		if prefix == "" {
			prefix = "verdict:"
		}
		remoteDeps.Registry = redisRunners{client: a.redis, key: prefix + "runners"}
	}
	a.remote = peerhttp.NewServer(remoteDeps)
	execDeps.Wake = a.remote.Notify
	execDeps.Stop = func(string) { a.remote.NotifyCancel() }
	if cfg.Runner == "embedded" {
		// The embedded runner reaches the control plane in process, through its run.Peer.
		id := runnerID(cfg.DataDir)
		a.runner = &run.Runner{ID: id, Peer: plane.Peer(id), Backend: backend, Clock: clock, Log: log,
			Slots: cfg.RunnerSlots, Resources: res, Lease: lease}
		remote := a.remote
		execDeps.Wake = func() { a.runner.Notify(); remote.Notify() }
		execDeps.Stop = func(id string) { a.runner.Cancel(id); remote.NotifyCancel() }
	}
	execs := executions.New(execDeps)
	a.reaper = &control.Reaper{Store: st, Backend: backend, Events: events, Clock: clock, Log: log, Interval: o.ReapInterval,
		Metrics: a.metrics, Grace: lease, Outages: outages}

	// Organizations' tracker keys are sealed with a key of their own, derived like the others.
	trackerBox, err := secretbox.New(deriveKey(string(cfg.EncKey), "verdict tracker keys"))
	if err != nil {
		return nil, err
	}
	// A ticket links the run's report as the execution view does (recording which folders hold
	// an index.html first for runs stored before that was recorded).
	reportURL := func(ctx context.Context, e *domain.Execution) string {
		if e.ReportIndexes == nil && len(e.ReportDirs) > 0 {
			e.ReportIndexes = report.IndexedDirs(ctx, reports, e.OrganizationID, e.TaskID, e.ReportDirs)
		}
		return events.views.ReportURL(e)
	}
	trackers := integrations.New(integrations.Deps{Store: st, Box: trackerBox, Endpoints: map[string]integrations.Endpoint{
		"linear": {URL: cfg.LinearAPIURL}, "monday": {URL: cfg.MondayAPIURL, Version: cfg.MondayAPIVersion}},
		ReportURL: reportURL, Events: events, Clock: clock, Log: log})

	// A member's or a key's sockets and SSE streams end on every replica (through Redis); a
	// revoked session's on this replica, as each replica learns of it from the database.
	endUser := func(userID string) { hub.EndUserSessions(userID); followers.End(api.UserStreams(userID)) }
	endKey := func(keyID string) { hub.EndKeySessions(keyID); followers.End(api.KeyStreams(keyID)) }
	endToken := func(tokenID string) { hub.EndTokenSessions(tokenID); followers.EndLocal(api.SessionStreams(tokenID)) }
	ids = identity.New(identity.Deps{
		Store:       st,
		Tokens:      jwt,
		Lockout:     auth.NewLockout(counters, clock),
		Mailer:      &identity.OutboxMailer{Renderer: renderer, Worker: a.mailer, Clock: clock},
		Runs:        execs,
		Alerts:      alerts,
		EndSessions: endUser, EndKeySessions: endKey, EndTokenSessions: endToken,
		DefaultPlan: domain.Plan(cfg.DefaultPlan),
		Clock:       clock,
		Log:         log,
	})

	// Revoked session tokens: read them all before serving, then what any replica adds, about
	// every second (identity.RevocationInterval).
	if err := ids.SyncRevocations(ctx); err != nil {
		return nil, fmt.Errorf("revoked session tokens: %w", err)
	}
	revCtx, stopRevocations := context.WithCancel(context.Background())
	revDone := make(chan struct{})
	go func() { defer close(revDone); ids.FollowRevocations(revCtx) }()
	a.closers = append(a.closers, func() { stopRevocations(); <-revDone })

	cases := testcases.New(testcases.Deps{Store: st, Clock: clock, Log: log})

	limits := o.RateLimits
	if limits == nil && len(cfg.Limits) > 0 {
		if limits, err = rateLimits(cfg.Limits); err != nil {
			return nil, err
		}
	}
	plans := planning.New(planning.Deps{Store: st, Models: modelClient, Choose: analyses, Clock: clock, Log: log})
	// The dashboard's CSRF tokens are signed with a key derived from the JWT secret, like report links.
	// A run page links its report as GET /api/executions/{taskId}/report-token does: the main
	// report with a short-lived token for the signed-in user.
	reportLink := func(ctx context.Context, p *identity.Principal, e *domain.Execution) string {
		target := reportURL(ctx, e)
		if target == "" {
			return ""
		}
		return target + "?token=" + url.QueryEscape(signer.Sign(p.OrgID, e.ID, p.UserID, clock()))
	}
	self, _ := os.Executable() // the CLI a CI job downloads; "" when unknown
	// One reporter for the API and the dashboard: one count, one log line per outage.
	away := &outage.Reporter{Log: log, Count: a.metrics.Unavailable, Clock: clock}
	pages := web.New(web.Deps{Outage: away, Identity: ids, Executions: execs, Billing: bill, Analyst: analyses, JWT: jwt, Executable: self,
		CSRFKey: deriveKey(cfg.JWTSecret, "verdict dashboard csrf"), SecureCookies: strings.HasPrefix(cfg.PublicURL, "https://"),
		ReportLink: reportLink, SocketTickets: tickets, Limit: api.FormLimit(limiter, limits, cfg.Proxies, log), Log: log, Clock: clock,
		TestCases: cases, Planner: plans, Trackers: trackers})
	a.API = api.New(api.Deps{
		Identity:       ids,
		Executions:     execs,
		Billing:        bill,
		TestCases:      cases,
		Analyst:        analyses,
		Trackers:       trackers,
		Follow:         followers,
		Planner:        plans,
		Reports:        reports,
		Signer:         signer,
		SecureCookies:  strings.HasPrefix(cfg.PublicURL, "https://"),
		PublicURL:      cfg.PublicURL,
		ReportsURL:     cfg.ReportsURL,
		Mounts:         map[string]http.Handler{"/socket.io/": hub.Handler(), peerhttp.Prefix: a.remote},
		Runners:        runnerList{srv: a.remote, store: st},
		Pages:          pages,
		JWT:            jwt,
		Limiter:        limiter,
		RateLimits:     limits,
		Proxies:        cfg.Proxies,
		Ready:          a.readiness(),
		Metrics:        a.metrics,
		MetricsHandler: a.metrics.Handler(cfg.MetricsToken),
		Outage:         away,
		BodyTimeout:    cfg.BodyTimeout,
		Log:            log,
		Clock:          clock,
		Version:        o.Version,
	})
	ok = true
	return a, nil
}

// modelsConfig points the model providers' clients where the configuration says.
func modelsConfig(cfg *config.Config) models.Config {
	base := map[models.Provider]string{}
	for p, u := range map[models.Provider]string{models.OpenAI: cfg.OpenAIBaseURL, models.Gemini: cfg.GeminiBaseURL,
		models.Anthropic: cfg.AnthropicBaseURL} {
		if u != "" {
			base[p] = u
		}
	}
	return models.Config{BaseURL: base}
}

func (a *App) readiness() []api.Checker {
	checks := []api.Checker{{Name: "database", Check: a.Store.Ping},
		{Name: engines.Name(a.backend), Check: a.backend.Ping, Optional: true}}
	if a.redis != nil {
		// Optional: while Redis is away the limits count in memory and requests are served, so
		// a load balancer must not take every replica out for it.
		checks = append(checks, api.Checker{Name: "redis", Check: func(ctx context.Context) error { return a.redis.Ping(ctx).Err() }, Optional: true})
	}
	if a.reportCheck != nil {
		checks = append(checks, *a.reportCheck)
	}
	return checks
}

func (a *App) Close() {
	for i := len(a.closers) - 1; i >= 0; i-- {
		a.closers[i]()
	}
}

// Run runs the background workers until ctx ends: the mail sender, the lease reaper and, when
// embedded, the runner (after settling what an earlier life of it left behind).
func (a *App) Run(ctx context.Context) {
	var wg sync.WaitGroup
	start := func(f func(context.Context)) {
		wg.Add(1)
		go func() { defer wg.Done(); f(ctx) }()
	}
	start(a.mailer.Run)
	start(a.reaper.Run)
	if a.runner != nil {
		if err := a.backend.Ping(ctx); err != nil {
			a.log.Error("the run backend does not answer: runs stay queued until it does", "backend", engines.Name(a.backend), "err", err)
		} else if err := engines.Prepare(ctx, a.backend); err != nil {
			a.log.Error("the run network is not ready: runs cannot start until it is", "err", err)
		}
		start(func(ctx context.Context) {
			if err := control.Reconcile(ctx, a.Store, a.backend, a.runner.ID, a.runner.Clock, a.events, a.log); err != nil {
				a.log.Warn("reconciling containers at start failed", "err", err)
			}
			a.runner.Run(ctx)
		})
		start(func(ctx context.Context) {
			control.SweepContainersEvery(ctx, a.Store, a.backend, a.runner.ID, a.log, time.Minute)
		})
	}
	wg.Wait()
}

// CloseRealtime ends the Socket.IO sessions and the SSE streams of runs; call it before
// http.Server.Shutdown, which would otherwise wait for open long-polls and streams.
func (a *App) CloseRealtime() {
	_ = a.hub.Close()
	a.Follow.Close()
}

// Runner is the embedded runner, nil when VERDICT_RUNNER=none.
func (a *App) Runner() *run.Runner { return a.runner }

// planTimeouts keys the configured timeout caps by plan.
func planTimeouts(byName map[string]time.Duration) map[domain.Plan]time.Duration {
	m := make(map[domain.Plan]time.Duration, len(byName))
	for name, d := range byName {
		m[domain.Plan(name)] = d
	}
	return m
}

// rateLimits is the API's default buckets with the configured overrides applied.
func rateLimits(overrides map[string]config.RateLimit) (api.RateLimits, error) {
	limits := api.DefaultRateLimits()
	for name, o := range overrides {
		rule, ok := limits[name]
		if !ok {
			return nil, fmt.Errorf("VERDICT_RATE_LIMITS: no rate limit named %q", name)
		}
		rule.Limit, rule.Window = o.Limit, o.Window
		limits[name] = rule
	}
	return limits, nil
}

// deriveKey derives a purpose-bound key from a secret.
func deriveKey(secret, purpose string) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(purpose))
	return m.Sum(nil)
}
