// Package ratelimit has the API's rate limiter and the fixed-window counters of the login
// lockout, each with a twin in memory (one replica) and one in Redis (shared by replicas).
//
// The Limiter is GCRA: in Redis, redis_rate's script on Redis's clock; in memory, the same
// algorithm on an injected domain.Clock. A Store counts hits in fixed windows (failures within
// 15 minutes is a count, not a rate); both stores read time from an injected domain.Clock, so
// tests move through windows without sleeping and the two behave identically.
package ratelimit

import (
	"context"
	"fmt"
	"time"
)

// Counter is the state of one key: N hits so far in the window that ends at ResetAt.
// The zero Counter means no live window.
type Counter struct {
	N       int
	ResetAt time.Time
}

// Store keeps fixed-window counters. A window starts at a key's first hit and lasts exactly
// `window`; the next hit at or after its end starts a new window at 1. Implementations must be
// safe for concurrent use and agree to the millisecond.
type Store interface {
	// Hit adds one to key's counter and returns it.
	Hit(ctx context.Context, key string, window time.Duration) (Counter, error)
	// Get returns key's counter without adding to it; zero when absent or expired.
	Get(ctx context.Context, key string) (Counter, error)
	// Reset forgets key.
	Reset(ctx context.Context, key string) error
}

// Both stores work in whole Unix milliseconds: Redis scripts see numbers, not time.Time, and
// sharing the unit keeps the memory store's answers identical to Redis's.

func checkWindow(window time.Duration) error {
	if window < time.Millisecond {
		return fmt.Errorf("ratelimit: window %v is shorter than 1ms", window)
	}
	return nil
}

func fromMillis(ms int64) time.Time { return time.UnixMilli(ms).UTC() }
