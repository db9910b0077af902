package web

import (
	"strings"
	"testing"
	"time"
)

// A socket ticket carries its user, organization, session and session expiry; it expires after a
// minute (or with the session), and any change to it, or another key, is refused.
func TestSocketTickets(t *testing.T) {
	now := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	tk := NewSocketTickets([]byte("key"), clock)
	session := now.Add(time.Hour)
	ticket := tk.Issue("u1", "o1", "s1", session)
	if !IsSocketTicket(ticket) || IsSocketTicket("eyJhbGciOiJIUzI1NiJ9.e30.sig") {
		t.Fatal("tickets are not told from JWTs")
	}
	if got, ok := tk.Verify(ticket); !ok || got.UserID != "u1" || got.OrgID != "o1" || got.SessionID != "s1" || !got.SessionEnd.Equal(session) {
		t.Fatalf("verify: %+v %v", got, ok)
	}
	for name, bad := range map[string]string{
		"another key": NewSocketTickets([]byte("other"), clock).Issue("u1", "o1", "s1", session),
		"changed":     strings.Replace(ticket, ".", ".x", 1),
		"truncated":   ticket[:len(ticket)-1],
		"empty":       socketTicketPrefix,
		"a JWT":       "a.b.c",
	} {
		if _, ok := tk.Verify(bad); ok {
			t.Errorf("%s: accepted", name)
		}
	}
	now = now.Add(SocketTicketLifetime)
	if _, ok := tk.Verify(ticket); ok {
		t.Error("an expired ticket is accepted")
	}
	now = now.Add(-SocketTicketLifetime)
	if _, ok := tk.Verify(tk.Issue("u1", "o1", "s1", now)); ok {
		t.Error("a ticket of an ended session is accepted")
	}
}
