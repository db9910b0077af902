package ratelimit

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"verdict/internal/domain"
	"verdict/internal/testenv"
)

func newTestClock() *testenv.Clock {
	return testenv.NewClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
}

// redisClient connects to the test Redis and, when the test ends, deletes every key under
// prefix (and under "rate:" + prefix, where redis_rate puts the limiter's).
func redisClient(t testing.TB, prefix string) *redis.Client {
	t.Helper()
	opts, err := redis.ParseURL(testenv.RedisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opts)
	t.Cleanup(func() {
		ctx := context.Background()
		for _, match := range []string{prefix + "*", "rate:" + prefix + "*"} {
			iter := c.Scan(ctx, 0, match, 100).Iterator()
			for iter.Next(ctx) {
				c.Del(ctx, iter.Val())
			}
		}
		c.Close()
	})
	return c
}

type storeFactory func(t testing.TB, clock domain.Clock) Store

func stores() map[string]storeFactory {
	return map[string]storeFactory{
		"memory": func(t testing.TB, clock domain.Clock) Store { return NewMemoryStore(clock) },
		"redis": func(t testing.TB, clock domain.Clock) Store {
			prefix := testenv.KeyPrefix(t)
			return NewRedisStore(redisClient(t, prefix), prefix, clock)
		},
	}
}

// TestStores runs one behavioural suite against every Store implementation.
func TestStores(t *testing.T) {
	for name, newStore := range stores() {
		t.Run(name, func(t *testing.T) {
			for _, tc := range storeSuite {
				t.Run(tc.name, func(t *testing.T) {
					clock := newTestClock()
					tc.run(t, newStore(t, clock.Now), clock)
				})
			}
		})
	}
}

