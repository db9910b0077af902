package sqlstore

import (
	"context"
	"database/sql"
	"time"

	"verdict/internal/store"
)

func (s *Store) BillingEvents() store.BillingEventRepo { return billingEventRepo{s} }
func (s *Store) UsageAlerts() store.UsageAlertRepo     { return usageAlertRepo{s} }

type billingEventRepo struct{ s *Store }

const billingEventColumns = `event_id, event_type, organization_id, status, error, payload, created_at, processed_at`

func scanBillingEvent(r scanner) (*store.BillingEvent, error) {
	var e store.BillingEvent
	var org, errText sql.NullString
	var payload string
	var created, processed int64
	if err := r.Scan(&e.EventID, &e.EventType, &org, &e.Status, &errText, &payload, &created, &processed); err != nil {
		return nil, err
	}
	e.OrganizationID, e.Error, e.Payload = org.String, errText.String, []byte(payload)
	e.CreatedAt, e.ProcessedAt = fromMillis(created), fromMillis(processed)
	return &e, nil
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// Record uses ON CONFLICT DO NOTHING rather than catching the unique violation, which would
// abort a PostgreSQL transaction. A concurrent delivery of the same event waits on the key
// until the first transaction ends, then finds it taken.
func (r billingEventRepo) Record(ctx context.Context, e *store.BillingEvent) error {
	res, err := r.s.exec(ctx, `INSERT INTO billing_events (`+billingEventColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (event_id) DO NOTHING`,
		e.EventID, e.EventType, nullString(e.OrganizationID), e.Status, nullString(e.Error), string(e.Payload),
		millis(e.CreatedAt), millis(e.ProcessedAt))
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return store.ErrConflict
	}
	return nil
}

func (r billingEventRepo) SetOutcome(ctx context.Context, eventID, orgID, status, errText string) error {
	return r.s.execOne(ctx, `UPDATE billing_events SET organization_id = ?, status = ?, error = ? WHERE event_id = ?`,
		nullString(orgID), status, nullString(errText), eventID)
}

func (r billingEventRepo) Get(ctx context.Context, eventID string) (*store.BillingEvent, error) {
	return get(ctx, r.s, scanBillingEvent, `SELECT `+billingEventColumns+` FROM billing_events WHERE event_id = ?`, eventID)
}

func (r billingEventRepo) List(ctx context.Context, orgID string, limit int) ([]store.BillingEvent, error) {
	q := `SELECT ` + billingEventColumns + ` FROM billing_events WHERE organization_id = ? ORDER BY processed_at DESC, created_at DESC, event_id`
	if limit <= 0 {
		return list(ctx, r.s, scanBillingEvent, q, orgID)
	}
	return list(ctx, r.s, scanBillingEvent, q+` LIMIT ?`, orgID, limit)
}

type usageAlertRepo struct{ s *Store }

func (r usageAlertRepo) Claim(ctx context.Context, orgID, resource string, threshold int, periodStart, at time.Time) (bool, error) {
	res, err := r.s.exec(ctx, `INSERT INTO usage_alerts (organization_id, resource, threshold, period_start, created_at)
		VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`, orgID, resource, threshold, millis(periodStart), millis(at))
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}
