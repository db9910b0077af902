//go:build integration

package app_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"verdict/internal/identity"
	"verdict/internal/testenv"
)

// noRunner keeps queued runs PENDING, so that their SSE streams stay open.
var noRunner = map[string]string{"VERDICT_RUNNER": "none"}

// login opens another session of an existing user through the API.
func (h *harness) login(email string) string {
	h.t.Helper()
	r := h.do("POST", "/api/auth/login", anon, map[string]any{"email": email, "password": password})
	expect(h.t, r, 200, "")
	return r.str("token")
}

// stream is an open SSE stream whose end a goroutine waits for.
type stream struct {
	ended chan time.Time // receives when the stream ended (the server closed it, or cut it)
}

// openStream opens the SSE stream of task with a and waits for it in the background.
func (h *harness) openStream(t *testing.T, task string, a auth) *stream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	res := h.openSSE(ctx, "/api/executions/"+task+"/events", a)
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(res.Body)
		cancel()
		t.Fatalf("SSE stream: %d %s", res.StatusCode, b)
	}
	s := &stream{ended: make(chan time.Time, 1)}
	go func() {
		_, _ = io.Copy(io.Discard, res.Body)
		s.ended <- time.Now()
	}()
	t.Cleanup(func() { cancel(); res.Body.Close() })
	return s
}

// endsWithin fails unless the stream ends within d of since.
func (s *stream) endsWithin(t *testing.T, what string, since time.Time, d time.Duration) {
	t.Helper()
	select {
	case at := <-s.ended:
		t.Logf("%s: ended %v after the change", what, at.Sub(since).Round(time.Millisecond))
		if at.Sub(since) > d {
			t.Fatalf("%s: ended %v after the change, want within %v", what, at.Sub(since), d)
		}
	case <-time.After(time.Until(since.Add(d))):
		t.Fatalf("%s: still open %v after the change", what, d)
	}
}

// open fails if the stream has ended.
func (s *stream) open(t *testing.T, what string) {
	t.Helper()
	select {
	case <-s.ended:
		t.Fatalf("%s ended", what)
	default:
	}
}

// signedOut is the auth-error of a socket whose session was revoked.
const signedOut = "Session ended: signed out; sign in again"

// authErrorWithin fails unless the socket gets auth-error signedOut within d of since.
func authErrorWithin(t *testing.T, what string, ch chan sioEvent, since time.Time, d time.Duration) {
	t.Helper()
	for {
		select {
		case e := <-ch:
			if e.name != "auth-error" {
				continue
			}
			t.Logf("%s: auth-error %v after the change", what, time.Since(since).Round(time.Millisecond))
			if time.Since(since) > d || e.data["error"] != signedOut {
				t.Fatalf("%s: auth-error %v %v after the change, want %q within %v", what, e.data, time.Since(since), signedOut, d)
			}
			return
		case <-time.After(time.Until(since.Add(d))):
			t.Fatalf("%s: no auth-error within %v", what, d)
		}
	}
}

// authSuccess fails unless the socket's first event is auth-success.
func authSuccess(t *testing.T, what string, ch chan sioEvent) {
	t.Helper()
	if e := nextEvent(t, ch, 10*time.Second); e.name != "auth-success" {
		t.Fatalf("%s: %+v", what, e)
	}
}

// quiet fails if the socket gets auth-error within d.
func quiet(t *testing.T, what string, ch chan sioEvent, d time.Duration) {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case e := <-ch:
			if e.name == "auth-error" {
				t.Fatalf("%s: %+v", what, e)
			}
		case <-deadline:
			return
		}
	}
}

