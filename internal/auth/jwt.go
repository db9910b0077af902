package auth

import (
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
	UserID         string
	OrganizationID string
	Role           domain.Role
	IssuedAt       time.Time
	ExpiresAt      time.Time
}

// wireClaims is the token payload: userId, organizationId, role, iat, exp.
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

// Issue signs a token for the user, valid for the configured lifetime from now.
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
			IssuedAt:  jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(t.lifetime)),
		},
	}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(t.secret)
}

var (
	errTokenExpired = domain.Unauthorized("Invalid or expired token", "The token has expired")
	errTokenInvalid = domain.Unauthorized("Invalid or expired token", "The token is invalid")
)

// Verify checks signature, algorithm and expiry, and that the claims name a user, an
// organization and a valid role. Failures are 401 *domain.Error values.
func (t *Tokens) Verify(token string) (Claims, error) {
	t.mu.RLock()
	c, ok := t.verified[token]
	t.mu.RUnlock()
	if ok && t.clock().Before(c.ExpiresAt) {
		return c, nil
	}
	c, err := t.verify(token)
	if err == nil {
		t.mu.Lock()
		if _, ok := t.verified[token]; !ok && len(t.verified) >= maxVerifiedTokens {
			for k := range t.verified { // an arbitrary one makes room
				delete(t.verified, k)
				break
			}
		}
		t.verified[token] = c
		t.mu.Unlock()
	}
	return c, err
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
	return Claims{
		UserID:         c.UserID,
		OrganizationID: c.OrganizationID,
		Role:           c.Role,
		IssuedAt:       c.IssuedAt.Time,
		ExpiresAt:      c.ExpiresAt.Time,
	}, nil
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
