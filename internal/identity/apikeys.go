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

// CreateAPIKey makes a key for the caller; the value is returned only here.
func (s *Service) CreateAPIKey(ctx context.Context, p *Principal, name string) (*domain.APIKey, string, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return nil, "", domain.BadRequest("Missing required fields", "name is required")
	}
	if !domain.ValidName(name) {
		return nil, "", domain.BadRequest("Invalid name", "name must have 1 to 100 visible characters, without control, invisible or text-direction characters")
	}
	value, prefix, hash := auth.NewAPIKey()
	k := &domain.APIKey{ID: s.newID(), OrganizationID: p.OrgID, UserID: p.UserID, Name: name,
		Prefix: prefix, Hash: hash, CreatedAt: s.clock()}
	err := s.store.InTx(ctx, func(tx store.Store) error {
		if err := tx.APIKeys().Create(ctx, k); err != nil {
			return err
		}
		return s.audit(ctx, tx, p, "apikey.created", "apikey", k.ID, map[string]any{"name": name, "prefix": prefix})
	})
	if err != nil {
		return nil, "", err
	}
	return k, value, nil
}

// ListAPIKeys lists the caller's keys, or with all the organization's (admin only).
func (s *Service) ListAPIKeys(ctx context.Context, p *Principal, all bool) ([]domain.APIKey, error) {
	if all {
		if !p.IsAdmin() {
			return nil, errForbidden
		}
		return s.store.APIKeys().List(ctx, p.OrgID)
	}
	return s.store.APIKeys().ListByUser(ctx, p.OrgID, p.UserID)
}

var errKeyNotFound = domain.NotFound("API key not found", "No such API key")

// RevokeAPIKey deletes a key at once: the caller's own, or any of the organization's for an
// admin.
func (s *Service) RevokeAPIKey(ctx context.Context, p *Principal, id string) error {
	keys, err := s.ListAPIKeys(ctx, p, p.IsAdmin())
	if err != nil {
		return err
	}
	for _, k := range keys {
		if k.ID == id {
			err := s.store.InTx(ctx, func(tx store.Store) error {
				if err := tx.APIKeys().Delete(ctx, p.OrgID, id); err != nil {
					return notFound(err, errKeyNotFound)
				}
				return s.audit(ctx, tx, p, "apikey.revoked", "apikey", id, map[string]any{"name": k.Name,
					"prefix": k.Prefix, "ownerId": k.UserID})
			})
			if err != nil {
				return err
			}
			s.endKeySessions(id) // its sockets stop hearing the organization's events now
			return nil
		}
	}
	return errKeyNotFound
}

var (
	errInvalidAPIKey = domain.Unauthorized("Invalid API key", "The API key is unknown or revoked")
	errAuthRequired  = domain.Unauthorized("Authentication required", "Send a bearer token or an API key")
)

// keyTouchInterval bounds how often a key's lastUsedAt is written: a CI key used on every
// request must not turn each read into a write.
const keyTouchInterval = time.Minute

// AuthenticateKey resolves an API key to its owner as they are now.
func (s *Service) AuthenticateKey(ctx context.Context, value string) (*Principal, error) {
	if !auth.LooksLikeAPIKey(value) {
		return nil, errInvalidAPIKey
	}
	k, err := s.store.APIKeys().GetByHash(ctx, auth.HashAPIKey(value))
	if err != nil {
		return nil, notFound(err, errInvalidAPIKey)
	}
	p, err := s.principal(ctx, k.OrganizationID, k.UserID, errInvalidAPIKey)
	if err != nil {
		return nil, err
	}
	p.APIKeyID = k.ID
	now := s.clock()
	if (k.LastUsedAt == nil || now.Sub(*k.LastUsedAt) >= keyTouchInterval) && s.claimKeyTouch(k.ID, now) {
		if err := s.store.APIKeys().TouchLastUsed(ctx, k.OrganizationID, k.ID, now); err != nil {
			s.log.Warn("api key: recording last use failed", "key", k.ID, "err", err)
		}
	}
	return p, nil
}

// claimKeyTouch reports whether this request writes the key's lastUsedAt: of the requests
// that read it stale at once (a CI job's parallel calls), only the first, and then none for
// keyTouchInterval, so a busy key costs this process one write a minute.
func (s *Service) claimKeyTouch(keyID string, now time.Time) bool {
	ms := now.UnixMilli()
	for {
		prev, loaded := s.keyTouches.LoadOrStore(keyID, ms)
		if !loaded {
			return true
		}
		if ms-prev.(int64) < keyTouchInterval.Milliseconds() {
			return false
		}
		if s.keyTouches.CompareAndSwap(keyID, prev, ms) {
			return true
		}
	}
}

// AuthenticateClaims turns verified token claims into a principal, re-reading the user so a
// deleted or suspended user is refused at once and a demoted one acts with the new role.
func (s *Service) AuthenticateClaims(ctx context.Context, userID, orgID string) (*Principal, error) {
	return s.principal(ctx, orgID, userID, domain.Unauthorized("Invalid or expired token", "The user of this token no longer exists or is suspended"))
}

func (s *Service) principal(ctx context.Context, orgID, userID string, refused *domain.Error) (*Principal, error) {
	u, err := s.store.Users().Get(ctx, orgID, userID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, refused
	}
	if err != nil {
		return nil, err
	}
	if u.Status != domain.UserActive {
		return nil, refused
	}
	return &Principal{UserID: u.ID, OrgID: u.OrganizationID, Role: u.Role, User: u}, nil
}

// ErrAuthRequired is the 401 for a request without credentials.
func ErrAuthRequired() *domain.Error { return errAuthRequired }
