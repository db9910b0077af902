package identity

import (
	"context"
	"errors"
	"strings"

	"verdict/internal/auth"
	"verdict/internal/domain"
	"verdict/internal/store"
)

var errInvitationNotFound = domain.NotFound("Invitation not found", "No such invitation in your organization")

// CreatedInvitation is a new invitation with the facts the inviter sees.
type CreatedInvitation struct {
	Invitation *domain.Invitation
	UserExists bool
}

// ActionType is "join" for an e-mail that already has an account, else "signup".
func (c *CreatedInvitation) ActionType() string {
	if c.UserExists {
		return "join"
	}
	return "signup"
}

// Invite creates an invitation (admin only) and enqueues its e-mail. The token goes only into
// the e-mail; the database keeps its SHA-256.
func (s *Service) Invite(ctx context.Context, p *Principal, email string, role domain.Role) (*CreatedInvitation, error) {
	if err := p.RequireAdmin(); err != nil {
		return nil, err
	}
	email = domain.NormalizeEmail(email)
	if email == "" || role == "" {
		return nil, domain.BadRequest("Missing required fields", "email and role are required")
	}
	if !domain.ValidEmail(email) {
		return nil, errInvalidEmail
	}
	if !role.Valid() {
		return nil, domain.BadRequest("Invalid role", "role must be admin, developer or viewer")
	}
	token, hash := auth.NewInviteToken()
	now := s.clock()
	out := &CreatedInvitation{}
	err := s.store.InTx(ctx, func(tx store.Store) error {
		if err := tx.Organizations().Lock(ctx, p.OrgID); err != nil {
			return err
		}
		org, err := tx.Organizations().Get(ctx, p.OrgID)
		if err != nil {
			return notFound(err, errOrgNotFound)
		}
		existing, err := tx.Users().GetByEmail(ctx, email)
		switch {
		case err == nil && existing.OrganizationID == p.OrgID:
			return domain.Conflict("User already in organization", "This e-mail already belongs to a member")
		case err == nil:
			out.UserExists = true
		case !errors.Is(err, store.ErrNotFound):
			return err
		}
		if pending, err := tx.Invitations().FindPending(ctx, p.OrgID, email); err == nil && pending.EffectiveStatus(now) == domain.InvitationPending {
			return domain.Conflict("Invitation already sent", "A pending invitation for this e-mail exists")
		} else if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		reserved, err := tx.Invitations().CountPendingUnexpired(ctx, p.OrgID, now)
		if err != nil {
			return err
		}
		if _, err := s.seatAvailable(ctx, tx, org, reserved); err != nil {
			return err
		}
		inv := &domain.Invitation{ID: s.newID(), OrganizationID: p.OrgID, Email: email, Role: role,
			Status: domain.InvitationPending, TokenHash: hash, InvitedBy: p.UserID, InvitedByName: p.User.Name,
			ExpiresAt: now.Add(domain.InvitationTTL), CreatedAt: now}
		if err := tx.Invitations().Create(ctx, inv); err != nil {
			return err
		}
		out.Invitation = inv
		if err := s.audit(ctx, tx, p, "invitation.created", "invitation", inv.ID,
			map[string]any{"email": email, "role": role}); err != nil {
			return err
		}
		return s.mailer.Invitation(ctx, tx.Outbox(), inv, org, token)
	})
	if err != nil {
		return nil, err
	}
	s.mailer.Sent()
	return out, nil
}

// ListInvitations lists the organization's invitations, newest first (admin only).
func (s *Service) ListInvitations(ctx context.Context, p *Principal) ([]domain.Invitation, error) {
	if err := p.RequireAdmin(); err != nil {
		return nil, err
	}
	return s.store.Invitations().List(ctx, p.OrgID)
}

// RevokeInvitation revokes a pending invitation (admin only); its token stops validating.
func (s *Service) RevokeInvitation(ctx context.Context, p *Principal, id string) error {
	if err := p.RequireAdmin(); err != nil {
		return err
	}
	if !domain.IsObjectID(id) {
		return domain.BadRequest("Invalid invitation ID", "The invitation ID is malformed")
	}
	inv, err := s.store.Invitations().Get(ctx, p.OrgID, id)
	if err != nil {
		return notFound(err, errInvitationNotFound)
	}
	if inv.Status != domain.InvitationPending {
		return domain.BadRequest("Invitation is not pending", "Only a pending invitation can be revoked")
	}
	return s.store.InTx(ctx, func(tx store.Store) error {
		err := tx.Invitations().SetStatus(ctx, p.OrgID, id, domain.InvitationPending, domain.InvitationRevoked, s.clock())
		if err != nil {
			return notFound(err, errInvitationNotFound)
		}
		return s.audit(ctx, tx, p, "invitation.revoked", "invitation", id, map[string]any{"email": inv.Email, "role": inv.Role})
	})
}