// TestSignOutEndsTheSession: signing out of the dashboard revokes the session's token, so the
// same cookie is refused on the next page and, as a bearer token, by the API; another session
// of the same user keeps working. The API's logout stays stateless (its token keeps working),
// while POST /api/auth/revoke ends the calling token.
func TestSignOutEndsTheSession(t *testing.T) {
	forEachDB(t, func(t *testing.T, h *harness) {
		b := h.signUpBrowser(t, "ada@example.com", "Sign Out Co")
		cookie := b.session()
		other := h.login("ada@example.com")
		wantStatus(t, "runs", b.get("/runs"), 200, "Runs")
		expect(t, h.do("GET", "/api/auth/me", bearer(cookie), nil), 200, "")

		wantRedirect(t, "sign out", b.post("/logout", nil), "/login")
		if b.session() != "" {
			t.Fatal("the cookie was not cleared")
		}
		// The same cookie, kept by someone: the next page sends it to /login and clears it; the
		// API refuses it.
		again := h.withSession(t, cookie)
		wantRedirect(t, "a page with the signed-out cookie", again.get("/runs"), "/login")
		if again.session() != "" {
			t.Fatal("the refused cookie was not cleared")
		}
		expect(t, h.do("GET", "/api/auth/me", bearer(cookie), nil), 401, "Invalid or expired token")
		if code, _, _ := h.withSession(t, cookie).socketToken(b.csrf); code != 401 {
			t.Fatalf("a socket ticket for the signed-out cookie: %d", code)
		}

		// The user's other session is untouched.
		expect(t, h.do("GET", "/api/auth/me", bearer(other), nil), 200, "")
		wantStatus(t, "runs in the other session", h.withSession(t, other).get("/runs"), 200, "Runs")

		// The API's logout changes nothing on the server, as specified.
		r := h.do("POST", "/api/auth/logout", bearer(other), nil)
		expect(t, r, 200, "")
		if r.str("message") != "Logged out; discard the token on the client" {
			t.Fatalf("logout: %s", r.raw)
		}
		expect(t, h.do("GET", "/api/auth/me", bearer(other), nil), 200, "")

		// POST /api/auth/revoke ends it.
		r = h.do("POST", "/api/auth/revoke", bearer(other), nil)
		expect(t, r, 200, "")
		if r.str("message") == "" || r.header.Get("X-RateLimit-Limit") == "" {
			t.Fatalf("revoke: %s %v", r.raw, r.header)
		}
		expect(t, h.do("GET", "/api/auth/me", bearer(other), nil), 401, "Invalid or expired token")
		expect(t, h.do("POST", "/api/auth/revoke", bearer(other), nil), 401, "Invalid or expired token")
		wantRedirect(t, "a page with the revoked token", h.withSession(t, other).get("/runs"), "/login")

		// A fresh sign-in works; an API key cannot be revoked here (it has its own route).
		third := h.login("ada@example.com")
		key := h.do("POST", "/api/auth/api-keys", bearer(third), map[string]any{"name": "ci"}).str("apiKey")
		expect(t, h.do("POST", "/api/auth/revoke", apiKey(key), nil), 403, "API key not allowed")
		expect(t, h.do("POST", "/api/auth/revoke", auth{token: key}, nil), 403, "API key not allowed")
		expect(t, h.do("GET", "/api/auth/me", apiKey(key), nil), 200, "")
		expect(t, h.do("GET", "/api/auth/me", bearer(third), nil), 200, "")
	})
}

