package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"verdict/internal/domain"
)

// apiKeyLen is len("pk_live_") + 64 hex characters.
const apiKeyLen = len(domain.APIKeyPrefix) + 64

// apiKeyDisplayLen is how much of a key is kept in clear to tell keys apart in listings.
const apiKeyDisplayLen = 12

// NewAPIKey returns a fresh API key value (shown to its owner once), its display prefix and
// the hash to store. 32 random bytes make the value unguessable, so a fast unsalted SHA-256
// is enough to protect it at rest and lets a request look its key up by hash.
func NewAPIKey() (value, prefix, hash string) {
	value = domain.APIKeyPrefix + randomHex32()
	return value, value[:apiKeyDisplayLen], HashAPIKey(value)
}

// HashAPIKey returns the stored form of an API key value: hex SHA-256.
func HashAPIKey(value string) string { return sha256Hex(value) }

// LooksLikeAPIKey reports whether value has the shape NewAPIKey makes: "pk_live_" and 64
// lower-case hex characters. It saves a store lookup for anything else.
func LooksLikeAPIKey(value string) bool {
	hexPart, ok := strings.CutPrefix(value, domain.APIKeyPrefix)
	return ok && len(value) == apiKeyLen && isLowerHex(hexPart)
}

// NewInviteToken returns a fresh invitation token (64 hex characters, sent by e-mail) and the
// hash to store.
func NewInviteToken() (token, hash string) {
	token = randomHex32()
	return token, HashToken(token)
}

// HashToken returns the stored form of an invitation token: hex SHA-256.
func HashToken(token string) string { return sha256Hex(token) }

func randomHex32() string {
	var b [32]byte
	rand.Read(b[:]) // never fails: crypto/rand aborts the program instead
	return hex.EncodeToString(b[:])
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
