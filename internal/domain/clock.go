package domain

import (
	"crypto/rand"
	"encoding/hex"
	"time"
)

// Clock is the injectable source of time: services never call time.Now directly, so tests can
// move through lockout windows, invitation expiry and billing periods without sleeping.
type Clock func() time.Time

// SystemClock is the real clock, in UTC.
func SystemClock() time.Time { return time.Now().UTC() }

// IDGen is the injectable source of object identifiers.
type IDGen func() string

// NewID returns a random 24-hex-character object identifier (12 random bytes).
func NewID() string { return RandomHex(12) }

// RandomHex returns n random bytes as 2n hex characters.
func RandomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("crypto/rand failed: " + err.Error())
	}
	return hex.EncodeToString(b)
}

// IsObjectID reports whether s has the shape of an identifier made by NewID.
func IsObjectID(s string) bool {
	if len(s) != 24 {
		return false
	}
	return IsHex(s)
}

// IsHex reports whether s is non-empty lower- or upper-case hexadecimal.
func IsHex(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}