// TestSignOutCutsLiveConnections: the SSE stream and the Socket.IO sockets (one opened with the
// token, one with a dashboard page's socket ticket) of a session end within a second of its
// sign-out, and a reconnection is refused; the same user's other session keeps its stream and
// socket.
func TestSignOutCutsLiveConnections(t *testing.T) {
	forEachDBWith(t, harnessOpts{env: noRunner}, func(t *testing.T, h *harness) {
		admin := h.signup("live@example.com", "Live Sign Out Co")
		other := h.login(admin.email)
		task := h.queue(bearer(admin.token), map[string]any{"image": passImage})

		b := h.withSession(t, admin.token) // the dashboard's session is this token
		wantStatus(t, "runs", b.get("/runs"), 200, "Runs")
		code, _, body := b.socketToken(b.csrf)
		if code != 200 {
			t.Fatalf("socket ticket: %d %v", code, body)
		}
		ticketSock := dialSocketAuth(t, h.srv.URL, map[string]any{"token": body["token"]})
		tokenSock := dialSocket(t, h.srv.URL, admin.token)
		otherSock := dialSocket(t, h.srv.URL, other)
		authSuccess(t, "ticket socket", ticketSock)
		authSuccess(t, "token socket", tokenSock)
		authSuccess(t, "other session's socket", otherSock)
		sse := h.openStream(t, task, bearer(admin.token))
		otherSSE := h.openStream(t, task, bearer(other))

		wantRedirect(t, "sign out", b.post("/logout", nil), "/login")
		signedOut := time.Now()
		sse.endsWithin(t, "the signed-out session's SSE stream", signedOut, time.Second)
		authErrorWithin(t, "the signed-out session's token socket", tokenSock, signedOut, time.Second)
		authErrorWithin(t, "the signed-out session's ticket socket", ticketSock, signedOut, time.Second)

		quiet(t, "the other session's socket", otherSock, 300*time.Millisecond)
		otherSSE.open(t, "the other session's SSE stream")
		h.queue(bearer(other), map[string]any{"image": passImage, "taskId": "after-sign-out"})
		for {
			e := nextEvent(t, otherSock, 10*time.Second)
			if e.name == "auth-error" {
				t.Fatalf("the other session's socket: %+v", e)
			}
			if e.name == "execution-updated" && e.data["taskId"] == "after-sign-out" {
				break
			}
		}

		// Reconnecting with the signed-out token is refused.
		again := dialSocket(t, h.srv.URL, admin.token)
		if e := nextEvent(t, again, 10*time.Second); e.name != "auth-error" || e.data["error"] != "Invalid or expired token" {
			t.Fatalf("a socket with the signed-out token: %+v", e)
		}
		res := h.openSSE(context.Background(), "/api/executions/"+task+"/events", bearer(admin.token))
		res.Body.Close()
		if res.StatusCode != 401 {
			t.Fatalf("an SSE stream with the signed-out token: %d", res.StatusCode)
		}
		// POST /api/auth/revoke cuts the same way.
		now := time.Now()
		expect(t, h.do("POST", "/api/auth/revoke", bearer(other), nil), 200, "")
		otherSSE.endsWithin(t, "the revoked token's SSE stream", now, time.Second)
		authErrorWithin(t, "the revoked token's socket", otherSock, now, time.Second)
	})
}

// TestSSEEndsWithAccess: an SSE stream opened with an API key ends within a second of the key's
// revocation, and a stream of a member ends within a second of their suspension (before, both
// lasted until the stream's next re-check, up to 15 s); other streams stay.
func TestSSEEndsWithAccess(t *testing.T) {
	forEachDBWith(t, harnessOpts{env: noRunner}, func(t *testing.T, h *harness) {
		admin := h.signup("keys@example.com", "Key Stream Co")
		dev := h.join(admin, "dev@example.com", "developer")
		created := h.do("POST", "/api/auth/api-keys", bearer(admin.token), map[string]any{"name": "ci"})
		expect(t, created, 201, "")
		kept := h.do("POST", "/api/auth/api-keys", bearer(admin.token), map[string]any{"name": "kept"})
		task := h.queue(bearer(admin.token), map[string]any{"image": passImage})

		byKey := h.openStream(t, task, apiKey(created.str("apiKey")))
		byKeptKey := h.openStream(t, task, apiKey(kept.str("apiKey")))
		byAdmin := h.openStream(t, task, bearer(admin.token))
		byDev := h.openStream(t, task, bearer(dev.token))

		expect(t, h.do("DELETE", "/api/auth/api-keys/"+created.str("data", "id"), bearer(admin.token), nil), 200, "")
		byKey.endsWithin(t, "the revoked key's stream", time.Now(), time.Second)
		byKeptKey.open(t, "the other key's stream")
		byAdmin.open(t, "the admin's stream")

		expect(t, h.do("PATCH", "/api/users/"+dev.id+"/status", bearer(admin.token), map[string]any{"status": "suspended"}), 200, "")
		byDev.endsWithin(t, "the suspended member's stream", time.Now(), time.Second)
		byKeptKey.open(t, "the other key's stream")
		byAdmin.open(t, "the admin's stream")
	})
}

