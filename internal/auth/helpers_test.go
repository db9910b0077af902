package auth

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"verdict/internal/domain"
	"verdict/internal/ratelimit"
	"verdict/internal/testenv"
)

func newTestClock() *testenv.Clock {
	return testenv.NewClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
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
