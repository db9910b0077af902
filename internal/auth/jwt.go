package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"verdict/internal/domain"
)

// DefaultTokenLifetime applies when no JWT_EXPIRY is configured.
const DefaultTokenLifetime = 24 * time.Hour

// MinSecretBytes is the shortest HS256 secret accepted: shorter ones can be brute-forced from
// any issued token.
const MinSecretBytes = 32

// maxTokenBytes bounds what Verify will parse; our tokens are a few hundred bytes.
const maxTokenBytes = 4096

// Claims is what a verified session token says.
type Claims struct {
	// ID names the session the token opened (its jti): the handle by which it is revoked. A
	// token issued before tokens carried one is named by a hash of the token ("h." and 22
	// characters), so it can be revoked too.
	ID             string
	UserID         string
	OrganizationID string
	Role           domain.Role
	IssuedAt       time.Time
	ExpiresAt      time.Time
}

// wireClaims is the token payload: userId, organizationId, role, jti, iat, exp.
type wireClaims struct {
	UserID         string      `json:"userId"`
	OrganizationID string      `json:"organizationId"`
	Role           domain.Role `json:"role"`
	jwt.RegisteredClaims
}

// Tokens issues and verifies HS256 session tokens.
type Tokens struct {
	secret   []byte
	lifetime time.Duration
	clock    domain.Clock
	parser   *jwt.Parser

	// verified keeps the claims of tokens verified before, by token: a token's signature and
	// claims never change, so until it expires it verifies the same way, and every request
	// carries one (parsing it was a tenth of a list request's CPU).
	mu       sync.RWMutex
	verified map[string]Claims
	// revoked holds the IDs of the sessions ended before their expiry (signed out), with that
	// expiry, under mu: Verify refuses their tokens. An entry lives until its token would have
	// expired anyway; pruneAt is the size at which Revoke next drops the expired ones.
	revoked map[string]time.Time
	pruneAt int
}

// maxVerifiedTokens bounds Tokens.verified (a few hundred bytes an entry).
const maxVerifiedTokens = 4096

// NewTokens returns a token issuer signing with secret (at least MinSecretBytes). A zero
// lifetime means DefaultTokenLifetime.
func NewTokens(secret []byte, lifetime time.Duration, clock domain.Clock) (*Tokens, error) {
	if len(secret) < MinSecretBytes {
		return nil, fmt.Errorf("auth: JWT secret has %d bytes, need at least %d", len(secret), MinSecretBytes)
	}
	if lifetime < 0 {
		return nil, fmt.Errorf("auth: negative token lifetime %v", lifetime)
	}
	if lifetime == 0 {
		lifetime = DefaultTokenLifetime
	}
	return &Tokens{
		secret:   append([]byte(nil), secret...),
		lifetime: lifetime,
		clock:    clock,
		verified: make(map[string]Claims),
		revoked:  make(map[string]time.Time),
		pruneAt:  minPruneAt,
		parser: jwt.NewParser(
			// Pinning the method is what rejects "none" and algorithm-confusion tokens.
			jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
			jwt.WithExpirationRequired(),
			jwt.WithTimeFunc(clock),
			// One encoding per token: no variants of a signature that decode alike.
			jwt.WithStrictDecoding(),
		),
	}, nil
}

// minPruneAt is the size of the revoked set below which Revoke does not look for expired entries.
const minPruneAt = 1024

// Issue signs a token for the user, valid for the configured lifetime from now, under a new
// random ID (128 bits).
func (t *Tokens) Issue(userID, orgID string, role domain.Role) (string, error) {
	if userID == "" || orgID == "" || !role.Valid() {
		return "", fmt.Errorf("auth: cannot issue a token for user %q, organization %q, role %q", userID, orgID, role)
	}
	now := t.clock()
	c := wireClaims{
		UserID:         userID,
		OrganizationID: orgID,
		Role:           role,
		RegisteredClaims: jwt.RegisteredClaims{
			ID:        rand.Text(),
			IssuedAt:  jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(t.lifetime)),
		},
	}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(t.secret)
}

