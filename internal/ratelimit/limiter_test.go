package ratelimit

import (
	"context"
	"testing"
	"time"

	"verdict/internal/domain"
)

func TestLimiter(t *testing.T) {
	for name, newStore := range stores() {
		t.Run(name, func(t *testing.T) {
			clock := newTestClock()
			l := NewLimiter(newStore(t, clock.Now), clock.Now)
			ctx := context.Background()
			start := clock.Now()
			resetAt := start.Add(time.Minute)
			for i := 1; i <= 5; i++ {
				d, err := l.Allow(ctx, "ip:1.2.3.4", 5, time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				want := Decision{Allowed: true, Limit: 5, Remaining: 5 - i, ResetAt: resetAt}
				if d != want {
					t.Fatalf("request %d = %+v, want %+v", i, d, want)
				}
				clock.Advance(time.Second)
			}
			clock.Advance(15 * time.Second) // 20s into the window
			for i := 6; i <= 7; i++ {
				d, err := l.Allow(ctx, "ip:1.2.3.4", 5, time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				want := Decision{Allowed: false, Limit: 5, Remaining: 0, ResetAt: resetAt, RetryAfter: 40 * time.Second}
				if d != want {
					t.Fatalf("request %d = %+v, want %+v", i, d, want)
				}
			}
			if d, _ := l.Allow(ctx, "ip:5.6.7.8", 5, time.Minute); !d.Allowed || d.Remaining != 4 {
				t.Fatalf("another key = %+v, want allowed with 4 remaining", d)
			}
			clock.Advance(40 * time.Second)
			d, err := l.Allow(ctx, "ip:1.2.3.4", 5, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if want := (Decision{Allowed: true, Limit: 5, Remaining: 4, ResetAt: clock.Now().Add(time.Minute)}); d != want {
				t.Fatalf("after the window = %+v, want %+v", d, want)
			}
			if _, err := l.Allow(ctx, "k", 0, time.Minute); err == nil {
				t.Fatal("limit 0 accepted")
			}
		})
	}
}

func BenchmarkAllow(b *testing.B) {
	for name, newStore := range stores() {
		b.Run(name, func(b *testing.B) {
			l := NewLimiter(newStore(b, domain.SystemClock), domain.SystemClock)
			ctx := context.Background()
			for b.Loop() {
				if _, err := l.Allow(ctx, "org:bench", 100, time.Minute); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
