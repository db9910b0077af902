package realtime

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestAuthSuccessJoinsOrganizationRoom(t *testing.T) {
	for _, tr := range transportNames {
		t.Run(tr, func(t *testing.T) {
			h, srv := start(t, Options{})
			c := dial(t, srv.URL, dialOpts{transport: tr, auth: map[string]any{"token": tokenFor("acme", "u1", "admin")}})
			got := decode[map[string]any](t, c.expectEvent(EventAuthSuccess))
			want := map[string]any{"message": "Authenticated", "organizationId": "acme", "userId": "u1", "role": "admin"}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("auth-success = %v, want %v", got, want)
			}
			h.Emit("acme", EventExecutionUpdated, map[string]any{"taskId": "t1", "status": "RUNNING"})
			got = decode[map[string]any](t, c.expectEvent(EventExecutionUpdated))
			if got["taskId"] != "t1" || got["status"] != "RUNNING" {
				t.Fatalf("execution-updated = %v", got)
			}
		})
	}
}

func TestAuthErrorThenDisconnect(t *testing.T) {
	t.Parallel() // it waits out real timers; alone it would hold a test slot
	cases := []struct {
		name    string
		auth    map[string]any
		wantErr string
	}{
		{"bad token", map[string]any{"token": "forged"}, errInvalidToken},
		{"missing token", map[string]any{}, errAuthRequired},
		{"no auth payload", nil, errAuthRequired},
		{"token not a string", map[string]any{"token": 42}, errAuthRequired},
	}
	for _, tr := range transportNames {
		for _, tc := range cases {
			t.Run(tr+"/"+tc.name, func(t *testing.T) {
				h, srv := start(t, Options{})
				c := dial(t, srv.URL, dialOpts{transport: tr, auth: tc.auth})
				got := decode[map[string]any](t, c.expectEvent(EventAuthError))
				if len(got) != 1 || got["error"] != tc.wantErr {
					t.Fatalf("auth-error = %v, want {error: %q}", got, tc.wantErr)
				}
				if p := c.next(5 * time.Second); p != "1" {
					t.Fatalf("after auth-error got %q, want the DISCONNECT packet", p)
				}
				// A refused socket is in no room: nothing reaches it afterwards.
				h.Emit("acme", EventExecutionLog, ExecutionLog{TaskID: "t", Log: "x\n"})
				c.quiet(200 * time.Millisecond)
			})
		}
	}
}

func TestAuthenticatorErrorsAndIncompleteIdentitiesAreRefused(t *testing.T) {
	var calls atomic.Int32
	auth := func(ctx context.Context, token string) (Identity, error) {
		calls.Add(1)
		if token == "no-org" {
			return Identity{UserID: "u1", Role: "admin"}, nil
		}
		return testAuthenticate(ctx, token)
	}
	_, srv := start(t, Options{Authenticate: auth})
	c := dial(t, srv.URL, dialOpts{auth: map[string]any{"token": "no-org"}})
	if got := decode[map[string]any](t, c.expectEvent(EventAuthError)); got["error"] != errInvalidToken {
		t.Fatalf("auth-error = %v", got)
	}
	if calls.Load() != 1 {
		t.Fatalf("authenticator called %d times, want 1", calls.Load())
	}
}

