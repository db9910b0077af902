package sqlstore

import (
	"context"
	"encoding/json"

	"verdict/internal/domain"
)

type auditRepo struct{ s *Store }

const auditColumns = `id, organization_id, actor_id, action, target_type, target_id, details, created_at`

func scanAudit(r scanner) (*domain.AuditEntry, error) {
	var e domain.AuditEntry
	var details string
	var created int64
	if err := r.Scan(&e.ID, &e.OrganizationID, &e.ActorID, &e.Action, &e.TargetType, &e.TargetID, &details,
		&created); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(details), &e.Details); err != nil {
		return nil, err
	}
	e.CreatedAt = fromMillis(created)
	return &e, nil
}

func (r auditRepo) Append(ctx context.Context, e *domain.AuditEntry) error {
	ensureID(&e.ID)
	details, err := json.Marshal(e.Details)
	if err != nil {
		return err
	}
	_, err = r.s.exec(ctx, `INSERT INTO audit_log (`+auditColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		e.ID, e.OrganizationID, e.ActorID, e.Action, e.TargetType, e.TargetID, string(details), millis(e.CreatedAt))
	return err
}

// List returns the newest limit entries, newest first (entries of one millisecond in reverse
// order of appending); limit <= 0 returns them all.
func (r auditRepo) List(ctx context.Context, orgID string, limit int) ([]domain.AuditEntry, error) {
	q := `SELECT ` + auditColumns + ` FROM audit_log WHERE organization_id = ? ORDER BY created_at DESC, seq DESC`
	if limit <= 0 {
		return list(ctx, r.s, scanAudit, q, orgID)
	}
	return list(ctx, r.s, scanAudit, q+` LIMIT ?`, orgID, limit)
}