var storeSuite = []struct {
	name string
	run  func(t *testing.T, s Store, clock *testenv.Clock)
}{
	{"window is fixed from the first hit", func(t *testing.T, s Store, clock *testenv.Clock) {
		ctx := context.Background()
		start := clock.Now()
		want := Counter{N: 1, ResetAt: start.Add(time.Minute)}
		if c := mustHit(t, s, "k", time.Minute); c != want {
			t.Fatalf("first hit = %+v, want %+v", c, want)
		}
		clock.Advance(30 * time.Second)
		want.N = 2
		if c := mustHit(t, s, "k", time.Minute); c != want {
			t.Fatalf("second hit = %+v, want %+v (window must not slide)", c, want)
		}
		clock.Advance(30*time.Second - time.Millisecond)
		if c, err := s.Get(ctx, "k"); err != nil || c != want {
			t.Fatalf("Get 1ms before the end = %+v, %v; want %+v", c, err, want)
		}
		want.N = 3
		if c := mustHit(t, s, "k", time.Minute); c != want {
			t.Fatalf("hit 1ms before the end = %+v, want %+v", c, want)
		}
	}},
	{"window end starts again at 1", func(t *testing.T, s Store, clock *testenv.Clock) {
		ctx := context.Background()
		for range 3 {
			mustHit(t, s, "k", time.Minute)
		}
		clock.Advance(time.Minute)
		if c, err := s.Get(ctx, "k"); err != nil || c != (Counter{}) {
			t.Fatalf("Get at the window end = %+v, %v; want zero", c, err)
		}
		want := Counter{N: 1, ResetAt: clock.Now().Add(time.Minute)}
		if c := mustHit(t, s, "k", time.Minute); c != want {
			t.Fatalf("hit at the window end = %+v, want %+v", c, want)
		}
	}},
	{"Get reads without adding", func(t *testing.T, s Store, clock *testenv.Clock) {
		ctx := context.Background()
		if c, err := s.Get(ctx, "absent"); err != nil || c != (Counter{}) {
			t.Fatalf("Get absent = %+v, %v; want zero", c, err)
		}
		mustHit(t, s, "k", time.Minute)
		for range 3 {
			if c, err := s.Get(ctx, "k"); err != nil || c.N != 1 {
				t.Fatalf("Get = %+v, %v; want N=1", c, err)
			}
		}
	}},
	{"Reset forgets the key", func(t *testing.T, s Store, clock *testenv.Clock) {
		ctx := context.Background()
		mustHit(t, s, "k", time.Minute)
		mustHit(t, s, "k", time.Minute)
		if err := s.Reset(ctx, "k"); err != nil {
			t.Fatal(err)
		}
		if c, err := s.Get(ctx, "k"); err != nil || c != (Counter{}) {
			t.Fatalf("Get after Reset = %+v, %v; want zero", c, err)
		}
		clock.Advance(time.Second)
		want := Counter{N: 1, ResetAt: clock.Now().Add(time.Minute)}
		if c := mustHit(t, s, "k", time.Minute); c != want {
			t.Fatalf("hit after Reset = %+v, want %+v", c, want)
		}
		if err := s.Reset(ctx, "never-hit"); err != nil {
			t.Fatalf("Reset of an absent key: %v", err)
		}
	}},
	{"keys are independent", func(t *testing.T, s Store, clock *testenv.Clock) {
		for range 3 {
			mustHit(t, s, "a", time.Minute)
		}
		clock.Advance(10 * time.Second)
		want := Counter{N: 1, ResetAt: clock.Now().Add(time.Hour)}
		if c := mustHit(t, s, "b", time.Hour); c != want {
			t.Fatalf("hit on b = %+v, want %+v", c, want)
		}
		if c, _ := s.Get(context.Background(), "a"); c.N != 3 {
			t.Fatalf("a = %+v, want N=3", c)
		}
	}},
	{"concurrent hits are counted once each", func(t *testing.T, s Store, clock *testenv.Clock) {
		const n = 50
		got := make([]int, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				c, err := s.Hit(context.Background(), "k", time.Minute)
				got[i], errs[i] = c.N, err
			})
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		slices.Sort(got)
		for i, n := range got {
			if n != i+1 {
				t.Fatalf("sorted counts = %v, want 1..%d each once", got, len(got))
			}
		}
	}},
	{"window shorter than 1ms is refused", func(t *testing.T, s Store, clock *testenv.Clock) {
		if _, err := s.Hit(context.Background(), "k", time.Microsecond); err == nil {
			t.Fatal("Hit with a 1µs window succeeded")
		}
	}},
}

func mustHit(t *testing.T, s Store, key string, window time.Duration) Counter {
	t.Helper()
	c, err := s.Hit(context.Background(), key, window)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestMemoryStoreDropsExpiredCounters(t *testing.T) {
	clock := newTestClock()
	s := NewMemoryStore(clock.Now)
	ctx := context.Background()
	for i := range 1000 {
		if _, err := s.Hit(ctx, strconv.Itoa(i), time.Second); err != nil {
			t.Fatal(err)
		}
	}
	clock.Advance(sweepEvery)
	mustHit(t, s, "fresh", time.Hour)
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.entries) != 1 {
		t.Fatalf("%d counters kept, want only the live one", len(s.entries))
	}
}

func TestRedisStoreKeysAndTTL(t *testing.T) {
	prefix := testenv.KeyPrefix(t)
	client := redisClient(t, prefix)
	clock := newTestClock()
	s := NewRedisStore(client, prefix, clock.Now)
	ctx := context.Background()
	mustHit(t, s, "login:1.2.3.4", time.Minute)
	keys, err := client.Keys(ctx, prefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(keys, []string{prefix + "login:1.2.3.4"}) {
		t.Fatalf("keys = %v, want only the prefixed key", keys)
	}
	ttl, err := client.PTTL(ctx, keys[0]).Result()
	if err != nil {
		t.Fatal(err)
	}
	if ttl <= time.Minute || ttl > time.Minute+gcSlack {
		t.Fatalf("TTL = %v, want the window plus up to %v of slack", ttl, gcSlack)
	}
}
