package app

import (
	"context"
	"fmt"
	"os"

	"github.com/redis/go-redis/v9"

	"verdict/internal/auth"
	"verdict/internal/crypto/secretbox"
	"verdict/internal/egress"
	"verdict/internal/ratelimit"
	"verdict/internal/report"
	"verdict/internal/store/sqlstore"
)

// stores opens what keeps state: the data folder, the database (migrated), Redis with the rate
// limits' and the lockout's counters, and the session tokens.
func (w *wiring) stores(ctx context.Context) error {
	cfg, clock, log, a := w.cfg, w.clock, w.log, w.a
	// The data folder (database, reports, development secrets) is the service's alone.
	if err := os.MkdirAll(cfg.Server.DataDir, 0o700); err != nil {
		return fmt.Errorf("data folder: %w", err)
	}
	if err := os.Chmod(cfg.Server.DataDir, 0o700); err != nil {
		return fmt.Errorf("data folder: %w", err)
	}
	st, err := sqlstore.Open(ctx, cfg.Database.URL, cfg.Server.DataDir)
	if err != nil {
		return fmt.Errorf("database: %w", err)
	}
	a.Store = st
	w.st = st
	a.closers = append(a.closers, func() { st.Close() })
	if err := st.Migrate(ctx); err != nil {
		return fmt.Errorf("database migrations: %w", err)
	}

	// The lockout counts failures in fixed windows (counters); the API's rate limits are GCRA
	// (limiter). Both are shared through Redis when there is one, and count in this replica's
	// memory while Redis is away.
	if cfg.Database.RedisURL != "" {
		opts, err := redis.ParseURL(cfg.Database.RedisURL)
		if err != nil {
			return fmt.Errorf("REDIS_URL: %w", err)
		}
		a.redis = redis.NewClient(opts)
		a.closers = append(a.closers, func() { a.redis.Close() })
		if err := a.redis.Ping(ctx).Err(); err != nil {
			return fmt.Errorf("redis: %w", err)
		}
		prefix := w.redisPrefix()
		w.counters = ratelimit.StoreWithFallback(ratelimit.NewRedisStore(a.redis, prefix, clock), clock, log)
		w.limiter = ratelimit.NewRedisLimiter(a.redis, prefix, clock).WithFallback(log)
	} else {
		w.counters = ratelimit.NewMemoryStore(clock)
		w.limiter = ratelimit.NewMemoryLimiter(clock)
	}
	// The buckets the API, the dashboard's forms and the sockets count in: Options.RateLimits, or
	// the API's with the configured overrides.
	if w.limits = w.o.RateLimits; w.limits == nil {
		if w.limits, err = rateLimits(cfg.Limits.RateLimits); err != nil {
			return err
		}
	}

	w.jwt, err = auth.NewTokens([]byte(cfg.Secrets.JWTSecret), cfg.Secrets.JWTExpiry, clock)
	return err
}

// keys makes the secret boxes of values sealed at rest and the report links' signer, and opens
// the report store.
func (w *wiring) keys(ctx context.Context) error {
	cfg, st, a := w.cfg, w.st, w.a
	box, err := secretbox.New(cfg.Secrets.EncryptionKey)
	if err != nil {
		return fmt.Errorf("ENCRYPTION_KEY: %w", err)
	}
	w.box = box
	// Tenants' URLs (webhooks, chat hooks, their own GitHub or Jira) reach no internal address
	// but those the operator allows.
	if w.egress, err = egress.New(cfg.Integrations.EgressAllow); err != nil {
		return fmt.Errorf("VERDICT_EGRESS_ALLOW: %w", err)
	}
	// Mail bodies (invitation links) are sealed at rest with a key of their own, so no other
	// sealed value copied into the outbox would be opened and mailed.
	mailBox, err := secretbox.New(deriveKey(string(cfg.Secrets.EncryptionKey), "verdict mail outbox"))
	if err != nil {
		return err
	}
	st.SealOutbox(mailBox)
	reportStore, err := newReportStore(ctx, cfg.Reports, cfg.Server.DataDir)
	if err != nil {
		return fmt.Errorf("report store: %w", err)
	}
	w.reportStore = reportStore
	w.reports = reportStore.Store
	a.reportCheck = reportStore.check
	// Report links are signed with a key derived from the JWT secret, so one secret to manage.
	w.signer, err = report.NewSigner(deriveKey(cfg.Secrets.JWTSecret, "verdict report links"))
	return err
}
