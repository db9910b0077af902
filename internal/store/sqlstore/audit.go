package sqlstore

import (
	"context"
	"encoding/json"
	"strings"

	"verdict/internal/domain"
)

type auditRepo struct{ s *Store }

const auditColumns = `id, organization_id, actor_id, action, target_type, target_id, details, ip, created_at`

func scanAudit(r scanner) (*domain.AuditEntry, error) {
	var e domain.AuditEntry
	var details string
	var created int64
	if err := r.Scan(&e.ID, &e.OrganizationID, &e.ActorID, &e.Action, &e.TargetType, &e.TargetID, &details,
		&e.IP, &created); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(details), &e.Details); err != nil {
		return nil, err
	}
	e.CreatedAt = fromMillis(created)
	return &e, nil
}

// Append writes e. An entry without an address takes the client address of the request in
// ctx (domain.WithClientIP), so the services need not carry it to every change they audit.
func (r auditRepo) Append(ctx context.Context, e *domain.AuditEntry) error {
	ensureID(&e.ID)
	if e.IP == "" {
		e.IP = domain.ClientIP(ctx)
	}
	details, err := json.Marshal(e.Details)
	if err != nil {
		return err
	}
	_, err = r.s.exec(ctx, `INSERT INTO audit_log (`+auditColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		e.ID, e.OrganizationID, e.ActorID, e.Action, e.TargetType, e.TargetID, string(details), e.IP, millis(e.CreatedAt))
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

func scanAuditNamed(r scanner) (*domain.AuditEntry, error) {
	var e domain.AuditEntry
	var details string
	var created int64
	if err := r.Scan(&e.ID, &e.OrganizationID, &e.ActorID, &e.Action, &e.TargetType, &e.TargetID, &details,
		&e.IP, &created, &e.ActorName); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(details), &e.Details); err != nil {
		return nil, err
	}
	e.CreatedAt = fromMillis(created)
	return &e, nil
}

// Find pages through the entries f selects, newest first. The actor's name is the member's
// current one, read beside the entry (the entry keeps only the ID, which outlives the member).
func (r auditRepo) Find(ctx context.Context, orgID string, f domain.AuditFilter) ([]domain.AuditEntry, int, error) {
	where := []string{`a.organization_id = ?`}
	args := []any{orgID}
	if f.ActorID != "" {
		where = append(where, `a.actor_id = ?`)
		args = append(args, f.ActorID)
	}
	if prefix, ok := f.ActionPrefix(); ok {
		where = append(where, `a.action LIKE ? ESCAPE '\'`)
		args = append(args, escapeLike(prefix)+"%")
	} else if f.Action != "" {
		where = append(where, `a.action = ?`)
		args = append(args, f.Action)
	}
	if !f.Since.IsZero() {
		where = append(where, `a.created_at >= ?`)
		args = append(args, millis(f.Since))
	}
	if !f.Until.IsZero() {
		where = append(where, `a.created_at < ?`)
		args = append(args, millis(f.Until))
	}
	cond := strings.Join(where, ` AND `)
	total, err := r.s.count(ctx, `SELECT COUNT(*) FROM audit_log a WHERE `+cond, args...)
	if err != nil {
		return nil, 0, err
	}
	q := `SELECT a.id, a.organization_id, a.actor_id, a.action, a.target_type, a.target_id, a.details, a.ip,
		a.created_at, COALESCE(u.name, '') FROM audit_log a
		LEFT JOIN users u ON u.id = a.actor_id AND u.organization_id = a.organization_id
		WHERE ` + cond + ` ORDER BY a.created_at DESC, a.seq DESC`
	if f.Limit > 0 {
		q += ` LIMIT ? OFFSET ?`
		args = append(args, f.Limit, max(f.Offset, 0))
	}
	entries, err := list(ctx, r.s, scanAuditNamed, q, args...)
	return entries, total, err
}
