package identity

import (
	"context"
	"errors"
	"strings"
	"time"

	"verdict/internal/auth"
	"verdict/internal/domain"
	"verdict/internal/store"
)

// SignupInput is the body of POST /api/auth/signup.
type SignupInput struct {
	Email            string
	Password         string
	Name             string
	OrganizationName string
	InviteToken      string
}

// Session is what signup and login answer: a token, the user and their organization.
type Session struct {
	Token string
	User  *domain.User
	Org   *domain.Organization
}

var (
	errMissingFields  = domain.BadRequest("Missing required fields", "email, password and name are required, and organizationName unless an inviteToken is given")
	errInvalidEmail   = domain.BadRequest("Invalid email format", "The e-mail address is not valid")
	errWeakPassword   = domain.BadRequest("Weak password", "The password needs at least 8 characters (at most 72 bytes) with an upper-case letter, a lower-case letter, a digit and a special character")
	errInvalidInvite  = domain.BadRequest("Invalid invitation token", "The invitation token is not valid")
	errExpiredInvite  = domain.BadRequest("Invitation has expired", "The invitation is older than 7 days; ask for a new one")
	errEmailTaken     = domain.Conflict("Email already registered", "An account with this e-mail already exists")
	errBadCredentials = domain.Unauthorized("Invalid credentials", "The e-mail or password is wrong")
	errSuspended      = domain.Forbidden("Account suspended", "This account is suspended")
	errUserLimit      = domain.Forbidden("User limit reached", "The organization has reached its plan's user limit")
)

