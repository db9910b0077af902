package domain

import (
	"net/mail"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// passwordSpecials are the special characters a password needs one of (with the backtick).
const passwordSpecials = "!@#$%^&*()_+-=[]{};':\"\\|,.<>/?~`"

// MaxPasswordBytes bounds a password: bcrypt reads at most 72 bytes, and refusing longer ones
// keeps two different long passwords from sharing one hash.
const MaxPasswordBytes = 72

// ValidPassword reports whether p has at least 8 characters with an upper-case letter, a
// lower-case letter, a digit and one of passwordSpecials.
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

// NormalizeEmail is the one form of an address that lookups, uniqueness and the lockout use:
// NFKC (full-width and other compatibility forms become plain letters, so
// "ａｄａ＠ｅｘａｍｐｌｅ．ｃｏｍ" is "ada@example.com"), lower-cased and trimmed.
func NormalizeEmail(s string) string {
	// Lower-casing can leave a string that NFKC changes again; a second pass makes the result
	// a fixed point, which uniqueness relies on.
	return strings.TrimSpace(norm.NFKC.String(strings.ToLower(norm.NFKC.String(s))))
}

// ValidEmail reports whether s is a plain address local@domain.tld, without a display name.
// A printable-ASCII address needs nothing more. An internationalised one must be in
// NormalizeEmail's form, free of invisible characters, and its letters must be of one script
// (see validInternationalEmail), so "ａｄａ@…" must be normalised first and "аda@…" with a
// Cyrillic "а" is refused.
func ValidEmail(s string) bool {
	if s == "" || len(s) > MaxEmailLength || !utf8.ValidString(s) || strings.ContainsAny(s, " \t\r\n<>\"(),;:\\[]") {
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
	if dot <= 0 || dot == len(domain)-1 || strings.Contains(domain, "..") {
		return false
	}
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
		} else if s[i] <= ' ' || s[i] == 0x7f {
			return false
		}
	}
	return ascii || validInternationalEmail(s, s[:at], domain)
}

// ValidOrganizationName reports whether a trimmed name has 2 to 100 visible characters: no
// controls (CR, LF, tab), bidi or other invisible formatting characters.
func ValidOrganizationName(s string) bool { return validDisplayName(s, 2) }

// MaxNameLength bounds a user's, organization's or key's name.
const MaxNameLength = 100

// ValidName reports whether a trimmed person or key name has 1 to 100 visible characters: no
// controls (CR, LF, tab), bidi or other invisible formatting characters.
func ValidName(s string) bool { return validDisplayName(s, 1) }

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