// A client that ignores DISCONNECT must not keep an unauthenticated connection open.
func TestRefusedConnectionIsClosedAfterGrace(t *testing.T) {
	t.Parallel() // it waits out real timers; alone it would hold a test slot
	h, srv := start(t, Options{})
	h.rejectGrace = 300 * time.Millisecond
	c := dial(t, srv.URL, dialOpts{auth: map[string]any{"token": "forged"}})
	c.expectEvent(EventAuthError)
	c.waitEnded(5 * time.Second)

	// But a client that authenticates on the same connection after a refusal keeps it.
	c2 := dial(t, srv.URL, dialOpts{auth: map[string]any{"token": "forged"}})
	c2.expectEvent(EventAuthError)
	if p := c2.next(5 * time.Second); p != "1" {
		t.Fatalf("got %q, want DISCONNECT", p)
	}
	b, _ := json.Marshal(map[string]any{"token": tokenFor("acme", "u1", "viewer")})
	if err := c2.send("0" + string(b)); err != nil {
		t.Fatal(err)
	}
	if p := c2.next(5 * time.Second); !strings.HasPrefix(p, `0{"sid":`) {
		t.Fatalf("got %q, want CONNECT", p)
	}
	c2.expectEvent(EventAuthSuccess)
	time.Sleep(2 * h.rejectGrace)
	h.Emit("acme", EventExecutionLog, ExecutionLog{TaskID: "t", Log: "still here\n"})
	c2.expectEvent(EventExecutionLog)
}

func TestEventsStayInTheirOrganization(t *testing.T) {
	t.Parallel() // it waits out real timers; alone it would hold a test slot
	for _, tr := range transportNames {
		t.Run(tr, func(t *testing.T) {
			h, srv := start(t, Options{})
			a := member(t, srv.URL, tr, "org-a", "alice")
			b := member(t, srv.URL, tr, "org-b", "bob")
			a2 := member(t, srv.URL, tr, "org-a", "anna")

			for i := range 20 {
				h.Emit("org-a", EventExecutionLog, ExecutionLog{TaskID: "a-run", Log: fmt.Sprintf("line %d\n", i)})
			}
			h.Emit("org-b", EventExecutionUpdated, map[string]any{"taskId": "b-run"})

			// org-b's only event is its own; org-a's events never reach it.
			if got := decode[map[string]any](t, b.expectEvent(EventExecutionUpdated)); got["taskId"] != "b-run" {
				t.Fatalf("org-b got %v", got)
			}
			for _, c := range []*sioClient{a, a2} {
				for i, l := range c.logLines("a-run", 20) {
					if l != fmt.Sprintf("line %d\n", i) {
						t.Fatalf("org-a line %d is %q", i, l)
					}
				}
			}
			a.quiet(200 * time.Millisecond)
			a2.quiet(0)
			b.quiet(0)
		})
	}
}

// Log lines and other events, interleaved, arrive exactly in Emit order.
func TestManyEventsArriveInOrder(t *testing.T) {
	const n = 5000
	for _, tr := range transportNames {
		t.Run(tr, func(t *testing.T) {
			h, srv := start(t, Options{})
			c := member(t, srv.URL, tr, "acme", "u1")
			for i := range n {
				h.Emit("acme", EventExecutionLog, ExecutionLog{TaskID: "t1", Log: fmt.Sprintf("%d\n", i)})
				if i%100 == 99 {
					h.Emit("acme", EventExecutionUpdated, map[string]any{"taskId": "t1", "after": i})
				}
			}
			next, updates := 0, 0
			for next < n || updates < n/100 {
				name, arg, _ := parseEvent(c.next(10 * time.Second))
				switch name {
				case EventExecutionLog:
					l := decode[ExecutionLog](t, arg)
					for _, line := range strings.SplitAfter(strings.TrimSuffix(l.Log, "\n"), "\n") {
						if want := fmt.Sprint(next); strings.TrimSuffix(line, "\n") != want {
							t.Fatalf("line %q, want %q", line, want)
						}
						next++
					}
				case EventExecutionUpdated:
					after := int(decode[map[string]any](t, arg)["after"].(float64))
					if after != next-1 || after != updates*100+99 {
						t.Fatalf("update after line %d arrived after line %d", after, next-1)
					}
					updates++
				default:
					t.Fatalf("unexpected event %q", name)
				}
			}
			if d := h.dropped.Load(); d != 0 {
				t.Fatalf("%d events dropped", d)
			}
		})
	}
}