// InvitationPreview is what the public validate route tells about a token.
type InvitationPreview struct {
	OrganizationName string
	Role             domain.Role
	InviterName      string
	Email            string
	UserExists       bool
}

// ValidateInvitation checks a token without consuming it (public).
func (s *Service) ValidateInvitation(ctx context.Context, token string) (*InvitationPreview, error) {
	if !domain.IsInviteToken(token) {
		return nil, domain.BadRequest("Invalid token format", "The token must be 64 hexadecimal characters").With("valid", false)
	}
	inv, org, err := s.usableInvitation(ctx, s.store, token,
		domain.NotFound("Invitation not found or already used", "The invitation does not exist or was already used"),
		domain.NotFound("Invitation has expired", "The invitation is older than 7 days"))
	if err != nil {
		var de *domain.Error
		if errors.As(err, &de) {
			return nil, de.With("valid", false)
		}
		return nil, err
	}
	_, err = s.store.Users().GetByEmail(ctx, inv.Email)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	return &InvitationPreview{OrganizationName: org.Name, Role: inv.Role, InviterName: inv.InvitedByName,
		Email: inv.Email, UserExists: err == nil}, nil
}

// Accepted is the result of accepting an invitation: the new organization and a token for it
// (the caller's old token still names the old organization).
type Accepted struct {
	Org   *domain.Organization
	User  *domain.User
	Token string
}

// AcceptInvitation moves the logged-in user into the inviting organization with the invited
// role. The invitation's e-mail must be the caller's.
func (s *Service) AcceptInvitation(ctx context.Context, p *Principal, token string) (*Accepted, error) {
	token = strings.TrimSpace(token)
	if token == "" {
		return nil, domain.BadRequest("Missing token", "token is required")
	}
	if !domain.IsInviteToken(token) {
		return nil, domain.BadRequest("Invalid token format", "The token must be 64 hexadecimal characters")
	}
	out := &Accepted{}
	err := s.store.InTx(ctx, func(tx store.Store) error {
		inv, org, err := s.usableInvitation(ctx, tx, token,
			domain.NotFound("Invalid or expired invitation", "The invitation does not exist or was already used"),
			domain.NotFound("Invitation has expired", "The invitation is older than 7 days"))
		if err != nil {
			return err
		}
		u, err := tx.Users().Get(ctx, p.OrgID, p.UserID)
		if err != nil {
			return notFound(err, domain.NotFound("User or organization not found", "The user no longer exists"))
		}
		if u.Email != inv.Email {
			return domain.Forbidden("Email mismatch", "The invitation was sent to a different e-mail address")
		}
		if u.OrganizationID == org.ID {
			return domain.Conflict("User already in organization", "You are already a member of this organization")
		}
		if err := tx.Organizations().Lock(ctx, u.OrganizationID); err != nil {
			return err
		}
		if u.Role == domain.RoleAdmin {
			admins, err := tx.Users().CountActiveByRole(ctx, u.OrganizationID, domain.RoleAdmin)
			if err != nil {
				return err
			}
			members, err := tx.Users().CountActive(ctx, u.OrganizationID)
			if err != nil {
				return err
			}
			if admins <= 1 && members > 1 {
				return domain.BadRequest("Cannot leave as the last admin", "Make another member an admin of your current organization first")
			}
		}
		members, err := s.seatAvailable(ctx, tx, org, 0)
		if err != nil {
			return err
		}
		now := s.clock()
		if err := tx.Invitations().SetStatus(ctx, org.ID, inv.ID, domain.InvitationPending, domain.InvitationAccepted, now); err != nil {
			return notFound(err, domain.NotFound("Invalid or expired invitation", "The invitation was already used"))
		}
		if err := tx.Users().MoveToOrganization(ctx, u.OrganizationID, u.ID, org.ID, inv.Role); err != nil {
			return err
		}
		u.OrganizationID, u.Role = org.ID, inv.Role
		out.Org, out.User = org, u
		if err := s.audit(ctx, tx, &Principal{OrgID: org.ID, UserID: u.ID}, "invitation.accepted", "user", u.ID,
			map[string]any{"email": u.Email, "role": inv.Role, "invitationId": inv.ID}); err != nil {
			return err
		}
		if err := s.alerts.MemberJoined(ctx, tx, org, members); err != nil {
			return err
		}
		return s.mailer.Welcome(ctx, tx.Outbox(), u, org)
	})
	if err != nil {
		return nil, err
	}
	s.mailer.Sent()
	s.endSessions(out.User.ID) // sockets opened as a member of the former organization
	if out.Token, err = s.tokens.Issue(out.User.ID, out.Org.ID, out.User.Role); err != nil {
		return nil, err
	}
	return out, nil
}
