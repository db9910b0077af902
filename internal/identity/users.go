package identity

import (
	"context"

	"verdict/internal/domain"
	"verdict/internal/store"
)

var errUserNotFound = domain.NotFound("User not found", "No such user in your organization")

// Me returns the caller, as read to authenticate this request, with their organization and
// its active member count.
func (s *Service) Me(ctx context.Context, p *Principal) (*domain.User, *domain.Organization, int, error) {
	org, count, err := s.Organization(ctx, p)
	if err == errOrgNotFound {
		err = domain.NotFound("User or organization not found", "The organization no longer exists")
	}
	if err != nil {
		return nil, nil, 0, err
	}
	return p.User, org, count, nil
}

// ListUsers lists the caller's organization's members (all roles may view).
func (s *Service) ListUsers(ctx context.Context, p *Principal) ([]domain.User, error) {
	return s.store.Users().List(ctx, p.OrgID)
}

// GetUser returns a member of the caller's organization; another organization's user is 404.
func (s *Service) GetUser(ctx context.Context, p *Principal, id string) (*domain.User, error) {
	u, err := s.store.Users().Get(ctx, p.OrgID, id)
	return u, notFound(err, errUserNotFound)
}

// ChangeRole sets a member's role (admin only). An admin cannot change their own role, and the
// last admin cannot be demoted: the check and the write happen under the organization's lock,
// so two admins demoting each other at once cannot leave the organization without one.
func (s *Service) ChangeRole(ctx context.Context, p *Principal, id string, role domain.Role) (*domain.User, error) {
	if !p.IsAdmin() {
		return nil, errForbidden
	}
	if !role.Valid() {
		return nil, domain.BadRequest("Invalid role", "role must be admin, developer or viewer")
	}
	if id == p.UserID {
		return nil, domain.BadRequest("Cannot change own role", "An admin cannot change their own role")
	}
	var user *domain.User
	err := s.store.InTx(ctx, func(tx store.Store) error {
		if err := tx.Organizations().Lock(ctx, p.OrgID); err != nil {
			return err
		}
		u, err := tx.Users().Get(ctx, p.OrgID, id)
		if err != nil {
			return notFound(err, errUserNotFound)
		}
		if u.Role == domain.RoleAdmin && role != domain.RoleAdmin {
			if err := lastAdminGuard(ctx, tx, p.OrgID, "Cannot demote the last admin", "The organization needs at least one admin"); err != nil {
				return err
			}
		}
		if u.Role == role {
			user = u
			return nil
		}
		if err := tx.Users().UpdateRole(ctx, p.OrgID, id, role); err != nil {
			return err
		}
		old := u.Role
		u.Role = role
		user = u
		return s.audit(ctx, tx, p, "user.role_changed", "user", id, map[string]any{"from": old, "to": role, "email": u.Email})
	})
	return user, err
}

// SetStatus suspends or reactivates a member (admin only; not oneself). A suspended user's
// tokens and keys stop working at once.
func (s *Service) SetStatus(ctx context.Context, p *Principal, id string, status domain.UserStatus) (*domain.User, error) {
	if !p.IsAdmin() {
		return nil, errForbidden
	}
	if status != domain.UserActive && status != domain.UserSuspended {
		return nil, domain.BadRequest("Invalid status", "status must be active or suspended")
	}
	if id == p.UserID {
		return nil, domain.BadRequest("Cannot change own status", "An admin cannot suspend their own account")
	}
	var user *domain.User
	err := s.store.InTx(ctx, func(tx store.Store) error {
		if err := tx.Organizations().Lock(ctx, p.OrgID); err != nil {
			return err
		}
		u, err := tx.Users().Get(ctx, p.OrgID, id)
		if err != nil {
			return notFound(err, errUserNotFound)
		}
		if u.Role == domain.RoleAdmin && status == domain.UserSuspended {
			if err := lastAdminGuard(ctx, tx, p.OrgID, "Cannot suspend the last admin", "The organization needs at least one active admin"); err != nil {
				return err
			}
		}
		if err := tx.Users().UpdateStatus(ctx, p.OrgID, id, status); err != nil {
			return err
		}
		old := u.Status
		u.Status = status
		user = u
		return s.audit(ctx, tx, p, "user.status_changed", "user", id, map[string]any{"from": old, "to": status, "email": u.Email})
	})
	return user, err
}

// DeleteUser removes a member (admin only). Their executions and other history stay.
func (s *Service) DeleteUser(ctx context.Context, p *Principal, id string) error {
	if !p.IsAdmin() {
		return errForbidden
	}
	if id == p.UserID {
		return domain.BadRequest("Cannot delete own account", "An admin cannot delete their own account")
	}
	return s.store.InTx(ctx, func(tx store.Store) error {
		if err := tx.Organizations().Lock(ctx, p.OrgID); err != nil {
			return err
		}
		u, err := tx.Users().Get(ctx, p.OrgID, id)
		if err != nil {
			return notFound(err, errUserNotFound)
		}
		if u.Role == domain.RoleAdmin {
			if err := lastAdminGuard(ctx, tx, p.OrgID, "Cannot delete the last admin", "The organization needs at least one admin"); err != nil {
				return err
			}
		}
		if err := tx.Users().Delete(ctx, p.OrgID, id); err != nil {
			return err
		}
		return s.audit(ctx, tx, p, "user.deleted", "user", id, map[string]any{"email": u.Email, "role": u.Role})
	})
}

// lastAdminGuard refuses when the organization has one admin or fewer (the one being changed).
func lastAdminGuard(ctx context.Context, tx store.Store, orgID, code, msg string) error {
	n, err := tx.Users().CountByRole(ctx, orgID, domain.RoleAdmin)
	if err != nil {
		return err
	}
	if n <= 1 {
		return domain.BadRequest(code, msg)
	}
	return nil
}

func (s *Service) audit(ctx context.Context, tx store.Store, p *Principal, action, targetType, targetID string, details map[string]any) error {
	return tx.Audit().Append(ctx, &domain.AuditEntry{ID: s.newID(), OrganizationID: p.OrgID, ActorID: p.UserID,
		Action: action, TargetType: targetType, TargetID: targetID, Details: details, CreatedAt: s.clock()})
}
