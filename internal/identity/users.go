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
	if err := p.RequireAdmin(); err != nil {
		return nil, err
	}
	if !role.Valid() {
		return nil, domain.BadRequest("Invalid role", "role must be admin, developer or viewer")
	}
	if id == p.UserID {
		return nil, domain.BadRequest("Cannot change own role", "An admin cannot change their own role")
	}
	return s.changeMember(ctx, p, id, role != domain.RoleAdmin,
		"Cannot demote the last admin", func(tx store.Store, u *domain.User) (string, map[string]any, error) {
			if u.Role == role {
				return "", nil, nil
			}
			old := u.Role
			u.Role = role
			return "user.role_changed", map[string]any{"from": old, "to": role, "email": u.Email},
				tx.Users().UpdateRole(ctx, p.OrgID, id, role)
		})
}

// SetStatus suspends or reactivates a member (admin only; not oneself). A suspended user's
// tokens and keys stop working at once.
func (s *Service) SetStatus(ctx context.Context, p *Principal, id string, status domain.UserStatus) (*domain.User, error) {
	if err := p.RequireAdmin(); err != nil {
		return nil, err
	}
	if status != domain.UserActive && status != domain.UserSuspended {
		return nil, domain.BadRequest("Invalid status", "status must be active or suspended")
	}
	if id == p.UserID {
		return nil, domain.BadRequest("Cannot change own status", "An admin cannot suspend their own account")
	}
	u, err := s.changeMember(ctx, p, id, status == domain.UserSuspended,
		"Cannot suspend the last admin", func(tx store.Store, u *domain.User) (string, map[string]any, error) {
			old := u.Status
			var org *domain.Organization // set when a suspended member comes back
			members := 0
			if old == domain.UserSuspended && status == domain.UserActive {
				// A reactivated member takes a seat again, like one who joins.
				var err error
				if org, err = tx.Organizations().Get(ctx, p.OrgID); err != nil {
					return "", nil, err
				}
				if members, err = s.seatAvailable(ctx, tx, org, 0); err != nil {
					return "", nil, err
				}
			}
			u.Status = status
			if err := tx.Users().UpdateStatus(ctx, p.OrgID, id, status); err != nil {
				return "", nil, err
			}
			if org != nil {
				if err := s.alerts.MemberJoined(ctx, tx, org, members); err != nil {
					return "", nil, err
				}
			}
			return "user.status_changed", map[string]any{"from": old, "to": status, "email": u.Email}, nil
		})
	if err == nil && status == domain.UserSuspended {
		s.endSessions(id)
	}
	return u, err
}

// DeleteUser removes a member (admin only). Their executions and other history stay.
func (s *Service) DeleteUser(ctx context.Context, p *Principal, id string) error {
	if err := p.RequireAdmin(); err != nil {
		return err
	}
	if id == p.UserID {
		return domain.BadRequest("Cannot delete own account", "An admin cannot delete their own account")
	}
	_, err := s.changeMember(ctx, p, id, true,
		"Cannot delete the last admin", func(tx store.Store, u *domain.User) (string, map[string]any, error) {
			return "user.deleted", map[string]any{"email": u.Email, "role": u.Role}, tx.Users().Delete(ctx, p.OrgID, id)
		})
	if err == nil {
		s.endSessions(id)
	}
	return err
}

// changeMember changes another member under the organization's lock, so that two admins
// acting at once cannot leave it without an admin: when the member is an admin and the
// change takes that away (removesAdmin), it is refused with lastAdminCode if they are
// the last one. write applies the change and names its audit action ("" = nothing changed).
func (s *Service) changeMember(ctx context.Context, p *Principal, id string, removesAdmin bool,
	lastAdminCode string, write func(tx store.Store, u *domain.User) (action string, details map[string]any, err error)) (*domain.User, error) {
	var user *domain.User
	err := s.store.InTx(ctx, func(tx store.Store) error {
		if err := tx.Organizations().Lock(ctx, p.OrgID); err != nil {
			return err
		}
		u, err := tx.Users().Get(ctx, p.OrgID, id)
		if err != nil {
			return notFound(err, errUserNotFound)
		}
		if u.Role == domain.RoleAdmin && removesAdmin {
			if err := lastAdminGuard(ctx, tx, u, lastAdminCode, "The organization needs at least one active admin"); err != nil {
				return err
			}
		}
		action, details, err := write(tx, u)
		user = u
		if err != nil || action == "" {
			return err
		}
		return s.audit(ctx, tx, p, action, "user", id, details)
	})
	return user, err
}

// lastAdminGuard refuses when no active admin would be left besides u, the admin losing that
// place: a suspended admin cannot run the organization.
func lastAdminGuard(ctx context.Context, tx store.Store, u *domain.User, code, msg string) error {
	n, err := tx.Users().CountActiveByRole(ctx, u.OrganizationID, domain.RoleAdmin)
	if err != nil {
		return err
	}
	if u.Status == domain.UserActive {
		n--
	}
	if n < 1 {
		return domain.BadRequest(code, msg)
	}
	return nil
}

func (s *Service) audit(ctx context.Context, tx store.Store, p *Principal, action, targetType, targetID string, details map[string]any) error {
	return tx.Audit().Append(ctx, &domain.AuditEntry{ID: s.newID(), OrganizationID: p.OrgID, ActorID: p.UserID,
		Action: action, TargetType: targetType, TargetID: targetID, Details: details, CreatedAt: s.clock()})
}
