package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"

	"verdict/internal/domain"
	"verdict/internal/store"
)

func (s *Store) Notifications() store.NotificationRepo { return notificationRepo{s} }

type notificationRepo struct{ s *Store }

const notificationColumns = `id, organization_id, project_id, kind, url_cipher, host, secret_cipher, rules, created_by, created_at`

func scanNotification(r scanner) (*domain.Notification, error) {
	var n domain.Notification
	var rules string
	var created int64
	if err := r.Scan(&n.ID, &n.OrganizationID, &n.ProjectID, &n.Kind, &n.URLCipher, &n.Host, &n.SecretCipher, &rules,
		&n.CreatedBy, &created); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(rules), &n.On); err != nil {
		return nil, err
	}
	n.CreatedAt = fromMillis(created)
	return &n, nil
}

// Create inserts n only if its project is the organization's, in one statement.
func (r notificationRepo) Create(ctx context.Context, n *domain.Notification) error {
	ensureID(&n.ID)
	on := n.On
	if on == nil {
		on = []string{}
	}
	rules, err := json.Marshal(on)
	if err != nil {
		return err
	}
	return r.s.execOne(ctx, `INSERT INTO notifications (`+notificationColumns+`)
		SELECT ?, organization_id, id, ?, ?, ?, ?, ?, ?, CAST(? AS BIGINT) FROM projects
		WHERE id = ? AND organization_id = ?`,
		n.ID, n.Kind, n.URLCipher, n.Host, n.SecretCipher, string(rules), n.CreatedBy, millis(n.CreatedAt),
		n.ProjectID, n.OrganizationID)
}

func (r notificationRepo) Get(ctx context.Context, orgID, id string) (*domain.Notification, error) {
	return get(ctx, r.s, scanNotification, `SELECT `+notificationColumns+` FROM notifications
		WHERE organization_id = ? AND id = ?`, orgID, id)
}

func (r notificationRepo) List(ctx context.Context, orgID, projectID string) ([]domain.Notification, error) {
	out, err := list(ctx, r.s, scanNotification, `SELECT `+notificationColumns+` FROM notifications
		WHERE organization_id = ? AND project_id = ? ORDER BY created_at, id`, orgID, projectID)
	if len(out) == 0 {
		return nil, err
	}
	return out, err
}

func (r notificationRepo) Delete(ctx context.Context, orgID, id string) (bool, error) {
	res, err := r.s.exec(ctx, `DELETE FROM notifications WHERE organization_id = ? AND id = ?`, orgID, id)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

const deliveryColumns = `id, notification_id, organization_id, event_id, event, body, status, status_code, duration_ms,
	attempts, last_error, created_at, last_attempt_at, delivered_at`

func scanDelivery(r scanner) (*domain.Delivery, error) {
	var d domain.Delivery
	var created int64
	var last, delivered sql.NullInt64
	if err := r.Scan(&d.ID, &d.NotificationID, &d.OrganizationID, &d.EventID, &d.Event, &d.Body, &d.Status, &d.StatusCode,
		&d.DurationMs, &d.Attempts, &d.LastError, &created, &last, &delivered); err != nil {
		return nil, err
	}
	d.CreatedAt = fromMillis(created)
	if last.Valid {
		t := fromMillis(last.Int64)
		d.LastAttemptAt = &t
	}
	if delivered.Valid {
		t := fromMillis(delivered.Int64)
		d.DeliveredAt = &t
	}
	return &d, nil
}

// AddDelivery inserts d only if its notification is the organization's (one statement), then
// drops the notification's deliveries older than its newest keep.
func (r notificationRepo) AddDelivery(ctx context.Context, d *domain.Delivery, keep int) error {
	ensureID(&d.ID)
	err := r.s.execOne(ctx, `INSERT INTO notification_deliveries (`+deliveryColumns+`)
		SELECT ?, id, organization_id, ?, ?, ?, ?, CAST(? AS INTEGER), CAST(? AS BIGINT), CAST(? AS INTEGER), ?,
			CAST(? AS BIGINT), CAST(? AS BIGINT), CAST(? AS BIGINT)
		FROM notifications WHERE id = ? AND organization_id = ?`,
		d.ID, d.EventID, d.Event, d.Body, d.Status, d.StatusCode, d.DurationMs, d.Attempts, d.LastError,
		millis(d.CreatedAt), nullMillis(d.LastAttemptAt), nullMillis(d.DeliveredAt), d.NotificationID, d.OrganizationID)
	if err != nil {
		return err
	}
	_, err = r.s.exec(ctx, `DELETE FROM notification_deliveries WHERE notification_id = ? AND id NOT IN (
		SELECT id FROM notification_deliveries WHERE notification_id = ? ORDER BY created_at DESC, id DESC LIMIT ?)`,
		d.NotificationID, d.NotificationID, keep)
	return err
}

func (r notificationRepo) Delivery(ctx context.Context, orgID, id string) (*domain.Delivery, error) {
	return get(ctx, r.s, scanDelivery, `SELECT `+deliveryColumns+` FROM notification_deliveries
		WHERE organization_id = ? AND id = ?`, orgID, id)
}

func (r notificationRepo) Deliveries(ctx context.Context, orgID, notificationID string, limit int) ([]domain.Delivery, error) {
	return list(ctx, r.s, scanDelivery, `SELECT `+deliveryColumns+` FROM notification_deliveries
		WHERE organization_id = ? AND notification_id = ? ORDER BY created_at DESC, id DESC LIMIT ?`,
		orgID, notificationID, limit)
}

func (r notificationRepo) UpdateDelivery(ctx context.Context, d *domain.Delivery) error {
	return r.s.execOne(ctx, `UPDATE notification_deliveries SET status = ?, status_code = ?, duration_ms = ?,
		attempts = ?, last_error = ?, created_at = ?, last_attempt_at = ?, delivered_at = ? WHERE organization_id = ? AND id = ?`,
		d.Status, d.StatusCode, d.DurationMs, d.Attempts, d.LastError, millis(d.CreatedAt), nullMillis(d.LastAttemptAt),
		nullMillis(d.DeliveredAt), d.OrganizationID, d.ID)
}
