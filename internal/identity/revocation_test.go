package identity

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"verdict/internal/auth"
	"verdict/internal/domain"
	"verdict/internal/store"
)

// revocationLog is a revocation list whose rows can be hidden, as PostgreSQL hides a row whose
// seq was taken before a higher one's but whose transaction commits after it.
type revocationLog struct {
	store.Store
	mu     sync.Mutex
	rows   []store.RevokedToken
	hidden map[int64]bool
	reads  []int64 // the seq each read started after
}

func (l *revocationLog) RevokedTokens() store.RevokedTokenRepo { return l }

func (l *revocationLog) Add(_ context.Context, id string, exp, at time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rows = append(l.rows, store.RevokedToken{Seq: int64(len(l.rows) + 1), ID: id, ExpiresAt: exp, RevokedAt: at})
	return nil
}

func (l *revocationLog) Since(_ context.Context, seq int64, now time.Time, limit int) ([]store.RevokedToken, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reads = append(l.reads, seq)
	var out []store.RevokedToken
	for _, r := range l.rows {
		if r.Seq > seq && now.Before(r.ExpiresAt) && !l.hidden[r.Seq] && len(out) < limit {
			out = append(out, r)
		}
	}
	return out, nil
}

func (l *revocationLog) DeleteExpired(context.Context, time.Time) (int, error) { return 0, nil }

// The first read takes every revocation and ends nothing (nothing is open yet); later reads end
// the connections of each revocation they learn of, once; a row that becomes visible after a
// higher seq was read is still learned (each read looks back), and a session revoked here is
// refused at once and ended here without waiting for a read.
func TestSyncRevocations(t *testing.T) {
	now := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	tokens, err := auth.NewTokens([]byte("0123456789abcdef0123456789abcdef"), time.Hour, clock)
	if err != nil {
		t.Fatal(err)
	}
	log := &revocationLog{hidden: map[int64]bool{}}
	var ended []string
	s := New(Deps{Store: log, Tokens: tokens, Clock: clock, EndTokenSessions: func(id string) { ended = append(ended, id) }})
	ctx := context.Background()
	exp := now.Add(time.Hour)
	_ = log.Add(ctx, "a", exp, now)
	_ = log.Add(ctx, "gone", now, now) // expired: never read
	if err := s.SyncRevocations(ctx); err != nil {
		t.Fatal(err)
	}
	if !tokens.Revoked("a") || tokens.Revoked("gone") || len(ended) != 0 {
		t.Fatalf("first read: a revoked %v, gone revoked %v, ended %v", tokens.Revoked("a"), tokens.Revoked("gone"), ended)
	}

	_ = log.Add(ctx, "late", exp, now) // seq 3, committed after seq 4
	_ = log.Add(ctx, "b", exp, now)    // seq 4
	log.hidden[3] = true
	if err := s.SyncRevocations(ctx); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ended, []string{"b"}) || tokens.Revoked("late") {
		t.Fatalf("second read: ended %v", ended)
	}
	delete(log.hidden, 3)
	if err := s.SyncRevocations(ctx); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ended, []string{"b", "late"}) || !tokens.Revoked("late") {
		t.Fatalf("third read: ended %v, want the late row learned once", ended)
	}
	if got := log.reads[1:]; !slices.Equal(got, []int64{1, 1}) {
		t.Fatalf("reads started after seqs %v, want [1 1] (the first read's high, until it is %v old)", got, revocationLookback)
	}

	p := &Principal{UserID: "u1", OrgID: "o1", SessionID: "mine", SessionExpires: exp}
	if err := s.RevokeSession(ctx, p); err != nil {
		t.Fatal(err)
	}
	if !tokens.Revoked("mine") || !slices.Equal(ended, []string{"b", "late", "mine"}) {
		t.Fatalf("revoking here: ended %v", ended)
	}
	if err := s.SyncRevocations(ctx); err != nil {
		t.Fatal(err)
	}
	if len(ended) != 3 {
		t.Fatalf("a read ended a session revoked here again: %v", ended)
	}
	var de *domain.Error
	if err := s.RevokeSession(ctx, &Principal{UserID: "u1", OrgID: "o1", APIKeyID: "k"}); err == nil || !errors.As(err, &de) || de.Kind != domain.KindInvalid {
		t.Fatalf("revoking an API key's call: %v", err)
	}
}
