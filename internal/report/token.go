package report

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"strconv"
	"strings"
	"time"
)

// TokenTTL is how long a signed report token is valid (DECISIONS 17).
const TokenTTL = 5 * time.Minute

// SessionTTL is how long a report-browsing link is valid: the token that a valid TokenTTL token
// is exchanged for, carried in the report URL's path (/reports/{org}/{task}/~<token>/...) so
// that a sandboxed report's own requests, which carry no cookie, keep it.
const SessionTTL = 2 * time.Hour

var (
	// ErrTokenInvalid: malformed, tampered with, or made for another organization or run.
	ErrTokenInvalid = errors.New("report: invalid report token")
	// ErrTokenExpired: a genuine token past its expiry.
	ErrTokenExpired = errors.New("report: report token expired")
)

// Signer makes and checks the short-lived tokens that open one run's reports. A token is
// "<expiry, Unix seconds in base 36>.<HMAC-SHA256, base64url>", about 50 URL-safe characters.
// The MAC covers the purpose, the expiry, the organization and the task, each length-prefixed so
// that no two different tuples sign the same bytes. Nothing else is in the token: the verifier already
// knows the organization and task from the URL it is checking.
type Signer struct {
	key []byte
}

// MinSecretBytes is the shortest secret NewSigner accepts.
const MinSecretBytes = 32

// NewSigner derives the token key from secret, so the service may pass a secret it also uses
// for other purposes without a report token ever being valid as anything else.
func NewSigner(secret []byte) (*Signer, error) {
	if len(secret) < MinSecretBytes {
		return nil, errors.New("report: token secret shorter than 32 bytes")
	}
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("verdict report token v1"))
	return &Signer{key: m.Sum(nil)}, nil
}

// A token's purpose is signed with it, so neither kind passes for the other: a browsing link
// cannot be traded back for a fresh one, so access still ends SessionTTL after the last token
// an authenticated member asked for.
const (
	purposeExchange = 'x' // ?token=, from GET /api/executions/{taskId}/report-token
	purposeLink     = 'l' // the ~<token> path segment of a browsing link
)

// Sign returns a token for the organization's run, valid for TokenTTL from now, to be
// exchanged for a browsing link.
func (s *Signer) Sign(orgID, taskID string, now time.Time) string {
	return s.sign(purposeExchange, orgID, taskID, now.Add(TokenTTL))
}

// SignLink returns the token of a report-browsing link, valid for SessionTTL from now.
func (s *Signer) SignLink(orgID, taskID string, now time.Time) string {
	return s.sign(purposeLink, orgID, taskID, now.Add(SessionTTL))
}

// Verify checks that token was made by Sign for this organization's run and has not expired.
func (s *Signer) Verify(token, orgID, taskID string, now time.Time) error {
	return s.verify(purposeExchange, token, orgID, taskID, now)
}

// VerifyLink checks that token was made by SignLink for this organization's run and has not
// expired.
func (s *Signer) VerifyLink(token, orgID, taskID string, now time.Time) error {
	return s.verify(purposeLink, token, orgID, taskID, now)
}

func (s *Signer) sign(purpose byte, orgID, taskID string, expiry time.Time) string {
	exp := expiry.Unix()
	return strconv.FormatInt(exp, 36) + "." + base64.RawURLEncoding.EncodeToString(s.mac(purpose, exp, orgID, taskID))
}

func (s *Signer) verify(purpose byte, token, orgID, taskID string, now time.Time) error {
	expText, macText, ok := strings.Cut(token, ".")
	// The length bounds keep the parse cheap on garbage; 8 base-36 digits reach past year 2300.
	if !ok || len(expText) == 0 || len(expText) > 8 || len(macText) != 43 {
		return ErrTokenInvalid
	}
	exp, err := strconv.ParseUint(expText, 36, 63)
	if err != nil || strings.ToLower(expText) != expText || expText[0] == '0' {
		return ErrTokenInvalid // one spelling per expiry, so a token cannot be re-spelled
	}
	mac, err := base64.RawURLEncoding.Strict().DecodeString(macText)
	if err != nil || !hmac.Equal(mac, s.mac(purpose, int64(exp), orgID, taskID)) {
		return ErrTokenInvalid
	}
	if now.Unix() >= int64(exp) {
		return ErrTokenExpired
	}
	return nil
}

func (s *Signer) mac(purpose byte, exp int64, orgID, taskID string) []byte {
	m := hmac.New(sha256.New, s.key)
	b := []byte{purpose}
	b = binary.BigEndian.AppendUint64(b, uint64(exp))
	for _, f := range []string{orgID, taskID} {
		b = binary.AppendUvarint(b, uint64(len(f)))
		b = append(b, f...)
	}
	m.Write(b)
	return m.Sum(nil)
}
