// Package app assembles Verdict from its configuration: the store, limits, mail, services, the
// API and the background workers. `verdict serve` and the end-to-end tests build it the same way.
package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"

	"github.com/redis/go-redis/v9"

	"verdict/internal/api"
	"verdict/internal/auth"
	"verdict/internal/config"
	"verdict/internal/domain"
	"verdict/internal/identity"
	"verdict/internal/mail"
	"verdict/internal/ratelimit"
	"verdict/internal/store/sqlstore"
)

// App is the assembled service.
type App struct {
	cfg     *config.Config
	log     *slog.Logger
	Store   *sqlstore.Store
	redis   *redis.Client
	API     *api.Server
	mailer  *mail.Worker
	closers []func()
}

// Options adjust an App for tests: a controlled clock, other rate limits.
type Options struct {
	Clock      domain.Clock
	RateLimits api.RateLimits
	// RedisPrefix namespaces this App's Redis keys (default "verdict:"); tests sharing one
	// Redis give each App its own.
	RedisPrefix string
	Version     string
}

// New wires every part from the configuration and applies pending migrations.
func New(ctx context.Context, cfg *config.Config, log *slog.Logger, o Options) (*App, error) {
	if o.Clock == nil {
		o.Clock = domain.SystemClock
	}
	clock := o.Clock
	a := &App{cfg: cfg, log: log}
	ok := false
	defer func() {
		if !ok {
			a.Close()
		}
	}()

	st, err := sqlstore.Open(ctx, cfg.DatabaseURL, cfg.DataDir)
	if err != nil {
		return nil, fmt.Errorf("database: %w", err)
	}
	a.Store = st
	a.closers = append(a.closers, func() { st.Close() })
	if err := st.Migrate(ctx); err != nil {
		return nil, fmt.Errorf("database migrations: %w", err)
	}

	var counters ratelimit.Store
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
		counters = ratelimit.NewRedisStore(a.redis, prefix, clock)
	} else {
		counters = ratelimit.NewMemoryStore(clock)
	}

	jwt, err := auth.NewTokens([]byte(cfg.JWTSecret), cfg.JWTExpiry, clock)
	if err != nil {
		return nil, err
	}

	sender, err := mail.NewSender(mail.SMTPConfig{Host: cfg.SMTPHost, Port: cfg.SMTPPort, Username: cfg.SMTPUsername,
		Password: cfg.SMTPPassword, From: cfg.SMTPFrom, TLS: cfg.SMTPTLS}, os.Stderr)
	if err != nil {
		return nil, fmt.Errorf("mail: %w", err)
	}
	renderer, err := mail.NewRenderer(cfg.PublicURL)
	if err != nil {
		return nil, fmt.Errorf("mail: %w", err)
	}
	a.mailer = &mail.Worker{Repo: st.Outbox(), Sender: sender, Clock: clock, Logger: log}

	ids := identity.New(identity.Deps{
		Store:   st,
		Tokens:  jwt,
		Lockout: auth.NewLockout(counters, clock),
		Mailer:  &identity.OutboxMailer{Renderer: renderer, Worker: a.mailer, Clock: clock},
		Clock:   clock,
		Log:     log,
	})

	a.API = api.New(api.Deps{
		Identity:   ids,
		JWT:        jwt,
		Limiter:    ratelimit.NewLimiter(counters, clock),
		RateLimits: o.RateLimits,
		Proxies:    cfg.Proxies,
		Ready:      a.readiness(),
		Log:        log,
		Clock:      clock,
		Version:    o.Version,
	})
	ok = true
	return a, nil
}

func (a *App) readiness() []api.Checker {
	checks := []api.Checker{{Name: "database", Check: a.Store.Ping}}
	if a.redis != nil {
		checks = append(checks, api.Checker{Name: "redis", Check: func(ctx context.Context) error { return a.redis.Ping(ctx).Err() }})
	}
	return checks
}

func (a *App) Close() {
	for i := len(a.closers) - 1; i >= 0; i-- {
		a.closers[i]()
	}
}

// Run runs the background workers until ctx ends.
func (a *App) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); a.mailer.Run(ctx) }()
	wg.Wait()
}
