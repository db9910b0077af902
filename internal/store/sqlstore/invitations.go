package sqlstore

import (
	"context"
	"database/sql"
	"time"

	"verdict/internal/domain"
)

type invitationRepo struct{ s *Store }

const invitationColumns = `id, organization_id, email, role, status, token_hash, invited_by, invited_by_name,
	expires_at, created_at, accepted_at`

func scanInvitation(r scanner) (*domain.Invitation, error) {
	var inv domain.Invitation
	var expires, created int64
	var accepted sql.NullInt64
	if err := r.Scan(&inv.ID, &inv.OrganizationID, &inv.Email, &inv.Role, &inv.Status, &inv.TokenHash,
		&inv.InvitedBy, &inv.InvitedByName, &expires, &created, &accepted); err != nil {
		return nil, err
	}
	inv.ExpiresAt = fromMillis(expires)
	inv.CreatedAt = fromMillis(created)
	inv.AcceptedAt = timePtr(accepted)
	return &inv, nil
}

// Create stores inv with its e-mail normalised (and sets inv.Email to it).
func (r invitationRepo) Create(ctx context.Context, inv *domain.Invitation) error {
	ensureID(&inv.ID)
	inv.Email = domain.NormalizeEmail(inv.Email)
	_, err := r.s.exec(ctx, `INSERT INTO invitations (`+invitationColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		inv.ID, inv.OrganizationID, inv.Email, inv.Role, inv.Status, inv.TokenHash, inv.InvitedBy, inv.InvitedByName,
		millis(inv.ExpiresAt), millis(inv.CreatedAt), nullMillis(inv.AcceptedAt))
	return err
}

func (r invitationRepo) Get(ctx context.Context, orgID, id string) (*domain.Invitation, error) {
	return get(ctx, r.s, scanInvitation,
		`SELECT `+invitationColumns+` FROM invitations WHERE organization_id = ? AND id = ?`, orgID, id)
}

func (r invitationRepo) GetByTokenHash(ctx context.Context, tokenHash string) (*domain.Invitation, error) {
	return get(ctx, r.s, scanInvitation, `SELECT `+invitationColumns+` FROM invitations WHERE token_hash = ?`, tokenHash)
}

// FindPending returns the newest pending invitation for the e-mail.
func (r invitationRepo) FindPending(ctx context.Context, orgID, email string) (*domain.Invitation, error) {
	return get(ctx, r.s, scanInvitation, `SELECT `+invitationColumns+` FROM invitations
		WHERE organization_id = ? AND email = ? AND status = ?
		ORDER BY created_at DESC, id DESC LIMIT 1`, orgID, domain.NormalizeEmail(email), domain.InvitationPending)
}

func (r invitationRepo) List(ctx context.Context, orgID string) ([]domain.Invitation, error) {
	return list(ctx, r.s, scanInvitation, `SELECT `+invitationColumns+` FROM invitations
		WHERE organization_id = ? ORDER BY created_at DESC, id DESC`, orgID)
}

// CountPendingUnexpired counts pending invitations with expiry after now (one that expires
// at now is already expired, as Invitation.EffectiveStatus says).
func (r invitationRepo) CountPendingUnexpired(ctx context.Context, orgID string, now time.Time) (int, error) {
	return r.s.count(ctx, `SELECT COUNT(*) FROM invitations WHERE organization_id = ? AND status = ? AND expires_at > ?`,
		orgID, domain.InvitationPending, millis(now))
}

// SetStatus is a compare-and-set on the status, so of two concurrent accepts only one
// succeeds. at becomes AcceptedAt when the new status is accepted.
func (r invitationRepo) SetStatus(ctx context.Context, orgID, id string, from, to domain.InvitationStatus, at time.Time) error {
	var acceptedAt any
	if to == domain.InvitationAccepted {
		acceptedAt = millis(at)
	}
	return r.s.execOne(ctx, `UPDATE invitations SET status = ?, accepted_at = COALESCE(?, accepted_at)
		WHERE organization_id = ? AND id = ? AND status = ?`, to, acceptedAt, orgID, id, from)
}
