package identity

import (
	"context"
	"errors"
	"slices"

	"verdict/internal/domain"
	"verdict/internal/store"
)

// NoPassword is the password hash of a member created by a sign-in through the organization's
// provider: no password matches it, so that member signs in only through the provider.
const NoPassword = "!sso"

var (
	errSSORequired = domain.Forbidden("SSO required",
		"This organization signs its members in through its identity provider: use single sign-on")
	errOtherOrganization = domain.Forbidden("Account belongs to another organization",
		"This e-mail address is a member of another organization, which signs it in")
)

// passwordRefused reports whether the organization refuses passwords for its members (its
// provider is required); an admin on the operator's break-glass list is let through, and
// breakGlass says so.
func (s *Service) passwordRefused(ctx context.Context, tx store.Store, u *domain.User) (refused, breakGlass bool, err error) {
	c, err := tx.SSO().Get(ctx, u.OrganizationID)
	if errors.Is(err, store.ErrNotFound) {
		return false, false, nil
	}
	if err != nil || !c.Required {
		return false, false, err
	}
	if u.Role == domain.RoleAdmin && slices.Contains(s.breakGlass, u.Email) {
		return false, true, nil
	}
	return true, false, nil
}

// signupRefused refuses a password signup into an organization that requires its provider,
// whether by an invitation (orgID) or, for a new organization, with an address of a domain
// such an organization claims.
func (s *Service) signupRefused(ctx context.Context, tx store.Store, orgID, email string) error {
	var c *domain.SSOConfig
	var err error
	if orgID != "" {
		c, err = tx.SSO().Get(ctx, orgID)
	} else {
		c, err = tx.SSO().ByDomain(ctx, domain.EmailDomain(email))
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil
	case err != nil:
		return err
	case c.Required:
		return errSSORequired
	}
	return nil
}

// ExternalSignIn opens a session for an address the organization's provider vouched for: an
// existing member signs in as themselves (a suspended one is refused, as is a member of another
// organization); an address new to Verdict becomes a member with role, if a seat is free (a full
// organization answers "User limit reached"). Each sign-in is audited with the provider's issuer.
func (s *Service) ExternalSignIn(ctx context.Context, orgID, email, name string, role domain.Role, issuer string) (*Session, error) {
	email = domain.NormalizeEmail(email)
	if !domain.ValidEmail(email) {
		return nil, errInvalidEmail
	}
	if !domain.ValidName(name) {
		name = email
	}
	var user *domain.User
	var org *domain.Organization
	now := s.clock()
	err := s.store.InTx(ctx, func(tx store.Store) error {
		if err := tx.Organizations().Lock(ctx, orgID); err != nil {
			return err
		}
		o, err := tx.Organizations().Get(ctx, orgID)
		if err != nil {
			return notFound(err, errOrgNotFound)
		}
		org = o
		u, err := tx.Users().GetByEmail(ctx, email)
		switch {
		case err == nil && u.OrganizationID != orgID:
			return errOtherOrganization
		case err == nil && u.Status != domain.UserActive:
			return errSuspended
		case err == nil:
			if err := tx.Users().UpdateLastLogin(ctx, orgID, u.ID, now); err != nil {
				return err
			}
			u.LastLoginAt = &now
			user = u
		case errors.Is(err, store.ErrNotFound):
			members, err := s.seatAvailable(ctx, tx, org, 0)
			if err != nil {
				return err
			}
			user = &domain.User{ID: s.newID(), OrganizationID: orgID, Email: email, Name: name, PasswordHash: NoPassword,
				Role: role, Status: domain.UserActive, CreatedAt: now, LastLoginAt: &now}
			if err := tx.Users().Create(ctx, user); err != nil {
				return err
			}
			if err := s.audit(ctx, tx, &Principal{OrgID: orgID, UserID: user.ID}, "sso.member_created", "user", user.ID,
				map[string]any{"email": email, "role": role, "issuer": issuer}); err != nil {
				return err
			}
			if err := s.alerts.MemberJoined(ctx, tx, org, members); err != nil {
				return err
			}
		default:
			return err
		}
		return s.audit(ctx, tx, &Principal{OrgID: orgID, UserID: user.ID}, "sso.signed_in", "user", user.ID,
			map[string]any{"email": email, "issuer": issuer})
	})
	if err != nil {
		return nil, err
	}
	token, err := s.tokens.Issue(user.ID, org.ID, user.Role)
	if err != nil {
		return nil, err
	}
	return &Session{Token: token, User: user, Org: org}, nil
}
