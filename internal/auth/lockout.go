package auth

import (
	"context"
	"time"

	"verdict/internal/domain"
	"verdict/internal/ratelimit"
)

// Lockout numbers: 5 failed logins within 15 minutes lock the address for 15 minutes.
const (
	MaxFailedLogins = 5
	FailureWindow   = 15 * time.Minute
	LockDuration    = 15 * time.Minute
)

// Lockout counts failed logins per normalised e-mail and locks the account after
// MaxFailedLogins failures inside FailureWindow.
//
// The sequence: failures 1 to 4 answer 401 with attemptsRemaining
// 4, 3, 2, 1; the 5th failure sets a lock entry living LockDuration from that moment and still
// answers 401, with attemptsRemaining 0; the 6th attempt, and every attempt until the lock
// entry ends, is refused by Check with 429 and retryAfter, before any password is checked
// (so a right password does not get in either). The lock is never extended, and it ends no
// earlier than the failure window it came from, so the account is then fully fresh.
// A successful login clears the failure counter.
//
// Keys are SHA-256 hashes of the e-mail, so the shared Redis holds no addresses.
type Lockout struct {
	store ratelimit.Store
	clock domain.Clock
}

// NewLockout returns a lockout keeping its counters in store; clock must be the store's clock.
func NewLockout(store ratelimit.Store, clock domain.Clock) *Lockout {
	return &Lockout{store: store, clock: clock}
}

func lockoutKeys(email string) (fails, lock string) {
	h := sha256Hex(domain.NormalizeEmail(email))
	return "lockout:fails:" + h, "lockout:lock:" + h
}

// Check reports whether the account is locked, and for how much longer.
func (l *Lockout) Check(ctx context.Context, email string) (locked bool, retryAfter time.Duration, err error) {
	_, lockKey := lockoutKeys(email)
	c, err := l.store.Get(ctx, lockKey)
	if err != nil || c.N == 0 {
		return false, 0, err
	}
	return true, l.until(c.ResetAt), nil
}

// Fail records a failed login. The failure that reaches MaxFailedLogins locks the account
// and returns locked with the lock's remaining time and 0 attempts remaining.
func (l *Lockout) Fail(ctx context.Context, email string) (attemptsRemaining int, locked bool, retryAfter time.Duration, err error) {
	failKey, lockKey := lockoutKeys(email)
	c, err := l.store.Hit(ctx, failKey, FailureWindow)
	if err != nil {
		return 0, false, 0, err
	}
	if c.N < MaxFailedLogins {
		return MaxFailedLogins - c.N, false, 0, nil
	}
	// A lock that already exists (a racing failure) keeps its end: Hit never moves it.
	lc, err := l.store.Hit(ctx, lockKey, LockDuration)
	if err != nil {
		return 0, false, 0, err
	}
	return 0, true, l.until(lc.ResetAt), nil
}

// Succeed clears the failure counter after a successful login.
func (l *Lockout) Succeed(ctx context.Context, email string) error {
	failKey, _ := lockoutKeys(email)
	return l.store.Reset(ctx, failKey)
}

func (l *Lockout) until(t time.Time) time.Duration { return max(t.Sub(l.clock()), 0) }