var (
	errTokenExpired = domain.Unauthorized("Invalid or expired token", "The token has expired")
	errTokenInvalid = domain.Unauthorized("Invalid or expired token", "The token is invalid")
	errTokenRevoked = domain.Unauthorized("Invalid or expired token", "The token was revoked (signed out)")
)

// Verify checks signature, algorithm and expiry, that the claims name a user, an organization
// and a valid role, and that the token's session was not revoked. Failures are 401
// *domain.Error values.
func (t *Tokens) Verify(token string) (Claims, error) {
	t.mu.RLock()
	c, ok := t.verified[token]
	_, revoked := t.revoked[c.ID] // c.ID is "" when not cached, which is never revoked
	t.mu.RUnlock()
	if ok && t.clock().Before(c.ExpiresAt) {
		if revoked {
			return Claims{}, errTokenRevoked
		}
		return c, nil
	}
	c, err := t.verify(token)
	if err != nil {
		return c, err
	}
	t.mu.Lock()
	if _, ok := t.verified[token]; !ok && len(t.verified) >= maxVerifiedTokens {
		for k := range t.verified { // an arbitrary one makes room
			delete(t.verified, k)
			break
		}
	}
	t.verified[token] = c
	_, revoked = t.revoked[c.ID]
	t.mu.Unlock()
	if revoked {
		return Claims{}, errTokenRevoked
	}
	return c, nil
}

// Revoke ends the session id before its expiry, in this process: Verify refuses its tokens from
// now on. It reports whether the session was not known as revoked before (an expired one never
// is: it has ended anyway). Other processes learn of it from wherever the caller recorded it.
func (t *Tokens) Revoke(id string, expiresAt time.Time) bool {
	now := t.clock()
	if id == "" || !now.Before(expiresAt) {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.revoked[id]; ok {
		return false
	}
	if len(t.revoked) >= t.pruneAt {
		for k, exp := range t.revoked {
			if !now.Before(exp) {
				delete(t.revoked, k)
			}
		}
		t.pruneAt = max(2*len(t.revoked), minPruneAt)
	}
	t.revoked[id] = expiresAt
	return true
}

// Revoked reports whether the session id was revoked (and has not expired since).
func (t *Tokens) Revoked(id string) bool {
	t.mu.RLock()
	exp, ok := t.revoked[id]
	t.mu.RUnlock()
	return ok && t.clock().Before(exp)
}

func (t *Tokens) verify(token string) (Claims, error) {
	if len(token) > maxTokenBytes || !isTokenText(token) {
		return Claims{}, errTokenInvalid
	}
	var c wireClaims
	_, err := t.parser.ParseWithClaims(token, &c, func(*jwt.Token) (any, error) { return t.secret, nil })
	switch {
	case errors.Is(err, jwt.ErrTokenExpired):
		return Claims{}, errTokenExpired
	case err != nil:
		return Claims{}, errTokenInvalid
	case c.UserID == "" || c.OrganizationID == "" || !c.Role.Valid() || c.IssuedAt == nil:
		return Claims{}, errTokenInvalid
	}
	id := c.ID
	if id == "" {
		id = legacyID(token)
	}
	return Claims{
		ID:             id,
		UserID:         c.UserID,
		OrganizationID: c.OrganizationID,
		Role:           c.Role,
		IssuedAt:       c.IssuedAt.Time,
		ExpiresAt:      c.ExpiresAt.Time,
	}, nil
}

// legacyID names the session of a token issued without a jti: a hash of the token itself.
func legacyID(token string) string {
	sum := sha256.Sum256([]byte(token))
	return "h." + base64.RawURLEncoding.EncodeToString(sum[:16])
}

// isTokenText reports whether s holds only base64url characters and dots. Go's base64
// decoder skips CR and LF even in strict mode, so without this check a valid token with line
// breaks inside its signature would verify too.
func isTokenText(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}