// Emit encodes the payload before returning, so the caller may reuse or change it at once.
func TestEmitSnapshotsPayload(t *testing.T) {
	h, srv := start(t, Options{})
	c := member(t, srv.URL, "websocket", "acme", "u1")
	payload := map[string]any{"status": "RUNNING"}
	h.Emit("acme", EventExecutionUpdated, payload)
	payload["status"] = "PASSED"
	if got := decode[map[string]any](t, c.expectEvent(EventExecutionUpdated)); got["status"] != "RUNNING" {
		t.Fatalf("got %v, want the payload as it was at Emit", got)
	}
}

func TestEmitRefusesWhatItCannotSend(t *testing.T) {
	h, srv := start(t, Options{})
	c := member(t, srv.URL, "websocket", "acme", "u1")
	h.Emit("acme", EventExecutionLog, func() {}) // not JSON
	h.Emit("acme", "disconnect", nil)            // reserved by the protocol
	h.Emit("", EventExecutionLog, nil)           // no organization
	h.Emit("acme", EventExecutionLog, ExecutionLog{TaskID: "t", Log: "ok\n"})
	if got := decode[ExecutionLog](t, c.expectEvent(EventExecutionLog)); got.Log != "ok\n" {
		t.Fatalf("got %+v", got)
	}
}

// Polling is exercised by every table above; this checks a polling session's wire format by
// hand, batching included.
func TestPollingWireFormat(t *testing.T) {
	h, srv := start(t, Options{})
	c := dial(t, srv.URL, dialOpts{transport: "polling", noReader: true, auth: map[string]any{"token": tokenFor("acme", "u1", "admin")}})
	poll := func() string {
		t.Helper()
		body, err := c.recv()
		if err != nil {
			t.Fatal(err)
		}
		return body
	}
	// The CONNECT reply and auth-success usually share one response, but may not.
	first := strings.Split(poll(), "\x1e")
	if len(first) == 1 {
		first = append(first, strings.Split(poll(), "\x1e")...)
	}
	if len(first) != 2 || !strings.HasPrefix(first[0], `40{"sid":`) ||
		first[1] != `42["auth-success",{"message":"Authenticated","organizationId":"acme","role":"admin","userId":"u1"}]` {
		t.Fatalf("first poll: %q", first)
	}
	for i := range 3 { // three runs, so that the lines are not merged
		h.Emit("acme", EventExecutionLog, ExecutionLog{TaskID: fmt.Sprint("t", i), Log: "line\n", Offset: int64(5 * i)})
	}
	time.Sleep(100 * time.Millisecond) // let all three reach the session's buffer
	want := strings.Join([]string{
		`42["execution-log",{"log":"line\n","offset":0,"taskId":"t0"}]`,
		`42["execution-log",{"log":"line\n","offset":5,"taskId":"t1"}]`,
		`42["execution-log",{"log":"line\n","offset":10,"taskId":"t2"}]`,
	}, "\x1e")
	if got := poll(); got != want {
		t.Fatalf("poll: %q, want %q", got, want)
	}
}

