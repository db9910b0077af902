package domain

import (
	"net/mail"
	"strings"
	"unicode"
	"unicode/utf8"
)

// passwordSpecials is the SPEC's set of special characters (with the backtick).
const passwordSpecials = "!@#$%^&*()_+-=[]{};':\"\\|,.<>/?~`"

// MaxPasswordBytes bounds a password: bcrypt reads at most 72 bytes, and refusing longer ones
// keeps two different long passwords from sharing one hash.
const MaxPasswordBytes = 72

// ValidPassword reports whether p has at least 8 characters with an upper-case letter, a
// lower-case letter, a digit and one of the SPEC's special characters.
func ValidPassword(p string) bool {
	if utf8.RuneCountInString(p) < 8 || len(p) > MaxPasswordBytes || !utf8.ValidString(p) {
		return false
	}
	var upper, lower, digit, special bool
	for _, r := range p {
		switch {
		case r >= 'A' && r <= 'Z':
			upper = true
		case r >= 'a' && r <= 'z':
			lower = true
		case r >= '0' && r <= '9':
			digit = true
		case strings.ContainsRune(passwordSpecials, r):
			special = true
		}
	}
	return upper && lower && digit && special
}

// MaxEmailLength is the longest address accepted (RFC 5321's path limit).
const MaxEmailLength = 254

// NormalizeEmail trims and lower-cases an address so that lookups and uniqueness ignore case.
func NormalizeEmail(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

// ValidEmail reports whether s is a plain address local@domain.tld, without a display name.
func ValidEmail(s string) bool {
	if s == "" || len(s) > MaxEmailLength || strings.ContainsAny(s, " \t\r\n<>\"(),;:\\[]") {
		return false
	}
	a, err := mail.ParseAddress(s)
	if err != nil || a.Address != s || a.Name != "" {
		return false
	}
	at := strings.LastIndexByte(s, '@')
	if at < 1 {
		return false
	}
	domain := s[at+1:]
	dot := strings.LastIndexByte(domain, '.')
	return dot > 0 && dot < len(domain)-1 && !strings.Contains(domain, "..")
}

// ValidOrganizationName reports whether a trimmed name has 2 to 100 characters.
func ValidOrganizationName(s string) bool {
	n := utf8.RuneCountInString(strings.TrimSpace(s))
	return n >= 2 && n <= 100 && utf8.ValidString(s)
}

// MaxNameLength bounds a user's or key's name.
const MaxNameLength = 100

// ValidName reports whether a trimmed person or key name has 1 to 100 printable characters.
func ValidName(s string) bool {
	s = strings.TrimSpace(s)
	n := utf8.RuneCountInString(s)
	if n < 1 || n > MaxNameLength || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// Slugify derives a URL-safe slug from a name: lower-case letters and digits separated by
// single hyphens; "org" when nothing is left.
func Slugify(name string) string {
	var b strings.Builder
	hyphen := false
	for _, r := range strings.ToLower(name) {
		if r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			b.WriteRune(r)
			hyphen = false
		} else if b.Len() > 0 && !hyphen {
			b.WriteByte('-')
			hyphen = true
		}
	}
	s := strings.TrimSuffix(b.String(), "-")
	if s == "" {
		return "org"
	}
	if len(s) > 64 {
		s = strings.TrimSuffix(s[:64], "-")
	}
	return s
}

// IsInviteToken reports whether s is 64 hex characters.
func IsInviteToken(s string) bool { return len(s) == 64 && IsHex(s) }
