package realtime

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/zishang520/socket.io/servers/socket/v3"
)

// Texts of auth-error, as the REST API words the same failures (GET /api/auth/me).
const (
	errAuthRequired = "Authentication required"
	errInvalidToken = "Invalid or expired token"
	errSessionEnded = "Session ended: your access to this organization changed; sign in again"
	errSignedOut    = "Session ended: signed out; sign in again"
	errUnavailable  = "Service unavailable"

	unavailableMessage = "The server cannot check credentials right now; connect again in a few seconds"
	unavailableRetry   = 5 // seconds
)

// ErrUnavailable is what an Authenticator's error wraps when the credential could not be
// checked (the database is away) rather than refused: the socket gets auth-error "Service
// unavailable" with retryAfter, which tells a client to connect again later.
var ErrUnavailable = errors.New("realtime: credentials cannot be checked now")

// onConnection authenticates a socket that has just connected to the namespace.
//
// Authentication happens here rather than in an io.Use middleware on purpose: a middleware
// failure becomes a CONNECT_ERROR packet, which clients surface as connect_error, whereas
// the API reference promises an auth-error event followed by a disconnect. So every namespace
// connection is accepted, and a socket only joins its organization's room once the token checks
// out; until then it can receive nothing but auth-error.
//
// The library calls this on the socket's own task goroutine, so a slow Authenticator delays
// this socket only, never the transport's reader or other clients.
func (h *Hub) onConnection(s *socket.Socket) {
	connID := s.Conn().Id()
	sid := string(s.Id())
	_ = s.On("disconnect", func(...any) { h.live.CompareAndDelete(connID, sid) })

	token, _ := s.Handshake().Auth["token"].(string)
	if token == "" {
		// A CI client's API key; the Authenticator tells the credentials apart.
		token, _ = s.Handshake().Auth["apiKey"].(string)
	}
	if token == "" {
		h.reject(s, errAuthRequired)
		return
	}
	ctx, cancel := context.WithTimeout(h.ctx, authTimeout)
	id, err := h.auth(ctx, token)
	cancel()
	if err == nil && (id.UserID == "" || id.OrganizationID == "") {
		err = errIncompleteIdentity
	}
	if errors.Is(err, ErrUnavailable) {
		// The credential could not be checked, not refused: the client may try again shortly.
		h.refuse(s, map[string]any{"error": errUnavailable, "message": unavailableMessage, "retryAfter": unavailableRetry})
		return
	}
	if err != nil {
		h.log.Info("socket authentication failed", "remote", s.Conn().RemoteAddress(), "error", err)
		h.reject(s, errInvalidToken)
		return
	}

	// Bounds (limits.go): how often, and how many at once, one user or key may connect.
	subjects := h.subjectsOf(id)
	if h.rateLimit != nil {
		ctx, cancel := context.WithTimeout(h.ctx, authTimeout)
		ok, retry := h.rateLimit(ctx, BucketSocket, subjects[0].key) // user:<id> or key:<id>
		cancel()
		if !ok {
			secs := retrySeconds(retry)
			h.refuse(s, map[string]any{"error": errRateLimited, "message": rateLimitedMessage(secs), "retryAfter": secs})
			return
		}
	}
	if full := h.census.acquire(subjects); full != nil {
		h.log.Info("socket refused: too many connections", "organization", id.OrganizationID, "counted", full.key, "cap", full.cap)
		h.refuse(s, map[string]any{"error": errTooManySockets, "message": tooManyMessage(full)})
		return
	}
	// Registered before Connected is read below: the listener or that check releases the
	// count, whenever the socket leaves.
	var releaseOnce sync.Once
	release := func() { releaseOnce.Do(func() { h.census.release(subjects) }) }
	_ = s.On("disconnect", func(...any) { release() })
	if o, ok := h.outboxes.Load(connID); ok {
		o.(*outbox).who.Store(&id)
	}

	s.SetData(id)
	h.live.Store(connID, sid)
	// Join before auth-success: a client that has seen auth-success gets every later event.
	// The user's own room (and the API key's, the session's) lets EndUserSessions
	// (EndKeySessions, EndTokenSessions) reach this socket.
	rooms := []socket.Room{orgRoom(id.OrganizationID), userRoom(id.UserID)}
	if id.APIKeyID != "" {
		rooms = append(rooms, keyRoom(id.APIKeyID))
	}
	if id.SessionID != "" {
		rooms = append(rooms, sessionRoom(id.SessionID))
	}
	s.Join(rooms...)
	if !s.Connected() { // left while the token was being checked
		h.live.CompareAndDelete(connID, sid)
		release()
		return
	}
	if id.Revoked != nil && id.Revoked() { // revoked while it was being checked
		h.live.CompareAndDelete(connID, sid)
		h.reject(s, errInvalidToken)
		return
	}
	if id.ExpiresIn > 0 {
		// Events stop with the token: the client must reconnect with a fresh one.
		expiry := time.AfterFunc(id.ExpiresIn, func() { h.reject(s, errInvalidToken) })
		_ = s.On("disconnect", func(...any) { expiry.Stop() })
	}
	_ = s.Emit(EventAuthSuccess, map[string]any{
		"message":        "Authenticated",
		"organizationId": id.OrganizationID,
		"userId":         id.UserID,
		"role":           id.Role,
	})
}

