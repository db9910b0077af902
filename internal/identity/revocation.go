package identity

import (
	"context"
	"sync"
	"time"

	"verdict/internal/domain"
)

// Signing out ends a session before its token expires. The revocation is recorded in the
// database, which every replica shares, and each replica keeps the revoked IDs in memory (in
// auth.Tokens, which refuses their tokens): the replica that took the sign-out knows at once,
// the others when they next read the list (SyncRevocations, every RevocationInterval). So
// authenticating a request costs a map lookup, never a database read.

// RevocationInterval is how often FollowRevocations reads the revocations other replicas
// recorded: the most a revoked token may still be honoured by another replica (plus the read).
const RevocationInterval = time.Second

const (
	// revocationLookback is how far back each read looks again. On PostgreSQL a seq is taken
	// when a row is inserted but seen when its transaction commits, so a row may appear after a
	// higher seq was read; a revocation is one short statement, committed within milliseconds.
	revocationLookback = 10 * time.Second
	// revocationBatch bounds the rows of one read (a replica's first read takes every
	// revocation not yet expired).
	revocationBatch = 1000
	// revocationPrune is how often expired revocations are deleted.
	revocationPrune = time.Hour
)

var errNotSession = domain.BadRequest("Not a session token", "Only a session token can be revoked; an API key is revoked with DELETE /api/auth/api-keys/{id}")

// RevokeSession ends the session the caller came with (the dashboard's sign-out, and
// POST /api/auth/revoke): its token is refused from now on, on this replica at once and on the
// others within RevocationInterval, and this replica's live connections opened with it end now
// (the others' when they learn of it).
func (s *Service) RevokeSession(ctx context.Context, p *Principal) error {
	if p.SessionID == "" {
		return errNotSession
	}
	if err := s.store.RevokedTokens().Add(ctx, p.SessionID, p.SessionExpires, s.clock()); err != nil {
		return err
	}
	s.tokens.Revoke(p.SessionID, p.SessionExpires)
	s.endTokenSessions(p.SessionID)
	return nil
}

// revocationFeed is how far SyncRevocations has read the revocation list.
type revocationFeed struct {
	mu     sync.Mutex
	loaded bool      // the first read is done
	marks  []seqMark // the highest seq read, at each read of the last revocationLookback
}

type seqMark struct {
	at  time.Time // on the monotonic clock: the service's clock may be a test's
	seq int64
}

// SyncRevocations reads the revocations recorded since it last looked (by any replica) into
// the token set, and ends this replica's live connections of each one it did not know. The
// first call reads every revocation not yet expired; call it before serving.
func (s *Service) SyncRevocations(ctx context.Context) error {
	return s.syncRevocations(ctx, false)
}

// syncRevocations reads from the highest seq of a read at least revocationLookback ago (see
// there), or with all, every revocation. A whole read counts as that old: what it can miss is a
// row committed while it ran, which the next whole read (hourly) finds.
func (s *Service) syncRevocations(ctx context.Context, all bool) error {
	f := &s.revocations
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	from, keep := int64(0), 0
	for i, m := range f.marks {
		if now.Sub(m.at) < revocationLookback {
			break
		}
		from, keep = m.seq, i
	}
	if all || len(f.marks) == 0 {
		from, keep = 0, len(f.marks)
	}
	f.marks = f.marks[keep:]
	high := from
	if n := len(f.marks); n > 0 {
		high = max(high, f.marks[n-1].seq)
	}
	at := now
	if from == 0 {
		at = now.Add(-revocationLookback)
	}
	for {
		rows, err := s.store.RevokedTokens().Since(ctx, from, s.clock(), revocationBatch)
		if err != nil {
			return err
		}
		for _, r := range rows {
			// Connections exist only after the first read: before it there is nothing to end.
			if s.tokens.Revoke(r.ID, r.ExpiresAt) && f.loaded {
				s.endTokenSessions(r.ID)
			}
			from, high = r.Seq, max(high, r.Seq)
		}
		if len(rows) < revocationBatch {
			break
		}
	}
	f.marks = append(f.marks, seqMark{at: at, seq: high})
	f.loaded = true
	return nil
}

// FollowRevocations calls SyncRevocations every RevocationInterval until ctx ends; every hour
// it reads the whole list again and deletes the expired revocations.
func (s *Service) FollowRevocations(ctx context.Context) {
	tick := time.NewTicker(RevocationInterval)
	defer tick.Stop()
	lastPrune := time.Now()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		prune := time.Since(lastPrune) >= revocationPrune
		err := s.syncRevocations(ctx, prune)
		switch {
		case err != nil && ctx.Err() == nil && !failing:
			// Once per outage: revoked tokens stay refused here, later revocations wait for it.
			s.log.Warn("reading the revoked session tokens failed; retrying every second", "err", err)
			failing = true
		case err == nil && failing:
			s.log.Info("reading the revoked session tokens works again")
			failing = false
		}
		if prune {
			lastPrune = time.Now()
			if _, err := s.store.RevokedTokens().DeleteExpired(ctx, s.clock()); err != nil && ctx.Err() == nil {
				s.log.Warn("deleting expired token revocations failed", "err", err)
			}
		}
	}
}
