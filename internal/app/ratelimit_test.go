//go:build integration

package app_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"verdict/internal/api"
	"verdict/internal/app"
	"verdict/internal/config"
	"verdict/internal/testenv"
)

// loginFrom returns a login attempt from ip, each with another e-mail so that the per-e-mail
// lockout stays out of the way.
func loginFrom(h *harness, ip string) func() resp {
	n := 0
	return func() resp {
		h.t.Helper()
		n++
		return h.do("POST", "/api/auth/login", anon, map[string]any{"email": fmt.Sprintf("edge%d@example.com", n), "password": "x"},
			"X-Forwarded-For", ip)
	}
}

// A fixed window opened by a first request would let 4 more through at its 59th second and 5
// more at the 61st: 9 logins in 2 seconds. The limiter lets through 1 at the 61st: what the
// 2 seconds add to the bucket the first request had long paid back.
func TestRateLimitsWindowEdge(t *testing.T) {
	h := newHarness(t, harnessOpts{dialect: "sqlite", rateLimits: api.DefaultRateLimits(), env: map[string]string{"VERDICT_TRUSTED_PROXIES": "127.0.0.1/32"}})
	login := loginFrom(h, "203.0.113.9")
	start := h.clock.Now()
	expect(t, login(), 401, "Invalid credentials")
	h.clock.Advance(59 * time.Second)
	for range 4 {
		expect(t, login(), 401, "Invalid credentials")
	}
	h.clock.Advance(2 * time.Second)
	expect(t, login(), 401, "Invalid credentials")
	for range 4 {
		r := login()
		expect(t, r, 429, "Rate limit exceeded")
		// The next is allowed 12 s after the one just allowed, less the 2 s: at 71 s. The bucket
		// is full again at 119 s (the 6 taken since 59 s, at 12 s each).
		if r.header.Get("Retry-After") != "10" || fmt.Sprint(r.get("retryAfter")) != "10" || r.header.Get("X-RateLimit-Remaining") != "0" ||
			r.header.Get("X-RateLimit-Reset") != fmt.Sprint(start.Add(119*time.Second).Unix()) {
			t.Fatalf("refused at 61 s: %v %s", r.header, r.raw)
		}
	}
	h.clock.Advance(10 * time.Second)
	expect(t, login(), 401, "Invalid credentials")
	expect(t, login(), 429, "Rate limit exceeded")
}

// On Redis the limiter keeps Redis's clock, so this test lets real time pass, on a signup
// bucket of 5 per 2 s (one every 400 ms). Empty signups answer 400 at once: no password hashing
// stretches the test's timing.
func TestRateLimitsRedisRefill(t *testing.T) {
	limits := api.DefaultRateLimits()
	rule := limits["signup"]
	rule.Window = 2 * time.Second
	limits["signup"] = rule
	h := newHarness(t, harnessOpts{dialect: "sqlite", redis: true, rateLimits: limits, env: map[string]string{"VERDICT_TRUSTED_PROXIES": "127.0.0.1/32"}})
	signup := func() resp {
		t.Helper()
		return h.do("POST", "/api/auth/signup", anon, map[string]any{}, "X-Forwarded-For", "203.0.113.10")
	}
	for i := 1; i <= 5; i++ {
		r := signup()
		expect(t, r, 400, "Missing required fields")
		if r.header.Get("X-RateLimit-Limit") != "5" || r.header.Get("X-RateLimit-Remaining") != fmt.Sprint(5-i) {
			t.Fatalf("attempt %d headers: %v", i, r.header)
		}
	}
	r := signup()
	expect(t, r, 429, "Rate limit exceeded")
	// Under 400 ms to wait, rounded up; the bucket full again under 2 s from now, rounded up.
	if r.header.Get("Retry-After") != "1" || fmt.Sprint(r.get("retryAfter")) != "1" ||
		r.header.Get("X-RateLimit-Reset") != fmt.Sprint(h.clock.Now().Add(2*time.Second).Unix()) {
		t.Fatalf("refused: %v %s", r.header, r.raw)
	}
	time.Sleep(450 * time.Millisecond)
	expect(t, signup(), 400, "Missing required fields")
	expect(t, signup(), 429, "Rate limit exceeded")
}

// VERDICT_RATE_LIMITS sets a bucket's numbers; an unknown bucket refuses to start, naming it.
func TestRateLimitsSetting(t *testing.T) {
	newApp := func(limits string) (*app.App, error) {
		cfg, err := config.LoadFrom(map[string]string{
			"VERDICT_DATA_DIR":        t.TempDir(),
			"JWT_SECRET":              "test-secret-test-secret-test-secret-0123",
			"ENCRYPTION_KEY":          strings.Repeat("ab", 32),
			"VERDICT_LOG_LEVEL":       "error",
			"VERDICT_TRUSTED_PROXIES": "127.0.0.1/32",
			"VERDICT_RATE_LIMITS":     limits,
		})
		if err != nil {
			t.Fatal(err)
		}
		return app.New(context.Background(), cfg, slog.New(slog.DiscardHandler), app.Options{MailConsole: io.Discard, Version: "test"})
	}
	if _, err := newApp("login=2/1m,logins=1/1m"); err == nil || !strings.Contains(err.Error(), "VERDICT_RATE_LIMITS") || !strings.Contains(err.Error(), "logins") {
		t.Fatalf("unknown bucket: %v", err)
	}
	a, err := newApp("login=2/1m")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a.API)
	t.Cleanup(func() { srv.Close(); a.Close() })
	h := &harness{t: t, app: a, srv: srv, clock: testenv.NewClock(time.Now())}
	login := loginFrom(h, "203.0.113.11")
	for range 2 {
		if r := login(); r.status != 401 || r.header.Get("X-RateLimit-Limit") != "2" {
			t.Fatalf("login: %d %v", r.status, r.header)
		}
	}
	expect(t, login(), 429, "Rate limit exceeded")
}
