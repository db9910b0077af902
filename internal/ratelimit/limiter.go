package ratelimit

import (
	"context"
	"fmt"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"verdict/internal/domain"
)

// Decision is the answer for one request, with what the X-RateLimit-* headers need.
type Decision struct {
	Allowed bool
	// Limit is the bucket's size: the requests a full bucket allows at once.
	Limit int
	// Remaining is the requests allowed right now, after this one.
	Remaining int
	// ResetAt is when the bucket is full again (Remaining back at Limit) if no request comes.
	ResetAt time.Time
	// RetryAfter is, for a refused request, the time until the next request is allowed; zero
	// when allowed.
	RetryAfter time.Duration
}

// Limiter allows `limit` requests per `period` for each key by GCRA (the generic cell rate
// algorithm): a full bucket allows `limit` requests at once, and one more is allowed every
// period/limit after that, so no span of one period lets through more than `limit` plus what
// was refilled within it (no doubled burst at a window's edge). A refused request uses nothing.
type Limiter struct {
	gcra  gcra
	clock domain.Clock
}

// gcra is one twin of the algorithm. now is the limiter's clock; a twin that keeps time
// elsewhere (Redis) ignores it. The durations are relative to the twin's own now.
type gcra interface {
	allow(ctx context.Context, now time.Time, key string, limit int, period time.Duration) (gcraResult, error)
}

type gcraResult struct {
	allowed    bool
	remaining  int
	retryAfter time.Duration // refused: until the next request is allowed
	resetAfter time.Duration // until the bucket is full again
}

// NewMemoryLimiter returns the single-replica limiter, reading time from clock.
func NewMemoryLimiter(clock domain.Clock) *Limiter {
	return &Limiter{gcra: newMemoryGCRA(), clock: clock}
}

// NewRedisLimiter returns the limiter shared by replicas: redis_rate's GCRA script on client,
// keys under "rate:" + prefix (redis_rate adds "rate:"). Redis's own clock decides, so replicas
// whose clocks disagree still share one bucket; clock only dates ResetAt.
func NewRedisLimiter(client redis.UniversalClient, prefix string, clock domain.Clock) *Limiter {
	return &Limiter{gcra: redisGCRA{limiter: redis_rate.NewLimiter(client), prefix: prefix}, clock: clock}
}

// Allow takes one request from key's bucket of `limit` requests per `period`.
func (l *Limiter) Allow(ctx context.Context, key string, limit int, period time.Duration) (Decision, error) {
	if err := checkLimit(limit, period); err != nil {
		return Decision{}, err
	}
	now := l.clock()
	r, err := l.gcra.allow(ctx, now, key, limit, period)
	if err != nil {
		return Decision{}, err
	}
	d := Decision{Allowed: r.allowed, Limit: limit, Remaining: r.remaining, ResetAt: now.Add(r.resetAfter)}
	if !r.allowed {
		d.RetryAfter = r.retryAfter
	}
	return d, nil
}

func checkLimit(limit int, period time.Duration) error {
	if limit < 1 || period <= 0 {
		return fmt.Errorf("ratelimit: %d per %v is not a rate", limit, period)
	}
	return nil
}

type redisGCRA struct {
	limiter *redis_rate.Limiter
	prefix  string
}

// allow costs one round trip (EVALSHA, or EVAL once after a Redis restart flushed the script).
func (g redisGCRA) allow(ctx context.Context, _ time.Time, key string, limit int, period time.Duration) (gcraResult, error) {
	res, err := g.limiter.Allow(ctx, g.prefix+key, redis_rate.Limit{Rate: limit, Burst: limit, Period: period})
	if err != nil {
		return gcraResult{}, fmt.Errorf("ratelimit: redis: %w", err)
	}
	r := gcraResult{allowed: res.Allowed > 0, retryAfter: max(res.RetryAfter, 0), resetAfter: max(res.ResetAfter, 0)}
	if r.allowed {
		// The script truncates a float that rounding can leave a hair under a whole number
		// (3.9999999, so 3, for the first of 5 per 1.5 s); the same count from ResetAfter with a
		// microsecond (Redis's clock's resolution) of slack is right.
		full := float64(period-r.resetAfter+time.Microsecond) / float64(period) * float64(limit)
		r.remaining = min(max(int(full), res.Remaining), limit-1)
	}
	return r, nil
}
