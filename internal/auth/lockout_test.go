package auth

import (
	"context"
	"testing"
	"time"
)

func TestLockout(t *testing.T) {
	for name, newStore := range counterStores() {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			check := func(t *testing.T, l *Lockout, email string, wantLocked bool, wantRetry time.Duration) {
				t.Helper()
				locked, retry, err := l.Check(ctx, email)
				if err != nil {
					t.Fatal(err)
				}
				if locked != wantLocked || retry != wantRetry {
					t.Fatalf("Check = %v, %v; want %v, %v", locked, retry, wantLocked, wantRetry)
				}
			}
			fail := func(t *testing.T, l *Lockout, email string, wantRemaining int, wantLocked bool, wantRetry time.Duration) {
				t.Helper()
				remaining, locked, retry, err := l.Fail(ctx, email)
				if err != nil {
					t.Fatal(err)
				}
				if remaining != wantRemaining || locked != wantLocked || retry != wantRetry {
					t.Fatalf("Fail = %d, %v, %v; want %d, %v, %v", remaining, locked, retry, wantRemaining, wantLocked, wantRetry)
				}
			}

			t.Run("locks at the fifth failure for 15 minutes", func(t *testing.T) {
				clock := newTestClock()
				l := NewLockout(newStore(t, clock.Now), clock.Now)
				for i := 1; i <= 4; i++ {
					check(t, l, "ann@example.com", false, 0)
					fail(t, l, "ann@example.com", 5-i, false, 0)
					clock.Advance(time.Minute)
				}
				// Normalised: the same account whatever the case and spacing.
				fail(t, l, "  Ann@Example.COM ", 0, true, 15*time.Minute)
				check(t, l, "ann@example.com", true, 15*time.Minute)
				clock.Advance(15*time.Minute - time.Second) // 14m59s after the lock
				check(t, l, "ann@example.com", true, time.Second)
				clock.Advance(time.Second) // 15m
				check(t, l, "ann@example.com", false, 0)
				// The failure window ended too: counting starts again.
				fail(t, l, "ann@example.com", 4, false, 0)
			})

			t.Run("a racing failure while locked does not extend the lock", func(t *testing.T) {
				clock := newTestClock()
				l := NewLockout(newStore(t, clock.Now), clock.Now)
				for i := 1; i <= 4; i++ {
					fail(t, l, "bob@example.com", 5-i, false, 0)
				}
				fail(t, l, "bob@example.com", 0, true, 15*time.Minute)
				clock.Advance(5 * time.Minute)
				fail(t, l, "bob@example.com", 0, true, 10*time.Minute)
				check(t, l, "bob@example.com", true, 10*time.Minute)
			})

			t.Run("failures outside 15 minutes do not lock", func(t *testing.T) {
				clock := newTestClock()
				l := NewLockout(newStore(t, clock.Now), clock.Now)
				for i := 1; i <= 4; i++ {
					fail(t, l, "cy@example.com", 5-i, false, 0)
					clock.Advance(time.Minute)
				}
				clock.Advance(11 * time.Minute) // 15 minutes after the first failure
				fail(t, l, "cy@example.com", 4, false, 0)
				check(t, l, "cy@example.com", false, 0)
			})

			t.Run("success clears the counter", func(t *testing.T) {
				clock := newTestClock()
				l := NewLockout(newStore(t, clock.Now), clock.Now)
				for i := 1; i <= 4; i++ {
					fail(t, l, "dee@example.com", 5-i, false, 0)
				}
				if err := l.Succeed(ctx, "DEE@example.com"); err != nil {
					t.Fatal(err)
				}
				for i := 1; i <= 4; i++ {
					fail(t, l, "dee@example.com", 5-i, false, 0)
				}
				check(t, l, "dee@example.com", false, 0)
			})

			t.Run("accounts are independent", func(t *testing.T) {
				clock := newTestClock()
				l := NewLockout(newStore(t, clock.Now), clock.Now)
				for i := 1; i <= 4; i++ {
					fail(t, l, "eve@example.com", 5-i, false, 0)
				}
				fail(t, l, "eve@example.com", 0, true, 15*time.Minute)
				check(t, l, "eve@example.com", true, 15*time.Minute)
				check(t, l, "fay@example.com", false, 0)
				fail(t, l, "fay@example.com", 4, false, 0)
			})
		})
	}
}
