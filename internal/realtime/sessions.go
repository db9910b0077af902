package realtime

// Workarounds for Engine.IO session-lifecycle bugs in the server library (v3.0.2), all found by
// this package's tests on a 2-core machine. Each is kept outside the library, at the HTTP
// boundary or on the engine's public events.
//
//  1. Setup race (upstream zishang520/socket.io#195 reports the same in the v2 line). The engine
//     writes the "open" packet before the Socket.IO layer has attached its listeners to the new
//     connection (done in the engine's "connection" event, emitted afterwards). A client that
//     answers "open" at once with CONNECT, as clients do, can have that packet silently dropped
//     and then hangs until its connect timeout. Over polling the answer can even arrive before
//     the session is registered ("Session ID unknown"). The tests hit this on most WebSocket
//     runs. Fix: hold incoming data back until the session is set up. The engine completes a
//     WebSocket handshake, "connection" event included, inside ServeHTTP, so reads on the
//     hijacked connection wait for ServeHTTP to return (gatedConn); that also covers a polling
//     session's upgrade probe. Polling requests carry the session id and wait until the Hub's
//     engine "connection" listener, registered after the Socket.IO layer's, marks it ready.
//
//  2. Write-queue leak. When the client ends a session (closes the WebSocket, or sends a polling
//     CLOSE packet), the transport is already marked closed when the engine closes it, so
//     Transport.Close returns early and never calls DoClose, the only thing that stops the
//     transport's write-queue goroutine: one goroutine per connection, for good. Fix: call
//     DoClose once more after the session closed (harmless on a closed transport).
//
//  3. Stuck long-polls. A poll that reaches a session while it is closing is accepted and never
//     answered, and polling's DoClose shuts its write queue before queueing the CLOSE packet, so
//     a server-side close leaves the pending poll unanswered too. The handler then waits until
//     the client goes away, and would hold up http.Server.Shutdown. Fix: requests of a session
//     still running shortly after it closed are ended, and Hub.Close ends all requests.
//
//  4. Double cleanup of a long-poll. Answering a poll, the library runs the request's cleanup
//     (which clears the transport's "pending poll" slot) once before writing and once more just
//     after, on its writer goroutine, without checking that the slot still holds that request.
//     The engine's handler returns, and the response reaches the client, in between; a client
//     that polls again at once can have its new poll cleared from the slot, and the session then
//     dies on its next write ("polling write error"). Seen under the race detector. Fix: the
//     handler returns only after the request's "close" event, which the library emits after the
//     second cleanup.

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/zishang520/socket.io/servers/engine/v3"
)

const (
	// sessionWait bounds how long a polling request waits for its session to become ready; a
	// request for an id that never existed waits this long before the engine rejects it.
	sessionWait = 2 * time.Second
	// sessionTombstone is how long a closed session stays known, so that late requests for it
	// are rejected by the engine at once instead of waiting sessionWait.
	sessionTombstone = time.Minute
	// reapDelay lets a request that is closing a session get its normal answer before the
	// session's transport and leftover requests are reaped.
	reapDelay = time.Second
)

// sessions tracks Engine.IO sessions: whether each is ready for data, and its requests in flight.
type sessions struct {
	mu     sync.Mutex
	m      map[string]*sessionState
	nextID uint64
}

type sessionState struct {
	ready    chan struct{} // closed once ready
	isReady  bool
	requests map[uint64]context.CancelFunc
}

func (s *sessions) getLocked(sid string) *sessionState {
	if s.m == nil {
		s.m = map[string]*sessionState{}
	}
	st, ok := s.m[sid]
	if !ok {
		st = &sessionState{ready: make(chan struct{}), requests: map[uint64]context.CancelFunc{}}
		s.m[sid] = st
	}
	return st
}

func (s *sessions) markReady(sid string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.getLocked(sid); !st.isReady {
		st.isReady = true
		close(st.ready)
	}
}

// begin waits until sid is ready (at most sessionWait, then the engine decides) and records the
// request so that reap can end it. end must be called when the request is done.
func (s *sessions) begin(ctx context.Context, sid string, cancel context.CancelFunc) (end func()) {
	s.mu.Lock()
	st := s.getLocked(sid)
	s.nextID++
	id := s.nextID
	st.requests[id] = cancel
	s.mu.Unlock()
	end = func() {
		s.mu.Lock()
		delete(st.requests, id)
		s.mu.Unlock()
	}

	select {
	case <-st.ready:
		return end
	default:
	}
	t := time.NewTimer(sessionWait)
	defer t.Stop()
	select {
	case <-st.ready:
	case <-ctx.Done():
	case <-t.C:
		// An unknown id (expired, or made up): drop the placeholder so such ids cannot pile up.
		s.mu.Lock()
		if cur, ok := s.m[sid]; ok && cur == st && !st.isReady {
			delete(s.m, sid)
		}
		s.mu.Unlock()
	}
	return end
}

// closed is called on the engine's "close" event of a session.
func (s *sessions) closed(sid string, c engine.Socket) {
	time.AfterFunc(reapDelay, func() {
		if t := c.Transport(); t != nil {
			t.Discard() // keeps polling's DoClose from arming a 30 s close timer
			t.DoClose(nil)
		}
		s.mu.Lock()
		if st, ok := s.m[sid]; ok {
			for _, cancel := range st.requests {
				cancel()
			}
		}
		s.mu.Unlock()
	})
	time.AfterFunc(sessionTombstone, func() {
		s.mu.Lock()
		delete(s.m, sid)
		s.mu.Unlock()
	})
}

// reset drops every entry (Hub.Close, which ends the requests through its own context).
func (s *sessions) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m = nil
}

func (s *sessions) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

// gatedWriter hands out hijacked connections whose reads wait until open is closed.
type gatedWriter struct {
	http.ResponseWriter
	open chan struct{}
}

func (g *gatedWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := http.NewResponseController(g.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	return &gatedConn{Conn: conn, open: g.open}, brw, nil
}

func (g *gatedWriter) Unwrap() http.ResponseWriter { return g.ResponseWriter }

type gatedConn struct {
	net.Conn
	open <-chan struct{}
}

func (c *gatedConn) Read(p []byte) (int, error) {
	<-c.open
	return c.Conn.Read(p)
}
