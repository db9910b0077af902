package identity_test

import (
	"testing"
	"time"

	"verdict/internal/domain"
	"verdict/internal/identity"
)

// A Socket.IO handshake authenticates as a REST request does, with a session token, an API key
// or a dashboard page's socket ticket: the user is re-read, a session's socket ends with the
// session (its expiry, its revocation) and an API key's never expires; a forged or expired
// ticket, or one of a signed-out session, is refused.
func TestAuthenticateSocket(t *testing.T) {
	tickets := map[string]identity.SocketTicket{}
	f := newFixture(t, func(d *identity.Deps) {
		d.SocketTickets = func(token string) (identity.SocketTicket, bool, bool) {
			if len(token) < 4 || token[:4] != "vst1" {
				return identity.SocketTicket{}, false, false
			}
			tk, ok := tickets[token]
			return tk, true, ok
		}
	})
	admin := f.signup("a@sockets.test", "Sockets Co")
	s, err := f.svc.Login(f.ctx, "a@sockets.test", password)
	if err != nil {
		t.Fatal(err)
	}
	login := f.principal(s.Token)

	got, err := f.svc.AuthenticateSocket(f.ctx, s.Token)
	if err != nil {
		t.Fatal(err)
	}
	if got.Principal.UserID != admin.UserID || got.Principal.OrgID != admin.OrgID || got.Principal.Role != domain.RoleAdmin ||
		got.SessionID != login.SessionID || got.ExpiresIn != 24*time.Hour || got.Revoked == nil || got.Revoked() {
		t.Fatalf("with a session token: %+v %+v", got, got.Principal)
	}

	_, key, err := f.svc.CreateAPIKey(f.ctx, admin, "ci")
	if err != nil {
		t.Fatal(err)
	}
	byKey, err := f.svc.AuthenticateSocket(f.ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if byKey.Principal.APIKeyID == "" || byKey.SessionID != "" || byKey.ExpiresIn != 0 || byKey.Revoked != nil {
		t.Fatalf("with an API key: %+v %+v", byKey, byKey.Principal)
	}

	tickets["vst1.good"] = identity.SocketTicket{UserID: admin.UserID, OrgID: admin.OrgID, SessionID: login.SessionID,
		SessionEnd: f.clock.Now().Add(time.Hour)}
	byTicket, err := f.svc.AuthenticateSocket(f.ctx, "vst1.good")
	if err != nil {
		t.Fatal(err)
	}
	if byTicket.Principal.UserID != admin.UserID || byTicket.SessionID != login.SessionID || byTicket.ExpiresIn != time.Hour ||
		byTicket.Revoked == nil || byTicket.Revoked() {
		t.Fatalf("with a ticket: %+v", byTicket)
	}
	for _, bad := range []string{"vst1.forged", "not-a-token", domain.APIKeyPrefix + "unknown"} {
		if _, err := f.svc.AuthenticateSocket(f.ctx, bad); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}

	// Signing out revokes the session: its token and its ticket are refused, and a socket
	// opened before learns it through Revoked.
	if err := f.svc.RevokeSession(f.ctx, login); err != nil {
		t.Fatal(err)
	}
	if !got.Revoked() || !byTicket.Revoked() {
		t.Error("a socket of the signed-out session does not see the revocation")
	}
	if _, err := f.svc.AuthenticateSocket(f.ctx, s.Token); err == nil {
		t.Error("the signed-out session's token opens a socket")
	}
	if _, err := f.svc.AuthenticateSocket(f.ctx, "vst1.good"); err == nil || err.Error() != "invalid or expired socket ticket" {
		t.Errorf("the signed-out session's ticket: %v", err)
	}
}