// Log chunks of one run that queue up behind each other are merged into fewer events; the text
// a client reads is exactly what was emitted, and a chunk without a final newline ends its event.
func TestQueuedLogChunksAreMerged(t *testing.T) {
	h, srv := start(t, Options{})
	c := member(t, srv.URL, "websocket", "acme", "u1")
	var want strings.Builder
	const n = 3000
	for i := range n {
		chunk := fmt.Sprintf("line %d\n", i)
		if i%500 == 250 {
			chunk = fmt.Sprintf("partial %d", i) // no newline: whatever follows starts a new event
		}
		h.Emit("acme", EventExecutionLog, ExecutionLog{TaskID: "run-1", Log: chunk, Offset: int64(want.Len())})
		want.WriteString(chunk)
		if i%1000 == 999 { // another run and another event in between are never merged across
			h.Emit("acme", EventExecutionLog, ExecutionLog{TaskID: "run-2", Log: "other\n"})
			h.Emit("acme", EventExecutionUpdated, map[string]any{"taskId": "run-1", "i": i})
		}
	}
	var got strings.Builder
	events, others := 0, 0
	for got.Len() < want.Len() {
		p := c.next(10 * time.Second)
		name, arg, _ := parseEvent(p)
		switch name {
		case EventExecutionLog:
			l := decode[ExecutionLog](t, arg)
			if l.TaskID == "run-2" {
				others++
				continue
			}
			if i := strings.Index(l.Log, "partial"); i >= 0 && strings.Contains(l.Log[i:], "\n") {
				t.Fatalf("text follows an unterminated chunk in one event: %q", l.Log[i:])
			}
			if l.Offset != int64(got.Len()) { // a merged event starts where its first chunk did
				t.Fatalf("event at offset %d, want %d", l.Offset, got.Len())
			}
			got.WriteString(l.Log)
			events++
		case EventExecutionUpdated:
			others++
			if upd := decode[map[string]any](t, arg); int(upd["i"].(float64)) >= n || got.Len() == 0 {
				t.Fatalf("execution-updated %v out of order", upd)
			}
		default:
			t.Fatalf("unexpected packet %q", p)
		}
	}
	if got.String() != want.String() {
		t.Fatal("the log text read differs from the text emitted")
	}
	t.Logf("%d chunks arrived in %d events", n, events)
	if events >= n {
		t.Fatalf("no chunks were merged (%d events)", events)
	}
	for others < 6 {
		c.next(10 * time.Second)
		others++
	}
}

// A socket ends with its token: at expiry it gets auth-error, then DISCONNECT, and hears
// nothing of its organization afterwards.
func TestSocketEndsWhenItsTokenExpires(t *testing.T) {
	t.Parallel() // it waits out real timers; alone it would hold a test slot
	for _, tr := range transportNames {
		t.Run(tr, func(t *testing.T) {
			auth := func(ctx context.Context, token string) (Identity, error) {
				id, err := testAuthenticate(ctx, token)
				id.ExpiresIn = 300 * time.Millisecond
				return id, err
			}
			h, srv := start(t, Options{Authenticate: auth})
			c := member(t, srv.URL, tr, "acme", "u1")
			h.Emit("acme", EventExecutionLog, ExecutionLog{TaskID: "t", Log: "before\n"})
			if got := c.logLines("t", 1); got[0] != "before\n" {
				t.Fatalf("before expiry: %q", got)
			}
			got := decode[map[string]any](t, c.expectEvent(EventAuthError))
			if got["error"] != errInvalidToken {
				t.Fatalf("at expiry: %v", got)
			}
			if p := c.next(5 * time.Second); p != "1" {
				t.Fatalf("after auth-error got %q, want the DISCONNECT packet", p)
			}
			h.Emit("acme", EventExecutionLog, ExecutionLog{TaskID: "t", Log: "after\n"})
			c.quiet(200 * time.Millisecond)
		})
	}
}

// EndUserSessions ends every socket of one user, and only theirs.
func TestEndUserSessions(t *testing.T) {
	t.Parallel() // it waits out real timers; alone it would hold a test slot
	for _, tr := range transportNames {
		t.Run(tr, func(t *testing.T) {
			h, srv := start(t, Options{})
			gone1, gone2 := member(t, srv.URL, tr, "acme", "u1"), member(t, srv.URL, tr, "acme", "u1")
			stays := member(t, srv.URL, tr, "acme", "u2")
			h.EndUserSessions("u1")
			for _, c := range []*sioClient{gone1, gone2} {
				got := decode[map[string]any](t, c.expectEvent(EventAuthError))
				if got["error"] != errSessionEnded {
					t.Fatalf("auth-error %v", got)
				}
				if p := c.next(5 * time.Second); p != "1" {
					t.Fatalf("after auth-error got %q, want the DISCONNECT packet", p)
				}
			}
			h.Emit("acme", EventExecutionLog, ExecutionLog{TaskID: "t", Log: "x\n"})
			if got := stays.logLines("t", 1); got[0] != "x\n" {
				t.Fatalf("other user's socket: %q", got)
			}
			gone1.quiet(200 * time.Millisecond)
			gone2.quiet(0)
		})
	}
}
