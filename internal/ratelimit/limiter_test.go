package ratelimit

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"verdict/internal/domain"
	"verdict/internal/testenv"
)

// timeline moves a twin's time: the memory twin's clock exactly, Redis's for real (redis_rate
// reads Redis's clock, which no test can move).
type timeline struct {
	clock *testenv.Clock // nil: real time
}

func (tl timeline) now() time.Time {
	if tl.clock == nil {
		return time.Now()
	}
	return tl.clock.Now()
}

func (tl timeline) advance(d time.Duration) {
	if tl.clock == nil {
		time.Sleep(d)
		return
	}
	tl.clock.Advance(d)
}

// limiterTwin is one implementation of the Limiter contract and how to test it.
type limiterTwin struct {
	// period scales the suite's buckets: the memory twin runs the real minute on a moved clock;
	// Redis's buckets are short, as its time passes for real.
	period time.Duration
	// tol is how far a reported duration may be from the exact one: requests and sleeps take
	// real time on Redis, and its GCRA counts floating-point seconds.
	tol time.Duration
	new func(t testing.TB) (*Limiter, timeline)
}

func limiterTwins() map[string]limiterTwin {
	return map[string]limiterTwin{
		"memory": {period: time.Minute, new: func(t testing.TB) (*Limiter, timeline) {
			clock := newTestClock()
			return NewMemoryLimiter(clock.Now), timeline{clock}
		}},
		"redis": {period: 2 * time.Second, tol: 150 * time.Millisecond, new: func(t testing.TB) (*Limiter, timeline) {
			prefix := testenv.KeyPrefix(t)
			return NewRedisLimiter(redisClient(t, prefix), prefix, domain.SystemClock), timeline{}
		}},
	}
}

// TestLimiters runs one behavioural suite against every Limiter twin.
func TestLimiters(t *testing.T) {
	for name, twin := range limiterTwins() {
		t.Run(name, func(t *testing.T) {
			for _, tc := range limiterSuite {
				t.Run(tc.name, func(t *testing.T) {
					t.Parallel() // the Redis cases mostly sleep
					l, tl := twin.new(t)
					tc.run(&limiterCase{T: t, l: l, tl: tl, p: twin.period, tol: twin.tol})
				})
			}
		})
	}
}

// limiterCase is one suite case's view of a twin. p is its period; e = p/5 the emission
// interval of the suite's 5-per-period bucket.
type limiterCase struct {
	*testing.T
	l   *Limiter
	tl  timeline
	p   time.Duration
	tol time.Duration
}

func (c *limiterCase) e() time.Duration { return c.p / 5 }

// allow takes one request from key's 5-per-period bucket.
func (c *limiterCase) allow(key string) Decision {
	c.Helper()
	d, err := c.l.Allow(context.Background(), key, 5, c.p)
	if err != nil {
		c.Fatal(err)
	}
	if d.Limit != 5 {
		c.Fatalf("Limit = %d, want 5", d.Limit)
	}
	return d
}

// near fails unless got is want, within the twin's tolerance.
func (c *limiterCase) near(what string, got, want time.Duration) {
	c.Helper()
	if diff := (got - want).Abs(); diff > c.tol {
		c.Fatalf("%s = %v, want %v (±%v)", what, got, want, c.tol)
	}
}

// expect checks a decision: allowed or not, Remaining, and ResetAt and RetryAfter as durations
// from now.
func (c *limiterCase) expect(what string, d Decision, allowed bool, remaining int, resetIn, retryAfter time.Duration) {
	c.Helper()
	if d.Allowed != allowed || d.Remaining != remaining {
		c.Fatalf("%s = %+v, want allowed %v with %d remaining", what, d, allowed, remaining)
	}
	c.near(what+" ResetAt-now", d.ResetAt.Sub(c.tl.now()), resetIn)
	c.near(what+" RetryAfter", d.RetryAfter, retryAfter)
	if allowed && d.RetryAfter != 0 {
		c.Fatalf("%s: allowed with RetryAfter %v", what, d.RetryAfter)
	}
}

// expectAllowed makes n requests and fails unless want of them are allowed.
func (c *limiterCase) expectAllowed(what, key string, n, want int) {
	c.Helper()
	allowed := 0
	var ds []Decision
	for range n {
		d := c.allow(key)
		ds = append(ds, d)
		if d.Allowed {
			allowed++
		}
	}
	if allowed != want {
		c.Fatalf("%s: %d of %d allowed, want %d: %+v", what, allowed, n, want, ds)
	}
}

