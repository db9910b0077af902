// Package app assembles Verdict from its configuration: the store, limits, mail, services, the
// API and the background workers. `verdict serve` and the end-to-end tests build it the same way.
package app

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"verdict/internal/ai/models"
	"verdict/internal/ai/providers"
	"verdict/internal/analysis"
	"verdict/internal/api"
	"verdict/internal/auth"
	"verdict/internal/billing"
	"verdict/internal/config"
	"verdict/internal/control"
	"verdict/internal/crypto/secretbox"
	"verdict/internal/custody"
	"verdict/internal/domain"
	"verdict/internal/egress"
	"verdict/internal/executions"
	"verdict/internal/follow"
	"verdict/internal/history"
	"verdict/internal/identity"
	"verdict/internal/integrations"
	"verdict/internal/mail"
	"verdict/internal/metrics"
	"verdict/internal/notify"
	"verdict/internal/peerhttp"
	"verdict/internal/planning"
	"verdict/internal/ratelimit"
	"verdict/internal/realtime"
	"verdict/internal/report"
	"verdict/internal/retention"
	"verdict/internal/run"
	"verdict/internal/run/engines"
	"verdict/internal/schedules"
	"verdict/internal/scm"
	"verdict/internal/sso"
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
	steps   []control.Step // the post-run steps
	runner  *run.Runner
	remote  *peerhttp.Server // the runner routes (/api/runner/): answer 404 without VERDICT_RUNNER_SECRET
	reaper  *control.Reaper
	mailer  *mail.Worker
	// histories record finished runs' results (and catch up with those not recorded).
	histories *history.Service
	metrics   *metrics.Metrics
	// reportCheck is the report bucket's readiness check (nil: reports in the data folder).
	reportCheck *api.Checker
	closers     []func()

	// retention deletes the history past each organization's retention.
	retention *retention.Job
	// eraser erases the organizations whose erasure is due.
	eraser *custody.Eraser
	// schedules fires projects' schedules (its worker runs on every replica).
	schedules *schedules.Service
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
	// RetentionInterval paces the retention job in tests (0: VERDICT_RETENTION_INTERVAL).
	RetentionInterval time.Duration
	// EraseInterval paces the erase job in tests (0: VERDICT_ERASE_INTERVAL).
	EraseInterval time.Duration
	// ScheduleClock is the schedules' clock in tests, which may run ahead of the rest (nil:
	// Clock); ScheduleInterval their poll (0: the default).
	ScheduleClock    domain.Clock
	ScheduleInterval time.Duration
}

// New wires every part from the configuration and applies pending migrations. It builds them
// by concern, in the order of their needs (each step in the file of its concern): the stores,
// mail, the keys and the report store, billing, the live fan-outs, the run plane, the services,
// and the front doors (the dashboard and the API). What a step builds, the later ones take from
// the wiring.
func New(ctx context.Context, cfg *config.Config, log *slog.Logger, o Options) (*App, error) {
	if o.Clock == nil {
		o.Clock = domain.SystemClock
	}
	if o.MailConsole == nil {
		o.MailConsole = os.Stderr
	}
	w := &wiring{cfg: cfg, o: o, log: log, clock: o.Clock, a: &App{log: log}}
	ok := false
	defer func() {
		if !ok {
			w.a.Close()
		}
	}()
	for _, step := range []func(context.Context) error{w.stores, w.mail, w.keys, w.billing, w.live, w.runPlane,
		w.services, w.schedules, w.frontDoors, w.retention} {
		if err := step(ctx); err != nil {
			return nil, err
		}
	}
	ok = true
	return w.a, nil
}

