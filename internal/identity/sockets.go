package identity

import (
	"context"
	"errors"
	"strings"
	"time"

	"verdict/internal/domain"
)

// SocketTicket is what a dashboard page's valid socket ticket carries (web.Ticket): the
// session's user and organization, its ID and its expiry.
type SocketTicket struct {
	UserID, OrgID, SessionID string
	SessionEnd               time.Time
}

// SocketTickets checks a Socket.IO handshake's token as a dashboard page's socket ticket
// (web.SocketTickets): ticket tells a ticket from another token, ok whether it is a valid one
// (not forged, malformed or expired).
type SocketTickets func(token string) (t SocketTicket, ticket, ok bool)

// Socket is who a Socket.IO handshake authenticates, and how long the socket may live.
type Socket struct {
	Principal *Principal
	// SessionID is the session whose token (or socket ticket) opened the socket; "" for an API
	// key. Revoking the session ends the socket.
	SessionID string
	// ExpiresIn is the time left on the session: the socket ends then (0: never, for an API key).
	ExpiresIn time.Duration
	// Revoked tells whether the session was revoked since the handshake was checked (nil for an
	// API key, which ends its sockets when it is revoked).
	Revoked func() bool
}

var errBadTicket = errors.New("invalid or expired socket ticket")

// AuthenticateSocket verifies a handshake's JWT, API key, or a dashboard page's socket ticket,
// and re-reads the user, like every REST request. A ticket's socket ends with the session it was
// issued for: at its expiry, or when it is revoked (the socket is in the session's room).
func (s *Service) AuthenticateSocket(ctx context.Context, token string) (*Socket, error) {
	if strings.HasPrefix(token, domain.APIKeyPrefix) {
		// auth: {apiKey} (or a key sent as the token): the key's user, re-read like the REST API.
		p, err := s.AuthenticateKey(ctx, token)
		if err != nil {
			return nil, err
		}
		return &Socket{Principal: p}, nil
	}
	if t, ticket, ok := s.socketTickets(token); ticket {
		if !ok || s.tokens.Revoked(t.SessionID) { // a ticket of a signed-out session
			return nil, errBadTicket
		}
		p, err := s.AuthenticateClaims(ctx, t.UserID, t.OrgID)
		if err != nil {
			return nil, err
		}
		return &Socket{Principal: p, ExpiresIn: t.SessionEnd.Sub(s.clock()), SessionID: t.SessionID,
			Revoked: s.revoked(t.SessionID)}, nil
	}
	c, err := s.tokens.Verify(token) // refuses a revoked token
	if err != nil {
		return nil, err
	}
	p, err := s.AuthenticateClaims(ctx, c.UserID, c.OrganizationID)
	if err != nil {
		return nil, err
	}
	return &Socket{Principal: p, ExpiresIn: c.ExpiresAt.Sub(s.clock()), SessionID: c.ID, Revoked: s.revoked(c.ID)}, nil
}

// revoked tells the hub whether a session was revoked while its socket's handshake was checked.
func (s *Service) revoked(sessionID string) func() bool {
	return func() bool { return s.tokens.Revoked(sessionID) }
}
