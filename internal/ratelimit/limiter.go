package ratelimit

import (
	"context"
	"fmt"
	"time"

	"verdict/internal/domain"
)

// Decision is the answer for one request, with what the X-RateLimit-* headers need.
type Decision struct {
	Allowed    bool
	Limit      int
	Remaining  int
	ResetAt    time.Time
	RetryAfter time.Duration // zero when allowed
}

// Limiter allows `limit` requests per key per fixed window.
type Limiter struct {
	store Store
	clock domain.Clock
}

// NewLimiter returns a limiter over store; clock must be the store's clock.
func NewLimiter(store Store, clock domain.Clock) *Limiter {
	return &Limiter{store: store, clock: clock}
}

// Allow counts one request for key. Denied requests are counted too; that cannot lengthen the
// window, which is fixed from its first hit.
func (l *Limiter) Allow(ctx context.Context, key string, limit int, window time.Duration) (Decision, error) {
	if limit < 1 {
		return Decision{}, fmt.Errorf("ratelimit: limit %d is not positive", limit)
	}
	c, err := l.store.Hit(ctx, key, window)
	if err != nil {
		return Decision{}, err
	}
	d := Decision{Allowed: c.N <= limit, Limit: limit, Remaining: max(limit-c.N, 0), ResetAt: c.ResetAt}
	if !d.Allowed {
		d.RetryAfter = max(c.ResetAt.Sub(l.clock()), 0)
	}
	return d, nil
}