// Signup creates an organization with the user as its admin, or, with an invite token, joins
// the inviting organization with the invited role.
func (s *Service) Signup(ctx context.Context, in SignupInput) (*Session, error) {
	in.Email = domain.NormalizeEmail(in.Email)
	in.Name = strings.TrimSpace(in.Name)
	in.OrganizationName = strings.TrimSpace(in.OrganizationName)
	in.InviteToken = strings.TrimSpace(in.InviteToken)
	if in.Email == "" || in.Password == "" || in.Name == "" || (in.InviteToken == "" && in.OrganizationName == "") {
		return nil, errMissingFields
	}
	if !domain.ValidEmail(in.Email) {
		return nil, errInvalidEmail
	}
	if !domain.ValidName(in.Name) {
		return nil, domain.BadRequest("Missing required fields", "name must have 1 to 100 visible characters, without control, invisible or text-direction characters")
	}
	if !domain.ValidPassword(in.Password) {
		return nil, errWeakPassword
	}
	if in.InviteToken == "" && !domain.ValidOrganizationName(in.OrganizationName) {
		return nil, domain.BadRequest("Invalid organization name", "organizationName must have 2 to 100 visible characters, without control, invisible or text-direction characters")
	}
	if in.InviteToken != "" && !domain.IsInviteToken(in.InviteToken) {
		return nil, errInvalidInvite
	}
	// Hash before the transaction: bcrypt takes tens of milliseconds and must not hold locks.
	hash, err := auth.HashPassword(in.Password)
	if err != nil {
		return nil, err
	}
	now := s.clock()
	user := &domain.User{ID: s.newID(), Email: in.Email, Name: in.Name, PasswordHash: hash,
		Status: domain.UserActive, CreatedAt: now}
	var org *domain.Organization
	members := 0 // active members of the invitation's organization before this one joins
	err = s.store.InTx(ctx, func(tx store.Store) error {
		if _, err := tx.Users().GetByEmail(ctx, in.Email); err == nil {
			return errEmailTaken
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if in.InviteToken != "" {
			inv, o, err := s.usableInvitation(ctx, tx, in.InviteToken, errInvalidInvite, errExpiredInvite)
			if err != nil {
				return err
			}
			if inv.Email != in.Email {
				return domain.BadRequest("Invalid invitation token", "The invitation was sent to a different e-mail address")
			}
			if err := s.signupRefused(ctx, tx, o.ID, in.Email); err != nil {
				return err
			}
			if members, err = s.seatAvailable(ctx, tx, o, 0); err != nil {
				return err
			}
			if err := tx.Invitations().SetStatus(ctx, o.ID, inv.ID, domain.InvitationPending, domain.InvitationAccepted, now); err != nil {
				return notFound(err, errInvalidInvite)
			}
			org, user.OrganizationID, user.Role = o, o.ID, inv.Role
		} else {
			if err := s.signupRefused(ctx, tx, "", in.Email); err != nil {
				return err
			}
			org = &domain.Organization{ID: s.newID(), Name: in.OrganizationName, Slug: domain.Slugify(in.OrganizationName),
				Plan: s.defaultPlan, CreatedAt: now}
			if err := tx.Organizations().Create(ctx, org); err != nil {
				return err
			}
			user.OrganizationID, user.Role = org.ID, domain.RoleAdmin
		}
		if err := tx.Users().Create(ctx, user); err != nil {
			if errors.Is(err, store.ErrConflict) {
				return errEmailTaken
			}
			return err
		}
		if in.InviteToken != "" {
			if err := s.audit(ctx, tx, &Principal{OrgID: org.ID, UserID: user.ID}, "invitation.accepted", "user", user.ID,
				map[string]any{"email": user.Email, "role": user.Role}); err != nil {
				return err
			}
			if err := s.alerts.MemberJoined(ctx, tx, org, members); err != nil {
				return err
			}
		}
		return s.mailer.Welcome(ctx, tx.Outbox(), user, org)
	})
	if err != nil {
		return nil, err
	}
	s.mailer.Sent()
	token, err := s.tokens.Issue(user.ID, org.ID, user.Role)
	if err != nil {
		return nil, err
	}
	return &Session{Token: token, User: user, Org: org}, nil
}

// usableInvitation finds the pending, unexpired invitation of a token, with its organization.
func (s *Service) usableInvitation(ctx context.Context, tx store.Store, token string, invalid, expired *domain.Error) (*domain.Invitation, *domain.Organization, error) {
	inv, err := tx.Invitations().GetByTokenHash(ctx, auth.HashToken(token))
	if err != nil {
		return nil, nil, notFound(err, invalid)
	}
	switch inv.EffectiveStatus(s.clock()) {
	case domain.InvitationPending:
	case domain.InvitationExpired:
		return nil, nil, expired
	default:
		return nil, nil, invalid
	}
	if err := tx.Organizations().Lock(ctx, inv.OrganizationID); err != nil {
		return nil, nil, err
	}
	org, err := tx.Organizations().Get(ctx, inv.OrganizationID)
	if err != nil {
		return nil, nil, notFound(err, domain.NotFound("Organization not found", "The inviting organization no longer exists"))
	}
	return inv, org, nil
}

// seatAvailable checks that one more member fits the plan and returns the active members (the
// count Alerts.MemberJoined takes); reserved counts pending invitations that already hold a seat.
func (s *Service) seatAvailable(ctx context.Context, tx store.Store, org *domain.Organization, reserved int) (int, error) {
	active, err := tx.Users().CountActive(ctx, org.ID)
	if err != nil {
		return 0, err
	}
	if !domain.Allows(int64(org.Limits().MaxUsers), int64(active+reserved)) {
		return 0, errUserLimit
	}
	return active, nil
}

// Login checks the credentials, honouring the lockout, and opens a session.
func (s *Service) Login(ctx context.Context, email, password string) (*Session, error) {
	email = domain.NormalizeEmail(email)
	if email == "" || password == "" {
		return nil, domain.BadRequest("Missing credentials", "email and password are required")
	}
	locked, retry, err := s.lockout.Check(ctx, email)
	if err != nil {
		return nil, err
	}
	if locked {
		return nil, lockedError(retry)
	}
	user, err := s.store.Users().GetByEmail(ctx, email)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	if user == nil || len(password) > domain.MaxPasswordBytes {
		auth.DummyCheck(password) // same cost as a real check: timing must not tell which e-mails exist
		return nil, s.failedLogin(ctx, email)
	}
	if !auth.CheckPassword(user.PasswordHash, password) {
		return nil, s.failedLogin(ctx, email)
	}
	if user.Status != domain.UserActive {
		return nil, errSuspended
	}
	refused, breakGlass, err := s.passwordRefused(ctx, s.store, user)
	if err != nil {
		return nil, err
	}
	if refused {
		return nil, errSSORequired
	}
	if breakGlass {
		if err := s.audit(ctx, s.store, &Principal{OrgID: user.OrganizationID, UserID: user.ID}, "sso.break_glass_sign_in",
			"user", user.ID, map[string]any{"email": user.Email}); err != nil {
			return nil, err
		}
	}
	if err := s.lockout.Succeed(ctx, email); err != nil {
		return nil, err
	}
	now := s.clock()
	if err := s.store.Users().UpdateLastLogin(ctx, user.OrganizationID, user.ID, now); err != nil {
		return nil, err
	}
	user.LastLoginAt = &now
	org, err := s.store.Organizations().Get(ctx, user.OrganizationID)
	if err != nil {
		return nil, notFound(err, domain.NotFound("User or organization not found", "The user's organization no longer exists"))
	}
	token, err := s.tokens.Issue(user.ID, org.ID, user.Role)
	if err != nil {
		return nil, err
	}
	return &Session{Token: token, User: user, Org: org}, nil
}

// failedLogin counts the failure; the failure that locks still answers 401 (with 0 attempts
// remaining), and the next attempt gets 429 from the lockout check.
func (s *Service) failedLogin(ctx context.Context, email string) error {
	remaining, _, _, err := s.lockout.Fail(ctx, email)
	if err != nil {
		return err
	}
	return errBadCredentials.With("attemptsRemaining", max(remaining, 0))
}

func lockedError(retry time.Duration) *domain.Error {
	secs := int((retry + time.Second - 1) / time.Second)
	return domain.TooMany("Account temporarily locked", "Too many failed logins; try again later").With("retryAfter", secs)
}
