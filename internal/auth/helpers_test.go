package auth

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"verdict/internal/domain"
	"verdict/internal/ratelimit"
	"verdict/internal/testenv"
)

// testClock is a domain.Clock that moves only when told.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func newTestClock() *testClock {
	return &testClock{now: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)}
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// counterStores builds each ratelimit.Store the lockout runs on; Redis keys are removed when
// the test ends.
func counterStores() map[string]func(t *testing.T, clock domain.Clock) ratelimit.Store {
	return map[string]func(t *testing.T, clock domain.Clock) ratelimit.Store{
		"memory": func(t *testing.T, clock domain.Clock) ratelimit.Store { return ratelimit.NewMemoryStore(clock) },
		"redis": func(t *testing.T, clock domain.Clock) ratelimit.Store {
			opts, err := redis.ParseURL(testenv.RedisURL(t))
			if err != nil {
				t.Fatal(err)
			}
			c := redis.NewClient(opts)
			prefix := testenv.KeyPrefix(t)
			t.Cleanup(func() {
				ctx := context.Background()
				iter := c.Scan(ctx, 0, prefix+"*", 100).Iterator()
				for iter.Next(ctx) {
					c.Del(ctx, iter.Val())
				}
				c.Close()
			})
			return ratelimit.NewRedisStore(c, prefix, clock)
		},
	}
}