// wiring is what New has built so far, handed from one concern's step to the next.
type wiring struct {
	cfg   *config.Config
	o     Options
	log   *slog.Logger
	clock domain.Clock
	a     *App

	st       *sqlstore.Store    // stores
	counters ratelimit.Store    // the login lockout's
	limiter  *ratelimit.Limiter // the API's and the sockets' rate limits
	limits   api.RateLimits     // their buckets
	jwt      *auth.Tokens

	renderer *mail.Renderer // mail

	box         *secretbox.Box // keys and reports
	egress      *egress.Guard  // the check of tenants' outgoing URLs
	reportStore reportStore
	reports     report.Store
	signer      *report.Signer

	alerts *billing.Alerts // billing
	bill   *billing.Service

	tickets   *web.SocketTickets // live
	hub       *realtime.Hub
	followers *follow.Broadcaster
	events    hubEvents

	modelClient *providers.Client // run plane
	analyses    *analysis.Service
	execs       *executions.Service

	ids      *identity.Service // services; the hub's authenticator reads it once set
	sso      *sso.Service      // organizations' OpenID Connect sign-in
	trackers *integrations.Service
	cases    *testcases.Service
	plans    *planning.Service
	// reportURL links a run's report as the execution view does.
	reportURL func(ctx context.Context, e *domain.Execution) string
	// scm is the source-control service (run plane: its post-run step and queued hook).
	scm    *scm.Service
	notify *notify.Service // run plane: a post-run step, and the notifications' routes
	// endUser ends a member's sockets and event streams on every replica (services).
	endUser func(userID string)
}

// redisPrefix namespaces this App's Redis keys and channels: Options.RedisPrefix, or "verdict:".
func (w *wiring) redisPrefix() string {
	if w.o.RedisPrefix == "" {
		return "verdict:"
	}
	return w.o.RedisPrefix
}

// modelsConfig points the model providers' clients where the configuration says.
func modelsConfig(cfg config.AI) providers.Config {
	base := map[models.Provider]string{}
	for p, u := range map[models.Provider]string{models.OpenAI: cfg.OpenAIBaseURL, models.Gemini: cfg.GeminiBaseURL,
		models.Anthropic: cfg.AnthropicBaseURL} {
		if u != "" {
			base[p] = u
		}
	}
	return providers.Config{BaseURL: base}
}

func (a *App) readiness() []api.Checker {
	checks := []api.Checker{{Name: "database", Check: a.Store.Ping}}
	if a.backend != nil {
		checks = append(checks, api.Checker{Name: a.backend.Name(), Check: a.backend.Ping, Optional: true})
	}
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

// historyCatchUp is how often the tests' histories catch up with finished runs not recorded.
const historyCatchUp = time.Minute

// Run runs the background workers until ctx ends: the mail sender, the lease reaper, the tests'
// histories' catch-up, the retention job, the erase job and, when embedded, the runner (after settling what an
// earlier life of it left behind).
func (a *App) Run(ctx context.Context) {
	var wg sync.WaitGroup
	start := func(f func(context.Context)) {
		wg.Add(1)
		go func() { defer wg.Done(); f(ctx) }()
	}
	start(a.mailer.Run)
	start(a.reaper.Run)
	start(func(ctx context.Context) { a.histories.Run(ctx, historyCatchUp) })
	start(a.retention.Run)
	start(a.eraser.Run)
	start(a.schedules.Run)
	if a.runner != nil {
		if err := a.backend.Ping(ctx); err != nil {
			a.log.Error("the run backend does not answer: runs stay queued until it does", "backend", a.backend.Name(), "err", err)
		} else if err := engines.Prepare(ctx, a.backend); err != nil {
			a.log.Error("the run network is not ready: runs cannot start until it is", "err", err)
		}
		start(func(ctx context.Context) {
			if err := control.Reconcile(ctx, a.Store, a.backend, a.runner.ID, a.runner.Clock, a.steps, a.log); err != nil {
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

// CatchUpHistories records the finished runs whose tests' histories are not recorded yet, as
// the background catch-up does every minute; it returns how many it recorded.
func (a *App) CatchUpHistories(ctx context.Context) (int, error) { return a.histories.CatchUp(ctx) }

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

// planShards is the shards' caps by plan, from their names.
func planShards(byName map[string]int) map[domain.Plan]int {
	m := make(map[domain.Plan]int, len(byName))
	for name, n := range byName {
		m[domain.Plan(name)] = n
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