type identityError string

func (e identityError) Error() string { return string(e) }

const errIncompleteIdentity = identityError("authenticator returned an identity without user or organization")

// reject sends auth-error, then a namespace DISCONNECT. Disconnect(false) is deliberate:
// Disconnect(true) closes the WebSocket while the DISCONNECT packet may still sit in the
// library's write queue, and a client that sees a bare transport close reconnects (and fails
// again) forever. After DISCONNECT ("io server disconnect") clients do not reconnect and close
// the connection themselves; the timer closes it for clients that don't.
func (h *Hub) reject(s *socket.Socket, msg string) {
	h.refuse(s, map[string]any{"error": msg})
}

// refuse is reject with a payload of more fields than error (message, retryAfter).
func (h *Hub) refuse(s *socket.Socket, payload map[string]any) {
	// Out of the organization's room (and the others) first: no event may follow auth-error,
	// not even one broadcast while the library is still closing the socket.
	for _, r := range s.Rooms().Keys() {
		if r != socket.Room(s.Id()) {
			s.Leave(r)
		}
	}
	_ = s.Emit(EventAuthError, payload)
	s.Disconnect(false)
	conn := s.Conn()
	time.AfterFunc(h.rejectGrace, func() {
		if _, ok := h.live.Load(conn.Id()); !ok && conn.ReadyState() == "open" {
			conn.Close(false)
		}
	})
}

func userRoom(userID string) socket.Room { return socket.Room("user:" + userID) }
func keyRoom(keyID string) socket.Room   { return socket.Room("key:" + keyID) }
func sessionRoom(id string) socket.Room  { return socket.Room("session:" + id) }

// EndUserSessions sends auth-error to every socket of a user, on every replica, and
// disconnects them: for a member who was suspended, deleted or moved to another organization,
// whose sockets would otherwise keep receiving their former organization's events.
func (h *Hub) EndUserSessions(userID string) {
	if userID != "" {
		h.endSessions(userRoom(userID))
	}
}

// EndKeySessions does the same for the sockets opened with an API key, once it is revoked.
func (h *Hub) EndKeySessions(keyID string) {
	if keyID != "" {
		h.endSessions(keyRoom(keyID))
	}
}

// EndTokenSessions sends auth-error ("Session ended: signed out; …") to this replica's sockets
// opened with a revoked session's token or socket ticket, and disconnects them. This
// replica's only: every replica learns of a revocation from the database and ends its own.
func (h *Hub) EndTokenSessions(sessionID string) {
	if sessionID != "" && !h.closed.Load() {
		h.endLocal(sessionRoom(sessionID), errSignedOut)
	}
}

func (h *Hub) endSessions(room socket.Room) {
	if h.closed.Load() {
		return
	}
	h.endLocalSessions(room)
	// Each replica ends its own sockets: an emit and a disconnect broadcast through the adapter
	// travel separately, so a remote socket could be cut before it heard why.
	_ = h.io.Sockets().ServerSideEmit(eventEndSessions, string(room))
}

// eventEndSessions is the replicas' own message: end the sockets of this room (a user's or
// an API key's).
const eventEndSessions = "verdict:end-sessions"

// endLocalSessions sends auth-error to this replica's sockets in room, then disconnects them.
func (h *Hub) endLocalSessions(room socket.Room) { h.endLocal(room, errSessionEnded) }

// endLocal is endLocalSessions with the auth-error text msg.
func (h *Hub) endLocal(room socket.Room, msg string) {
	r := h.io.Local().In(room)
	_ = r.Emit(EventAuthError, map[string]any{"error": msg})
	r.DisconnectSockets(false)
}
