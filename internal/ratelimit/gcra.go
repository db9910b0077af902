package ratelimit

import (
	"context"
	"sync"
	"time"
)

// memoryGCRA is redis_rate's GCRA script (allowN, cost 1) in Go on the limiter's clock, so a
// single replica and the tests behave as Redis does. It keeps, per key, the theoretical arrival
// time (TAT): when the bucket would be full again. Time is in integer nanoseconds, so the
// answers are exact where Redis's floating-point seconds are within a microsecond.
type memoryGCRA struct {
	mu        sync.Mutex
	tat       map[string]int64 // Unix ns; a TAT <= now is a full bucket, the same as none
	nextSweep int64            // Unix ns
}

func newMemoryGCRA() *memoryGCRA { return &memoryGCRA{tat: make(map[string]int64)} }

func (g *memoryGCRA) allow(_ context.Context, at time.Time, key string, limit int, period time.Duration) (gcraResult, error) {
	now := at.UnixNano()
	// A limit of more than one request a nanosecond (a bucket set out of the way, as tests and
	// load tests do) is counted as one a nanosecond: still more than anyone can send.
	emission := max(int64(period)/int64(limit), 1)
	burstOffset := emission * int64(limit)
	g.mu.Lock()
	defer g.mu.Unlock()
	g.sweep(now)
	tat := max(g.tat[key], now)
	newTAT := tat + emission
	diff := now - (newTAT - burstOffset)
	if diff < 0 {
		return gcraResult{retryAfter: time.Duration(-diff), resetAfter: time.Duration(tat - now)}, nil
	}
	g.tat[key] = newTAT
	return gcraResult{allowed: true, remaining: int(diff / emission), resetAfter: time.Duration(newTAT - now)}, nil
}

// sweep drops full buckets, at most once per sweepEvery, so keys seen once (one IP) do not pile
// up; the caller holds mu.
func (g *memoryGCRA) sweep(now int64) {
	if now < g.nextSweep {
		return
	}
	for k, tat := range g.tat {
		if tat <= now {
			delete(g.tat, k)
		}
	}
	g.nextSweep = now + int64(sweepEvery)
}
