package ratelimit

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"verdict/internal/domain"
	"verdict/internal/testenv"
)

// TestFallbackDuringRedisOutage: with Redis killed, the limiter and the lockout counters keep
// answering without an error, counting in memory (so a limit still holds: the fourth of 3 a
// minute is refused), Redis is not asked again before CoolOff, the outage is logged once when
// it starts and once when it ends, and once Redis is back the shared count resumes there.
func TestFallbackDuringRedisOutage(t *testing.T) {
	own := testenv.StartOwnRedis(t)
	opts, err := redis.ParseURL(own.URL)
	if err != nil {
		t.Fatal(err)
	}
	client := redis.NewClient(opts)
	defer client.Close()
	var logged bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logged, nil))
	l := NewRedisLimiter(client, "t:", domain.SystemClock).WithFallback(log)
	counters := StoreWithFallback(NewRedisStore(client, "t:", domain.SystemClock), domain.SystemClock, log)
	ctx := context.Background()
	allow := func(what string, want bool) {
		t.Helper()
		d, err := l.Allow(ctx, "k", 3, time.Minute)
		if err != nil || d.Allowed != want {
			t.Fatalf("%s: allowed %v err %v, want allowed %v", what, d.Allowed, err, want)
		}
	}
	allow("first, in Redis", true)
	if c, err := counters.Hit(ctx, "fails", time.Minute); err != nil || c.N != 1 {
		t.Fatalf("hit in Redis: %+v %v", c, err)
	}

	own.Stop()
	start := time.Now()
	for i := 0; i < 3; i++ {
		allow("during the outage", true)
	}
	allow("past the limit during the outage", false)
	if elapsed := time.Since(start); elapsed > CoolOff {
		t.Errorf("4 decisions took %s: Redis was asked again within the cool-off", elapsed)
	}
	if c, err := counters.Hit(ctx, "fails", time.Minute); err != nil || c.N != 1 {
		t.Fatalf("hit during the outage (a fresh count in memory): %+v %v", c, err)
	}
	if c, err := counters.Get(ctx, "fails"); err != nil || c.N != 1 {
		t.Fatalf("get during the outage: %+v %v", c, err)
	}
	if n := strings.Count(logged.String(), "Redis unavailable"); n != 2 { // once for each twin
		t.Fatalf("outage logged %d times:\n%s", n, logged.String())
	}

	own.Start()
	time.Sleep(CoolOff + 100*time.Millisecond)
	for i := 0; i < 3; i++ { // the restarted Redis starts empty
		allow("after the outage, in Redis again", true)
	}
	allow("past the limit in Redis", false)
	if v, err := client.Exists(ctx, "rate:t:k").Result(); err != nil || v != 1 {
		t.Fatalf("the count is not back in Redis: %v %v", v, err)
	}
	if c, err := counters.Hit(ctx, "fails", time.Minute); err != nil || c.N != 1 {
		t.Fatalf("hit after the outage (Redis started empty): %+v %v", c, err)
	}
	if n := strings.Count(logged.String(), "Redis is back"); n != 2 {
		t.Fatalf("recovery logged %d times:\n%s", n, logged.String())
	}
}
