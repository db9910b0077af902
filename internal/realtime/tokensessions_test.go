package realtime

import (
	"context"
	"strings"
	"testing"
	"time"
)

// EndTokenSessions ends the sockets of one session only (each carries its session in the
// token here: "valid:<org>:<user>:<role>:<session>"), with auth-error "signed out"; a socket
// whose session was revoked while its handshake was being checked is refused once it has
// joined its rooms.
func TestEndTokenSessions(t *testing.T) {
	revoked := map[string]bool{"gone": true}
	auth := func(ctx context.Context, token string) (Identity, error) {
		session := token[strings.LastIndexByte(token, ':')+1:]
		id, err := testAuthenticate(ctx, strings.TrimSuffix(token, ":"+session))
		id.SessionID = session
		id.Revoked = func() bool { return revoked[session] }
		return id, err
	}
	for _, tr := range transportNames {
		t.Run(tr, func(t *testing.T) {
			h, srv := start(t, Options{Authenticate: auth})
			connect := func(session string) *sioClient {
				return dial(t, srv.URL, dialOpts{transport: tr, auth: map[string]any{"token": tokenFor("acme", "u1", "developer") + ":" + session}})
			}
			ended, stays := connect("s1"), connect("s2")
			ended.expectEvent(EventAuthSuccess)
			stays.expectEvent(EventAuthSuccess)
			h.EndTokenSessions("s1")
			if got := decode[map[string]any](t, ended.expectEvent(EventAuthError)); got["error"] != errSignedOut {
				t.Fatalf("auth-error %v", got)
			}
			if p := ended.next(5 * time.Second); p != "1" {
				t.Fatalf("after auth-error got %q, want the DISCONNECT packet", p)
			}
			h.Emit("acme", EventExecutionLog, ExecutionLog{TaskID: "t", Log: "x\n"})
			if got := stays.logLines("t", 1); got[0] != "x\n" {
				t.Fatalf("the other session's socket: %q", got)
			}

			late := connect("gone")
			if got := decode[map[string]any](t, late.expectEvent(EventAuthError)); got["error"] != errInvalidToken {
				t.Fatalf("a socket of a session revoked during its handshake: %v", got)
			}
		})
	}
}
