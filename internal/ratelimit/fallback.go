package ratelimit

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"verdict/internal/domain"
)

// CoolOff is how long the memory twin answers alone after Redis failed, before Redis is
// tried again: a Redis outage costs one failed round trip per CoolOff, not one per request.
const CoolOff = 2 * time.Second

// breaker follows one Redis-backed twin's health: while it is open (Redis failed less than
// CoolOff ago) calls go to the memory twin. The outage is logged when it starts and when it
// ends, not per request.
type breaker struct {
	what string // "rate limiter", "login lockout counters": for the log
	log  *slog.Logger

	mu      sync.Mutex
	retryAt time.Time // zero: closed (Redis is used)
	since   time.Time
	served  int // calls the memory twin answered during this outage
}

// useMemory reports whether the call should skip Redis.
func (b *breaker) useMemory() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.retryAt.IsZero() && time.Now().Before(b.retryAt) {
		b.served++
		return true
	}
	return false
}

// failed opens the breaker after err from Redis.
func (b *breaker) failed(err error) {
	b.mu.Lock()
	now := time.Now()
	first := b.since.IsZero()
	if first {
		b.since = now
	}
	b.retryAt = now.Add(CoolOff)
	b.served++
	b.mu.Unlock()
	if first {
		b.log.Warn("Redis unavailable: counting in this replica's memory until it is back", "counters", b.what, "err", err)
	}
}

// succeeded closes the breaker after Redis answered.
func (b *breaker) succeeded() {
	b.mu.Lock()
	if b.since.IsZero() {
		b.mu.Unlock()
		return
	}
	since, served := b.since, b.served
	b.since, b.retryAt, b.served = time.Time{}, time.Time{}, 0
	b.mu.Unlock()
	b.log.Info("Redis is back: counting there again", "counters", b.what,
		"awayFor", time.Since(since).Round(time.Second).String(), "countedInMemory", served)
}

func newBreaker(what string, log *slog.Logger) *breaker {
	if log == nil {
		log = slog.Default()
	}
	return &breaker{what: what, log: log}
}

// WithFallback returns l answering from a memory twin, in this replica alone, while its
// Redis is unavailable, instead of failing every request: limits still hold during a Redis
// outage (each replica counting its own requests), and the shared count resumes when Redis
// is back. A memory limiter is returned as it is.
func (l *Limiter) WithFallback(log *slog.Logger) *Limiter {
	if _, ok := l.gcra.(redisGCRA); !ok {
		return l
	}
	return &Limiter{gcra: &fallbackGCRA{redis: l.gcra, memory: newMemoryGCRA(), b: newBreaker("rate limiter", log)}, clock: l.clock}
}

type fallbackGCRA struct {
	redis, memory gcra
	b             *breaker
}

func (f *fallbackGCRA) allow(ctx context.Context, now time.Time, key string, limit int, period time.Duration) (gcraResult, error) {
	if !f.b.useMemory() {
		r, err := f.redis.allow(ctx, now, key, limit, period)
		if err == nil || ctx.Err() != nil {
			if err == nil {
				f.b.succeeded()
			}
			return r, err
		}
		f.b.failed(err)
	}
	return f.memory.allow(ctx, now, key, limit, period)
}

// StoreWithFallback returns primary (a RedisStore) answering from a memory store while Redis
// is unavailable, as Limiter.WithFallback does: the login lockout keeps counting failures,
// per replica, during a Redis outage instead of failing every sign-in.
func StoreWithFallback(primary Store, clock domain.Clock, log *slog.Logger) Store {
	return &fallbackStore{redis: primary, memory: NewMemoryStore(clock), b: newBreaker("login lockout counters", log)}
}

type fallbackStore struct {
	redis, memory Store
	b             *breaker
}

// call runs op on Redis unless it is away, else (or when it fails now) on memory.
func call[T any](ctx context.Context, f *fallbackStore, op func(Store) (T, error)) (T, error) {
	if !f.b.useMemory() {
		v, err := op(f.redis)
		if err == nil || ctx.Err() != nil {
			if err == nil {
				f.b.succeeded()
			}
			return v, err
		}
		f.b.failed(err)
	}
	return op(f.memory)
}

func (f *fallbackStore) Hit(ctx context.Context, key string, window time.Duration) (Counter, error) {
	return call(ctx, f, func(s Store) (Counter, error) { return s.Hit(ctx, key, window) })
}

func (f *fallbackStore) Get(ctx context.Context, key string) (Counter, error) {
	return call(ctx, f, func(s Store) (Counter, error) { return s.Get(ctx, key) })
}

func (f *fallbackStore) Reset(ctx context.Context, key string) error {
	_, err := call(ctx, f, func(s Store) (struct{}, error) { return struct{}{}, s.Reset(ctx, key) })
	return err
}
