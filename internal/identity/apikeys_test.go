package identity

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Of the requests that find a key's lastUsedAt stale together, one writes it; the next write
// comes a keyTouchInterval later.
func TestClaimKeyTouchOncePerInterval(t *testing.T) {
	s := &Service{}
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	claims := func(at time.Time) int64 {
		var n atomic.Int64
		var wg sync.WaitGroup
		for range 64 {
			wg.Go(func() {
				if s.claimKeyTouch("k1", at) {
					n.Add(1)
				}
			})
		}
		wg.Wait()
		return n.Load()
	}
	for _, c := range []struct {
		at   time.Time
		want int64
	}{{now, 1}, {now.Add(keyTouchInterval - time.Millisecond), 0}, {now.Add(keyTouchInterval), 1}} {
		if got := claims(c.at); got != c.want {
			t.Errorf("at %s: %d writers, want %d", c.at.Sub(now), got, c.want)
		}
	}
	if !s.claimKeyTouch("k2", now) {
		t.Error("another key shares the first one's interval")
	}
}
