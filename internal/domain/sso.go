package domain

import (
	"strings"
	"time"
)

// SSOConfig is an organization's OpenID Connect provider: who signs its members in, the
// e-mail domains it signs in (each claimed by one organization), the role a member it creates
// gets, and whether passwords are refused for its members.
type SSOConfig struct {
	OrganizationID string
	Issuer         string
	ClientID       string
	// ClientSecretCipher is the client secret sealed by the application; never shown.
	ClientSecretCipher string
	Domains            []string // lower case
	DefaultRole        Role
	Required           bool
	UpdatedAt          time.Time
}

// EmailDomain is the lower-case domain of an e-mail address ("" when it has none).
func EmailDomain(email string) string {
	i := strings.LastIndexByte(email, '@')
	if i < 0 {
		return ""
	}
	return strings.ToLower(email[i+1:])
}

// ValidDomain reports whether d is a DNS name of at least two labels, letters, digits and
// hyphens, lower case (as an allowed e-mail domain is stored).
func ValidDomain(d string) bool {
	if len(d) > 253 || !strings.Contains(d, ".") {
		return false
	}
	for _, label := range strings.Split(d, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}
