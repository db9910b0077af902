package web

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"verdict/internal/domain"
)

// Socket tickets let a page's script connect to Socket.IO although the session's JWT sits in an
// HttpOnly cookie it cannot read. GET /session/socket-token gives the signed-in page a ticket:
// valid for a minute, for the Socket.IO handshake only (the REST API does not take it, unlike
// the session's JWT, which therefore never reaches a script), bound to the session's user and
// organization and carrying the session's ID and expiry: the socket is cut when the session
// expires or is revoked (signed out), as one opened with the JWT itself would be. The
// handshake re-reads the user, and refuses a revoked session, as for a JWT.

// socketTicketPrefix starts every ticket, so the handshake tells them from JWTs.
const socketTicketPrefix = "vst1."

// SocketTicketLifetime is how long a ticket opens a socket.
const SocketTicketLifetime = time.Minute

// SocketTickets issues and checks socket tickets under a key of their own.
type SocketTickets struct {
	key   []byte
	clock domain.Clock
}

// NewSocketTickets makes the tickets of key (derived from the JWT secret by internal/app).
func NewSocketTickets(key []byte, clock domain.Clock) *SocketTickets {
	if clock == nil {
		clock = domain.SystemClock
	}
	return &SocketTickets{key: key, clock: clock}
}

type ticketClaims struct {
	UserID    string `json:"u"`
	OrgID     string `json:"o"`
	Expires   int64  `json:"e"` // the ticket's, Unix seconds
	Session   int64  `json:"s"` // the session's expiry, Unix seconds
	SessionID string `json:"j,omitempty"`
}

// Ticket is what a valid socket ticket says.
type Ticket struct {
	UserID, OrgID string
	// SessionID is the session's ID (auth.Claims.ID): revoking the session ends the socket.
	// "" in a ticket issued before tickets carried it.
	SessionID string
	// SessionEnd is the session's expiry: the socket ends then.
	SessionEnd time.Time
}

func (t *SocketTickets) mac(payload string) string {
	m := hmac.New(sha256.New, t.key)
	m.Write([]byte("verdict socket ticket\x00" + payload))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// Issue makes a ticket for the user and organization of the session sessionID, ending at
// sessionEnd.
func (t *SocketTickets) Issue(userID, orgID, sessionID string, sessionEnd time.Time) string {
	b, _ := json.Marshal(ticketClaims{UserID: userID, OrgID: orgID, Expires: t.clock().Add(SocketTicketLifetime).Unix(),
		Session: sessionEnd.Unix(), SessionID: sessionID})
	payload := base64.RawURLEncoding.EncodeToString(b)
	return socketTicketPrefix + payload + "." + t.mac(payload)
}

// IsSocketTicket reports whether token is a ticket (not a JWT).
func IsSocketTicket(token string) bool { return strings.HasPrefix(token, socketTicketPrefix) }

// Verify checks a ticket and returns what it carries; ok is false for a forged, malformed or
// expired ticket. Whether its session was revoked is the caller's to check.
func (t *SocketTickets) Verify(ticket string) (Ticket, bool) {
	payload, mac, found := strings.Cut(strings.TrimPrefix(ticket, socketTicketPrefix), ".")
	if !IsSocketTicket(ticket) || !found || !hmac.Equal([]byte(mac), []byte(t.mac(payload))) {
		return Ticket{}, false
	}
	raw, err := base64.RawURLEncoding.DecodeString(payload)
	var c ticketClaims
	if err != nil || json.Unmarshal(raw, &c) != nil || c.UserID == "" || c.OrgID == "" {
		return Ticket{}, false
	}
	now := t.clock()
	if now.Unix() >= c.Expires || now.Unix() >= c.Session {
		return Ticket{}, false
	}
	return Ticket{UserID: c.UserID, OrgID: c.OrgID, SessionID: c.SessionID, SessionEnd: time.Unix(c.Session, 0)}, true
}

// socketToken answers a signed-in page's script with a socket ticket, {"token","expiresIn"}.
// It is a same-origin call: the session cookie and the page's CSRF token in the X-CSRF-Token
// header (which a cross-site page can neither read nor send without a refused preflight). Not
// signed in is a JSON 401, not a redirect, so the script stops.
func (s *Server) socketToken(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Type", "application/json")
	if s.tickets == nil {
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error":"Live updates are off"}` + "\n"))
		return
	}
	p, token, err := s.principalOf(r)
	if s.plainRefusal(w, err) {
		return // the script asks again later; the session is kept
	}
	if err != nil {
		if !errors.Is(err, errNoSession) {
			s.clearSession(w)
		}
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":"Authentication required"}` + "\n"))
		return
	}
	got := r.Header.Get(csrfHeader)
	if want := s.csrfToken("session", token); got == "" || !hmac.Equal([]byte(got), []byte(want)) {
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(`{"error":"Missing or wrong X-CSRF-Token"}` + "\n"))
		return
	}
	claims, err := s.jwt.Verify(token)
	if err != nil { // expired between the two reads
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":"Authentication required"}` + "\n"))
		return
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"token": s.tickets.Issue(p.UserID, p.OrgID, claims.ID, claims.ExpiresAt),
		"expiresIn": int(SocketTicketLifetime / time.Second)})
}
