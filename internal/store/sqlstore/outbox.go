package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"slices"
	"time"

	"verdict/internal/store"
)

type outboxRepo struct{ s *Store }

const mailColumns = `id, recipients, subject, body_html, body_text, attempts, next_attempt, sent_at, last_error,
	created_at`

func scanMail(r scanner) (*store.Mail, error) {
	var m store.Mail
	var recipients string
	var next, created int64
	var sent sql.NullInt64
	if err := r.Scan(&m.ID, &recipients, &m.Subject, &m.HTML, &m.Text, &m.Attempts, &next, &sent, &m.LastError,
		&created); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(recipients), &m.To); err != nil {
		return nil, err
	}
	m.NextAttempt = fromMillis(next)
	m.SentAt = timePtr(sent)
	m.CreatedAt = fromMillis(created)
	return &m, nil
}

func (r outboxRepo) Enqueue(ctx context.Context, m *store.Mail) error {
	ensureID(&m.ID)
	to, err := json.Marshal(m.To)
	if err != nil {
		return err
	}
	_, err = r.s.exec(ctx, `INSERT INTO mail_outbox (`+mailColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		m.ID, string(to), m.Subject, m.HTML, m.Text, m.Attempts, millis(m.NextAttempt), nullMillis(m.SentAt),
		m.LastError, millis(m.CreatedAt))
	return err
}

// Claim leases due mails by moving their next attempt to leaseUntil: until then no other
// claimer sees them, and if the sender dies they fall due again. Attempts counts claims, so a
// mail whose sender crashed mid-send still uses up an attempt. The one UPDATE is atomic; on
// PostgreSQL SKIP LOCKED lets concurrent claimers take different mails instead of waiting.
func (r outboxRepo) Claim(ctx context.Context, now, leaseUntil time.Time, n int) ([]store.Mail, error) {
	if n <= 0 {
		return []store.Mail{}, nil
	}
	mails, err := list(ctx, r.s, scanMail, `UPDATE mail_outbox SET next_attempt = ?, attempts = attempts + 1
		WHERE id IN (SELECT id FROM mail_outbox
			WHERE sent_at IS NULL AND NOT given_up AND next_attempt <= ?
			ORDER BY next_attempt, id LIMIT ?`+r.s.d.skipLocked+`)
		RETURNING `+mailColumns, millis(leaseUntil), millis(now), n)
	if err != nil {
		return nil, err
	}
	// RETURNING has no order; hand them out oldest first.
	slices.SortFunc(mails, func(a, b store.Mail) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return mails, nil
}

func (r outboxRepo) MarkSent(ctx context.Context, id string, at time.Time) error {
	return r.s.execOne(ctx, `UPDATE mail_outbox SET sent_at = ? WHERE id = ?`, millis(at), id)
}

func (r outboxRepo) MarkFailed(ctx context.Context, id string, errText string, next time.Time, giveUp bool) error {
	return r.s.execOne(ctx, `UPDATE mail_outbox SET last_error = ?, next_attempt = ?, given_up = ? WHERE id = ?`,
		errText, millis(next), giveUp, id)
}

func (r outboxRepo) Get(ctx context.Context, id string) (*store.Mail, error) {
	return get(ctx, r.s, scanMail, `SELECT `+mailColumns+` FROM mail_outbox WHERE id = ?`, id)
}
