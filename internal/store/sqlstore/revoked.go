package sqlstore

import (
	"context"
	"time"

	"verdict/internal/store"
)

func (s *Store) RevokedTokens() store.RevokedTokenRepo { return revokedTokenRepo{s} }

type revokedTokenRepo struct{ s *Store }

// Add ignores a token revoked before (ON CONFLICT DO NOTHING: no unique violation to abort a
// PostgreSQL transaction).
func (r revokedTokenRepo) Add(ctx context.Context, id string, expiresAt, at time.Time) error {
	_, err := r.s.exec(ctx, `INSERT INTO revoked_tokens (token_id, expires_at, revoked_at) VALUES (?, ?, ?)
		ON CONFLICT (token_id) DO NOTHING`, id, millis(expiresAt), millis(at))
	return err
}

func (r revokedTokenRepo) Since(ctx context.Context, seq int64, now time.Time, limit int) ([]store.RevokedToken, error) {
	return list(ctx, r.s, scanRevokedToken, `SELECT seq, token_id, expires_at, revoked_at FROM revoked_tokens
		WHERE seq > ? AND expires_at > ? ORDER BY seq LIMIT ?`, seq, millis(now), limit)
}

func scanRevokedToken(r scanner) (*store.RevokedToken, error) {
	var t store.RevokedToken
	var expires, revoked int64
	if err := r.Scan(&t.Seq, &t.ID, &expires, &revoked); err != nil {
		return nil, err
	}
	t.ExpiresAt, t.RevokedAt = fromMillis(expires), fromMillis(revoked)
	return &t, nil
}

func (r revokedTokenRepo) DeleteExpired(ctx context.Context, now time.Time) (int, error) {
	res, err := r.s.exec(ctx, `DELETE FROM revoked_tokens WHERE expires_at <= ?`, millis(now))
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}
