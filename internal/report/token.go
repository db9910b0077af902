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

// TokenTTL is how long a signed report token is valid: its link must be opened within it.
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

// Signer makes and checks the tokens that open one run's reports to one member. A token is
// "<expiry, Unix seconds in base 36>.<user ID>.<HMAC-SHA256, base64url>", about 75 URL-safe
// characters. The MAC covers the purpose, the expiry, the organization, the execution's ID and
// the user, each length-prefixed so that no two different tuples sign the same bytes. The
// execution's ID, unlike its taskId, is never reused, so a token dies with its run. The user ID
// is in the token because the URL does not name it: the verifier returns it for the caller to
// check that the user is still an active member. The organization comes from the URL and the
// execution's ID from the run the URL names.
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
	// v2: tokens bound to the user and the execution; no earlier token verifies under this key.
	m.Write([]byte("verdict report token v2"))
	return &Signer{key: m.Sum(nil)}, nil
}

// A token's purpose is signed with it, so neither kind passes for the other: a browsing link
// cannot be traded back for a fresh one, so access still ends SessionTTL after the last token
// an authenticated member asked for.
const (
	purposeExchange = 'x' // ?token=, from GET /api/executions/{taskId}/report-token
	purposeLink     = 'l' // the ~<token> path segment of a browsing link
)

// Bounds of a token's parts, so that parsing garbage stays cheap: 8 base-36 digits reach past
// year 2300; user IDs are 24 hex characters today.
const (
	maxExpDigits = 8
	maxUserID    = 64
	macChars     = 43 // 32 bytes, unpadded base64url
)

// Sign returns a token for userID to open the organization's execution execID, valid for
// TokenTTL from now, to be exchanged for a browsing link. userID must be made of letters,
// digits, '-' and '_' (it travels in URLs); Sign panics otherwise.
func (s *Signer) Sign(orgID, execID, userID string, now time.Time) string {
	return s.sign(purposeExchange, orgID, execID, userID, now.Add(TokenTTL))
}

// SignLink returns the token of userID's report-browsing link, valid for SessionTTL from now.
func (s *Signer) SignLink(orgID, execID, userID string, now time.Time) string {
	return s.sign(purposeLink, orgID, execID, userID, now.Add(SessionTTL))
}

// Verify checks that token was made by Sign for this organization's execution and has not
// expired, and returns the user it was made for.
func (s *Signer) Verify(token, orgID, execID string, now time.Time) (userID string, err error) {
	return s.verify(purposeExchange, token, orgID, execID, now)
}

// VerifyLink checks that token was made by SignLink for this organization's execution and has
// not expired, and returns the user it was made for.
func (s *Signer) VerifyLink(token, orgID, execID string, now time.Time) (userID string, err error) {
	return s.verify(purposeLink, token, orgID, execID, now)
}

func (s *Signer) sign(purpose byte, orgID, execID, userID string, expiry time.Time) string {
	if !validUserID(userID) {
		panic("report: user ID not fit for a token: " + strconv.Quote(userID))
	}
	exp := expiry.Unix()
	return strconv.FormatInt(exp, 36) + "." + userID + "." + base64.RawURLEncoding.EncodeToString(s.mac(purpose, exp, orgID, execID, userID))
}

func (s *Signer) verify(purpose byte, token, orgID, execID string, now time.Time) (string, error) {
	exp, userID, mac, err := parseToken(token)
	if err != nil {
		return "", err
	}
	// The user ID is signed as written, so it too has one spelling.
	if !hmac.Equal(mac, s.mac(purpose, exp, orgID, execID, userID)) {
		return "", ErrTokenInvalid
	}
	if now.Unix() >= exp {
		return "", ErrTokenExpired
	}
	return userID, nil
}

// Plausible reports whether token is well formed and unexpired at now: what can be told of it
// without the run it names, whose execution ID its signature covers. The report route asks
// this before it reads the run, so that garbage costs no database read; Verify and VerifyLink
// still decide.
func Plausible(token string, now time.Time) bool {
	exp, _, _, err := parseToken(token)
	return err == nil && now.Unix() < exp
}

// parseToken splits a token into its expiry, user ID and MAC, refusing every other spelling.
func parseToken(token string) (exp int64, userID string, mac []byte, err error) {
	if len(token) > maxExpDigits+maxUserID+macChars+2 {
		return 0, "", nil, ErrTokenInvalid
	}
	expText, rest, ok := strings.Cut(token, ".")
	userID, macText, ok2 := strings.Cut(rest, ".")
	if !ok || !ok2 || len(expText) == 0 || len(expText) > maxExpDigits || !validUserID(userID) || len(macText) != macChars {
		return 0, "", nil, ErrTokenInvalid
	}
	e, err := strconv.ParseUint(expText, 36, 63)
	if err != nil || strings.ToLower(expText) != expText || expText[0] == '0' {
		return 0, "", nil, ErrTokenInvalid // one spelling per expiry, so a token cannot be re-spelled
	}
	mac, err = base64.RawURLEncoding.Strict().DecodeString(macText)
	if err != nil {
		return 0, "", nil, ErrTokenInvalid
	}
	return int64(e), userID, mac, nil
}

// validUserID keeps a token URL-safe and its parts apart: no '.', nothing to escape.
func validUserID(id string) bool {
	if id == "" || len(id) > maxUserID {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

func (s *Signer) mac(purpose byte, exp int64, orgID, execID, userID string) []byte {
	m := hmac.New(sha256.New, s.key)
	b := []byte{purpose}
	b = binary.BigEndian.AppendUint64(b, uint64(exp))
	for _, f := range []string{orgID, execID, userID} {
		b = binary.AppendUvarint(b, uint64(len(f)))
		b = append(b, f...)
	}
	m.Write(b)
	return m.Sum(nil)
}
