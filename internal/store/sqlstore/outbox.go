package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"verdict/internal/crypto/secretbox"
	"verdict/internal/store"
)

type outboxRepo struct{ s *Store }

// SealOutbox makes the store seal mail bodies with box when they are enqueued and open them
// when they are read: an invitation's body holds a token that joins its organization, and
// must not be readable from the database or its backups. Call it once, before the store is
// used; without it the outbox refuses to enqueue or claim rather than keep bodies in clear.
func (s *Store) SealOutbox(box *secretbox.Box) { s.mailBox = box }

var errNoMailKey = errors.New("sqlstore: the mail outbox has no key to seal bodies with (SealOutbox)")

const mailColumns = `id, kind, dedupe_key, recipients, subject, body_html, body_text, sealed, attempts,
	next_attempt, sent_at, last_error, created_at`

// mailRow is a mail as stored: HTML and Text are secretbox values when sealed is set. Rows
// queued before bodies were sealed are not.
type mailRow struct {
	store.Mail
	sealed bool
}

func scanMail(r scanner) (*mailRow, error) {
	var m mailRow
	var recipients string
	var next, created int64
	var sent sql.NullInt64
	var key sql.NullString
	if err := r.Scan(&m.ID, &m.Kind, &key, &recipients, &m.Subject, &m.HTML, &m.Text, &m.sealed, &m.Attempts, &next, &sent,
		&m.LastError, &created); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(recipients), &m.To); err != nil {
		return nil, err
	}
	m.Key = key.String
	m.NextAttempt = fromMillis(next)
	m.SentAt = timePtr(sent)
	m.CreatedAt = fromMillis(created)
	return &m, nil
}

// open returns the mail with its bodies in clear; an error wraps secretbox.ErrOpen when a
// body cannot be opened with the store's key.
func (r outboxRepo) open(row *mailRow) (*store.Mail, error) {
	m := row.Mail
	if !row.sealed {
		return &m, nil
	}
	if r.s.mailBox == nil {
		return nil, errNoMailKey
	}
	for _, body := range []*string{&m.HTML, &m.Text} {
		if *body == "" { // dropped after sending
			continue
		}
		plain, err := r.s.mailBox.Open(*body)
		if err != nil {
			return nil, fmt.Errorf("sqlstore: mail %s: %w", m.ID, err)
		}
		*body = string(plain)
	}
	return &m, nil
}

func (r outboxRepo) Enqueue(ctx context.Context, m *store.Mail) error {
	if r.s.mailBox == nil {
		return errNoMailKey
	}
	ensureID(&m.ID)
	to, err := json.Marshal(m.To)
	if err != nil {
		return err
	}
	html, err := r.s.mailBox.Seal([]byte(m.HTML))
	if err != nil {
		return err
	}
	text, err := r.s.mailBox.Seal([]byte(m.Text))
	if err != nil {
		return err
	}
	var key sql.NullString
	if m.Key != "" {
		key = sql.NullString{String: m.Key, Valid: true}
	}
	_, err = r.s.exec(ctx, `INSERT INTO mail_outbox (`+mailColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		m.ID, m.Kind, key, string(to), m.Subject, html, text, true, m.Attempts, millis(m.NextAttempt), nullMillis(m.SentAt),
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
	if r.s.mailBox == nil {
		return nil, errNoMailKey // before leasing anything: a misconfigured sender must not use up attempts
	}
	rows, err := list(ctx, r.s, scanMail, `UPDATE mail_outbox SET next_attempt = ?, attempts = attempts + 1
		WHERE id IN (SELECT id FROM mail_outbox
			WHERE sent_at IS NULL AND NOT given_up AND next_attempt <= ?
			ORDER BY next_attempt, id LIMIT ?`+r.s.d.skipLocked+`)
		RETURNING `+mailColumns, millis(leaseUntil), millis(now), n)
	if err != nil {
		return nil, err
	}
	mails := make([]store.Mail, 0, len(rows))
	for i := range rows {
		m, err := r.open(&rows[i])
		if errors.Is(err, secretbox.ErrOpen) {
			// Sealed with another key (ENCRYPTION_KEY changed) or altered: it never opens, so
			// give it up rather than let it be retried for hours.
			if err := r.MarkFailed(ctx, rows[i].ID, "cannot open the sealed body (was ENCRYPTION_KEY changed?): "+err.Error(),
				now, true); err != nil {
				return nil, err
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		mails = append(mails, *m)
	}
	// RETURNING has no order; hand them out oldest first.
	slices.SortFunc(mails, func(a, b store.Mail) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return mails, nil
}

// MarkSent records the delivery and drops the bodies: a sent mail is never read again, and
// an invitation's link must not outlive its delivery in the database or its backups.
func (r outboxRepo) MarkSent(ctx context.Context, id string, at time.Time) error {
	return r.s.execOne(ctx, `UPDATE mail_outbox SET sent_at = ?, body_html = '', body_text = '' WHERE id = ?`,
		millis(at), id)
}

// MarkFailed records the attempt; a mail given up keeps no body either.
func (r outboxRepo) MarkFailed(ctx context.Context, id string, errText string, next time.Time, giveUp bool) error {
	q := `UPDATE mail_outbox SET last_error = ?, next_attempt = ?, given_up = ?`
	if giveUp {
		q += `, body_html = '', body_text = ''`
	}
	return r.s.execOne(ctx, q+` WHERE id = ?`, errText, millis(next), giveUp, id)
}

func (r outboxRepo) Defer(ctx context.Context, id string, next time.Time) error {
	return r.s.execOne(ctx, `UPDATE mail_outbox SET next_attempt = ?, attempts = attempts - 1
		WHERE id = ? AND sent_at IS NULL AND NOT given_up`, millis(next), id)
}

func (r outboxRepo) Get(ctx context.Context, id string) (*store.Mail, error) {
	row, err := get(ctx, r.s, scanMail, `SELECT `+mailColumns+` FROM mail_outbox WHERE id = ?`, id)
	if err != nil {
		return nil, err
	}
	return r.open(row)
}

func (r outboxRepo) Backlog(ctx context.Context) (int, error) {
	return r.s.count(ctx, `SELECT COUNT(*) FROM mail_outbox WHERE sent_at IS NULL AND NOT given_up AND kind = ''`)
}