var limiterSuite = []struct {
	name string
	run  func(c *limiterCase)
}{
	{"a full bucket allows the limit at once, then refuses", func(c *limiterCase) {
		for i := 1; i <= 5; i++ {
			c.expect(fmt.Sprintf("request %d", i), c.allow("k"), true, 5-i, time.Duration(i)*c.e(), 0)
		}
		for i := 6; i <= 8; i++ {
			c.expect(fmt.Sprintf("request %d", i), c.allow("k"), false, 0, c.p, c.e())
		}
	}},
	{"no burst above the limit at a window edge", func(c *limiterCase) {
		// 5 at 59 s and 5 at 61 s (of a minute): 2 s refill no request (one every 12 s).
		c.tl.advance(c.p * 59 / 60)
		c.expectAllowed("a full bucket", "k", 5, 5)
		c.tl.advance(c.p * 2 / 60)
		for i := range 5 {
			c.expect(fmt.Sprintf("request %d after the edge", i+1), c.allow("k"), false, 0, c.p-c.p*2/60, c.e()-c.p*2/60)
		}
		c.tl.advance(c.e() - c.p*2/60)
		c.expect("request at retryAfter", c.allow("k"), true, 0, c.p, 0)
		c.expect("the next", c.allow("k"), false, 0, c.p, c.e())
	}},
	{"the edge of a window opened by a first request", func(c *limiterCase) {
		// A fixed window from the first request (at 0 s) would take 4 more at 59 s and 5 more at
		// 61 s: 9 in 2 seconds. GCRA takes the 4, then 1: what 2 s add to the 59 s-old first.
		c.allow("k")
		c.tl.advance(c.p * 59 / 60)
		c.expectAllowed("at 59 s", "k", 4, 4)
		c.tl.advance(c.p * 2 / 60)
		c.expectAllowed("at 61 s", "k", 5, 1)
	}},
	{"a spent bucket allows one request per emission interval", func(c *limiterCase) {
		c.expectAllowed("a full bucket", "k", 5, 5)
		for i := range 3 {
			for range 3 { // refused requests use nothing
				c.expect(fmt.Sprintf("round %d refused", i), c.allow("k"), false, 0, c.p, c.e())
			}
			c.tl.advance(c.e())
			c.expect(fmt.Sprintf("round %d allowed", i), c.allow("k"), true, 0, c.p, 0)
		}
	}},
	{"a bucket is full again after one period", func(c *limiterCase) {
		c.expectAllowed("a full bucket", "k", 5, 5)
		c.tl.advance(c.p)
		c.expect("after a period", c.allow("k"), true, 4, c.e(), 0)
		c.tl.advance(c.p) // idle time does not grow the bucket past its limit
		c.expect("after another", c.allow("k"), true, 4, c.e(), 0)
	}},
	{"keys are independent", func(c *limiterCase) {
		c.expectAllowed("key a", "a", 6, 5)
		c.expect("another key", c.allow("b"), true, 4, c.e(), 0)
	}},
	{"concurrent requests take one each", func(c *limiterCase) {
		const n, limit = 50, 20
		var mu sync.Mutex
		allowed := 0
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				d, err := c.l.Allow(context.Background(), "k", limit, time.Hour) // no refill during the test
				if err != nil {
					c.Error(err)
					return
				}
				if d.Allowed {
					mu.Lock()
					allowed++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if allowed != limit {
			c.Fatalf("%d of %d concurrent requests allowed, want %d", allowed, n, limit)
		}
	}},
	{"a limit must be a rate; a huge one is out of the way", func(c *limiterCase) {
		ctx := context.Background()
		if _, err := c.l.Allow(ctx, "k", 0, time.Minute); err == nil {
			c.Fatal("limit 0 accepted")
		}
		if _, err := c.l.Allow(ctx, "k", 5, 0); err == nil {
			c.Fatal("period 0 accepted")
		}
		for _, limit := range []int{1_000_000_000, 1 << 40} {
			for range 3 {
				if d, err := c.l.Allow(ctx, fmt.Sprint(limit), limit, time.Minute); err != nil || !d.Allowed || d.Remaining < limit-1000 {
					c.Fatalf("%d a minute: %+v, %v", limit, d, err)
				}
			}
		}
	}},
}

// The memory twin is exact: whole Decisions at the minute the API uses.
func TestMemoryLimiterDecisions(t *testing.T) {
	clock := newTestClock()
	l := NewMemoryLimiter(clock.Now)
	ctx := context.Background()
	allow := func() Decision {
		t.Helper()
		d, err := l.Allow(ctx, "ip:1.2.3.4", 5, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	start := clock.Now()
	for i := 1; i <= 5; i++ {
		want := Decision{Allowed: true, Limit: 5, Remaining: 5 - i, ResetAt: start.Add(time.Duration(i) * 12 * time.Second)}
		if d := allow(); d != want {
			t.Fatalf("request %d = %+v, want %+v", i, d, want)
		}
	}
	clock.Advance(20 * time.Second)
	want := Decision{Limit: 5, ResetAt: start.Add(time.Minute), RetryAfter: 0}
	// 20 s into the burst: one was allowed again at 12 s and is taken now; the next at 24 s.
	if d := allow(); d != (Decision{Allowed: true, Limit: 5, ResetAt: start.Add(72 * time.Second)}) {
		t.Fatalf("request at 20 s = %+v", d)
	}
	want.ResetAt, want.RetryAfter = start.Add(72*time.Second), 4*time.Second
	if d := allow(); d != want {
		t.Fatalf("request at 20 s = %+v, want %+v", d, want)
	}
	// A limit that does not divide the period: 7 a minute is one every 8.571428571 s.
	clock.Advance(time.Hour)
	for i := range 7 {
		if d, _ := l.Allow(ctx, "odd", 7, time.Minute); !d.Allowed || d.Remaining != 6-i {
			t.Fatalf("odd request %d = %+v", i+1, d)
		}
	}
	if d, _ := l.Allow(ctx, "odd", 7, time.Minute); d.Allowed || d.RetryAfter != 8571428571 {
		t.Fatalf("odd request 8 = %+v, want refused for 8.571428571s", d)
	}
}

func TestMemoryLimiterDropsFullBuckets(t *testing.T) {
	clock := newTestClock()
	l := NewMemoryLimiter(clock.Now)
	ctx := context.Background()
	for i := range 1000 {
		if _, err := l.Allow(ctx, fmt.Sprint(i), 5, time.Second); err != nil {
			t.Fatal(err)
		}
	}
	clock.Advance(sweepEvery)
	if _, err := l.Allow(ctx, "fresh", 5, time.Hour); err != nil {
		t.Fatal(err)
	}
	g := l.gcra.(*memoryGCRA)
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.tat) != 1 {
		t.Fatalf("%d buckets kept, want only the one not yet full", len(g.tat))
	}
}

func TestRedisLimiterKeys(t *testing.T) {
	prefix := testenv.KeyPrefix(t)
	client := redisClient(t, prefix)
	l := NewRedisLimiter(client, prefix, domain.SystemClock)
	ctx := context.Background()
	if _, err := l.Allow(ctx, "rl:login:ip:1.2.3.4", 5, time.Minute); err != nil {
		t.Fatal(err)
	}
	keys, err := client.Keys(ctx, "*"+prefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if want := "rate:" + prefix + "rl:login:ip:1.2.3.4"; len(keys) != 1 || keys[0] != want {
		t.Fatalf("keys = %v, want only %s", keys, want)
	}
	// The key lives until its bucket is full again (12 s after one request), not longer.
	if ttl, err := client.TTL(ctx, keys[0]).Result(); err != nil || ttl <= 0 || ttl > 12*time.Second {
		t.Fatalf("TTL = %v, %v; want up to 12s", ttl, err)
	}
}

// An unreachable Redis is an error, which the API answers by letting the request through.
func TestRedisLimiterOutage(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: time.Second})
	defer client.Close()
	l := NewRedisLimiter(client, "x:", domain.SystemClock)
	_, err := l.Allow(context.Background(), "k", 5, time.Minute)
	if err == nil || !strings.Contains(err.Error(), "ratelimit: redis") {
		t.Fatalf("err = %v, want a ratelimit: redis error", err)
	}
}

// BenchmarkAllow is one Allow call on the system clock: "allowed" on a bucket that never
// empties (Redis writes), "refused" on a spent one (Redis only reads).
func BenchmarkAllow(b *testing.B) {
	twins := map[string]func(b *testing.B) *Limiter{
		"memory": func(b *testing.B) *Limiter { return NewMemoryLimiter(domain.SystemClock) },
		"redis": func(b *testing.B) *Limiter {
			prefix := testenv.KeyPrefix(b)
			return NewRedisLimiter(redisClient(b, prefix), prefix, domain.SystemClock)
		},
	}
	for name, newLimiter := range twins {
		for _, c := range []struct {
			name  string
			limit int
		}{{"allowed", 1_000_000_000}, {"refused", 100}} {
			b.Run(name+"/"+c.name, func(b *testing.B) {
				l := newLimiter(b)
				ctx := context.Background()
				for b.Loop() {
					if _, err := l.Allow(ctx, "org:bench", c.limit, time.Minute); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