// TestRevocationAcrossReplicas: two replicas on one PostgreSQL database, with and without a
// shared Redis. A token revoked on one is refused by the other within the documented delay
// (identity.RevocationInterval, plus a read), and the other's SSE stream and socket of that
// token end within it too; with Redis, a key revoked on one ends the other's stream of that
// key at once.
func TestRevocationAcrossReplicas(t *testing.T) {
	delay := identity.RevocationInterval + time.Second // the interval, plus a read under load
	for _, redis := range []bool{false, true} {
		t.Run(fmt.Sprintf("redis=%v", redis), func(t *testing.T) {
			dbURL := testenv.PostgresDB(t)
			o := harnessOpts{dialect: "postgres", databaseURL: dbURL, env: noRunner, redis: redis}
			if redis {
				o.redisPrefix = testenv.KeyPrefix(t)
			}
			a, b := newHarness(t, o), newHarness(t, o)
			admin := a.signup("replicas@example.com", "Replica Revoke Co")
			task := a.queue(bearer(admin.token), map[string]any{"image": passImage})
			created := a.do("POST", "/api/auth/api-keys", bearer(admin.token), map[string]any{"name": "ci"})

			expect(t, b.do("GET", "/api/auth/me", bearer(admin.token), nil), 200, "")
			sock := dialSocket(t, b.srv.URL, admin.token)
			authSuccess(t, "socket on the other replica", sock)
			sse := b.openStream(t, task, bearer(admin.token))
			byKey := b.openStream(t, task, apiKey(created.str("apiKey")))

			expect(t, a.do("POST", "/api/auth/revoke", bearer(admin.token), nil), 200, "")
			revoked := time.Now()
			expect(t, a.do("GET", "/api/auth/me", bearer(admin.token), nil), 401, "Invalid or expired token")
			for {
				r := b.do("GET", "/api/auth/me", bearer(admin.token), nil)
				if r.status == 401 {
					expect(t, r, 401, "Invalid or expired token")
					t.Logf("refused by the other replica %v after the revocation", time.Since(revoked).Round(time.Millisecond))
					break
				}
				if time.Since(revoked) > delay {
					t.Fatalf("the other replica still takes the revoked token %v after: %s", delay, r.raw)
				}
				time.Sleep(20 * time.Millisecond)
			}
			sse.endsWithin(t, "the other replica's SSE stream of the revoked token", revoked, delay)
			authErrorWithin(t, "the other replica's socket of the revoked token", sock, revoked, delay)
			byKey.open(t, "the key's stream")

			if redis {
				second := a.login(admin.email)
				expect(t, a.do("DELETE", "/api/auth/api-keys/"+created.str("data", "id"), bearer(second), nil), 200, "")
				byKey.endsWithin(t, "the other replica's stream of the revoked key", time.Now(), time.Second)
			}
		})
	}
}

// TestMemberChangesAcrossReplicas: two replicas on one PostgreSQL database, each keeping the
// callers it authenticates in memory. A role change and a suspension made on one are seen by
// the other within a second (by the notification of the write to users, in about a
// millisecond), never on its cached copy for longer.
func TestMemberChangesAcrossReplicas(t *testing.T) {
	dbURL := testenv.PostgresDB(t)
	o := harnessOpts{dialect: "postgres", databaseURL: dbURL, env: noRunner}
	a, b := newHarness(t, o), newHarness(t, o)
	admin := a.signup("members@example.com", "Replica Members Co")
	dev := a.join(admin, "dev@example.com", "developer")
	within := func(what string, ok func() bool) {
		t.Helper()
		start := time.Now()
		for !ok() {
			if time.Since(start) > time.Second {
				t.Fatalf("the other replica did not see %s within a second", what)
			}
			time.Sleep(5 * time.Millisecond)
		}
		t.Logf("the other replica saw %s after %v", what, time.Since(start).Round(time.Millisecond))
	}
	me := func() resp { return b.do("GET", "/api/auth/me", bearer(dev.token), nil) }
	for range 2 { // the second read is served from the replica's memory
		if r := me(); r.status != 200 || r.str("data", "role") != "developer" {
			t.Fatalf("the member on the other replica: %s", r.raw)
		}
	}
	expect(t, a.do("PATCH", "/api/users/"+dev.id+"/role", bearer(admin.token), map[string]any{"role": "viewer"}), 200, "")
	within("the role change", func() bool { return me().str("data", "role") == "viewer" })
	expect(t, a.do("PATCH", "/api/users/"+dev.id+"/status", bearer(admin.token), map[string]any{"status": "suspended"}), 200, "")
	within("the suspension", func() bool { return me().status == 401 })
	expect(t, me(), 401, "Invalid or expired token")
}
