package ratelimit

import (
	"context"
	"sync"
	"time"

	"verdict/internal/domain"
)

// sweepEvery bounds how often the memory store scans for expired counters: often enough that
// keys seen once (one IP, one e-mail) do not pile up, rarely enough that the scan stays cheap.
const sweepEvery = time.Minute

// MemoryStore is the single-replica Store.
type MemoryStore struct {
	clock     domain.Clock
	mu        sync.Mutex
	entries   map[string]memEntry
	nextSweep int64 // Unix ms
}

type memEntry struct {
	n       int
	resetAt int64 // Unix ms; the window is over when resetAt <= now
}

// NewMemoryStore returns an empty store reading time from clock.
func NewMemoryStore(clock domain.Clock) *MemoryStore {
	return &MemoryStore{clock: clock, entries: make(map[string]memEntry)}
}

func (s *MemoryStore) Hit(_ context.Context, key string, window time.Duration) (Counter, error) {
	if err := checkWindow(window); err != nil {
		return Counter{}, err
	}
	now := s.clock().UnixMilli()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweep(now)
	e, ok := s.entries[key]
	if !ok || e.resetAt <= now {
		e = memEntry{resetAt: now + window.Milliseconds()}
	}
	e.n++
	s.entries[key] = e
	return Counter{N: e.n, ResetAt: fromMillis(e.resetAt)}, nil
}

func (s *MemoryStore) Get(_ context.Context, key string) (Counter, error) {
	now := s.clock().UnixMilli()
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[key]
	if !ok || e.resetAt <= now {
		return Counter{}, nil
	}
	return Counter{N: e.n, ResetAt: fromMillis(e.resetAt)}, nil
}

func (s *MemoryStore) Reset(_ context.Context, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.entries, key)
	return nil
}

// sweep drops expired counters, at most once per sweepEvery; the caller holds mu.
func (s *MemoryStore) sweep(now int64) {
	if now < s.nextSweep {
		return
	}
	for k, e := range s.entries {
		if e.resetAt <= now {
			delete(s.entries, k)
		}
	}
	s.nextSweep = now + sweepEvery.Milliseconds()
}
