package realtime

// Bounds on what one client, or one tenant, can make the hub hold.
//
// The server library queues every packet for a connection without limit: in the Engine.IO
// socket's write buffer while the transport is busy (a WebSocket write that the client does not
// read blocks, a long-poll that the client does not renew leaves nothing to answer), and the
// Socket.IO layer gives each connection its own copy of a broadcast packet. A client that stops
// reading and keeps the session alive with pongs therefore made this process hold every event
// of its organization, once per such connection. Three bounds stop that:
//
//  1. Send queues (outbox): the hub follows each Engine.IO connection's bytes from the moment a
//     packet is made ("packetCreate") to the moment its transport has written it (the
//     transport's "drain" after the "flush" that handed it over), and closes a connection whose
//     queue passes Options.QueueBytes, as the SSE followers drop a follower whose buffer is
//     full. The client library reconnects, and the dashboard fetches what it missed. Past
//     Options.QueueTotal for all connections together, a connection with more than a
//     sixteenth of its bound waiting, and nothing written for half a second, is closed too, so
//     that many connections, or tenants, together stay bounded while clients that read keep
//     theirs. Past one and a half times Options.QueueTotal the half second is 50 ms: a fast
//     run's log fills a stalled connection by megabytes a second, and a hundred of them filled
//     their own bounds (400 MiB) within half a second. Once a wave of such connections has closed,
//     the hub collects the garbage they leave at once (collect).
//  2. Caps (census): live authenticated sockets per user, per API key and per organization, on
//     this replica. The bounds protect this process's memory, which only its own sockets use,
//     so they are counted here, not across replicas.
//  3. Rate limits (Options.RateLimit): new Engine.IO sessions per client address, before
//     anything else is done for them, and authenticated sockets per user or API key.

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zishang520/socket.io/parsers/engine/v3/packet"
	"github.com/zishang520/socket.io/servers/engine/v3"
	"github.com/zishang520/socket.io/servers/engine/v3/transports"
)

// Defaults of the Options that bound the hub.
const (
	DefaultQueueBytes     = 4 << 20
	DefaultQueueTotal     = 64 << 20
	DefaultSocketsPerUser = 20
	DefaultSocketsPerOrg  = 200
)

// Rate-limit buckets the hub asks Options.RateLimit about.
const (
	// BucketSocketIP counts new Engine.IO sessions (handshakes) by client address; key
	// "ip:<address>".
	BucketSocketIP = "socket-ip"
	// BucketSocket counts authenticated sockets by user ("user:<id>") or, for a socket opened
	// with an API key, by key ("key:<id>").
	BucketSocket = "socket"
)

// RateLimiter takes one connection from bucket's count for key. A refusal says how long until
// the next one is allowed. An implementation whose store fails should let the connection through.
type RateLimiter func(ctx context.Context, bucket, key string) (allowed bool, retryAfter time.Duration)

// Texts of the refusals.
const (
	errTooManySockets = "Too many connections"
	errRateLimited    = "Rate limit exceeded"
)

// QueueStats are the send queues' figures on this replica.
type QueueStats struct {
	Queued    int64  // bytes waiting to be written, all connections together
	MaxQueued int64  // the most bytes one connection ever had waiting
	Cut       uint64 // connections closed because their queue passed a bound
}

// QueueStats returns the send queues' figures.
func (h *Hub) QueueStats() QueueStats {
	return QueueStats{Queued: h.queued.Load(), MaxQueued: h.maxQueued.Load(), Cut: h.cut.Load()}
}

// outbox follows one Engine.IO connection's unwritten bytes.
type outbox struct {
	hub  *Hub
	conn engine.Socket
	who  atomic.Pointer[Identity] // set once the connection's socket authenticates

	mu       sync.Mutex
	pending  int64     // made, not yet handed to the transport
	inFlight int64     // handed to the transport, not yet written
	waiting  time.Time // since when bytes wait with nothing written (zero: none wait)
	closed   bool
	cutting  bool
}

// Past Options.QueueTotal, a connection is closed when it has more than 1/pressureShare of its
// own bound waiting (256 KiB of the default 4 MiB: a few of the largest events) and its
// transport has written nothing for stallGrace: a client that reads, even slowly, sees a batch
// written every few milliseconds, and keeps its connection.
const (
	pressureShare = 16
	stallGrace    = 500 * time.Millisecond
	// pressedGrace replaces stallGrace past one and a half times Options.QueueTotal: long
	// enough for a client that reads to be seen writing (its batches go out every few
	// milliseconds), short enough that a flood does not fill every stalled connection.
	pressedGrace = 50 * time.Millisecond
)

// packetOverhead is what a queued packet costs beyond its data (the packet, its options and
// the write buffer's slot), so that a flood of tiny packets counts too.
const packetOverhead = 64

func packetSize(p *packet.Packet) int64 {
	n := int64(packetOverhead)
	if l, ok := p.Data.(interface{ Len() int }); ok {
		n += int64(l.Len())
	}
	return n
}

// track starts following conn's queue; the Hub's engine "connection" listener calls it.
func (h *Hub) track(conn engine.Socket) {
	o := &outbox{hub: h, conn: conn}
	h.outboxes.Store(conn.Id(), o)
	_ = conn.On("packetCreate", func(args ...any) {
		if p, ok := argAt[*packet.Packet](args, 0); ok {
			o.made(packetSize(p))
		}
	})
	_ = conn.On("flush", func(args ...any) {
		if batch, ok := argAt[[]*packet.Packet](args, 0); ok {
			var n int64
			for _, p := range batch {
				n += packetSize(p)
			}
			o.flushed(n)
		}
	})
	o.watch(conn.Transport())
	_ = conn.On("upgrade", func(args ...any) {
		if t, ok := argAt[transports.Transport](args, 0); ok {
			o.upgraded(t)
		}
	})
	_ = conn.Once("close", func(...any) {
		o.release()
		h.outboxes.CompareAndDelete(conn.Id(), o)
	})
}

func argAt[T any](args []any, i int) (T, bool) {
	var zero T
	if i >= len(args) {
		return zero, false
	}
	v, ok := args[i].(T)
	return v, ok
}

// watch counts a batch as written when t, still the connection's transport, has written it:
// a transport takes one batch at a time and says "drain" once it is out (or failed).
func (o *outbox) watch(t transports.Transport) {
	if t == nil {
		return
	}
	_ = t.On("drain", func(...any) {
		if o.conn.Transport() == t {
			o.written()
		}
	})
}

func (o *outbox) made(n int64) {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return
	}
	if o.pending+o.inFlight == 0 {
		o.waiting = time.Now()
	}
	o.pending += n
	q := o.pending + o.inFlight
	waiting := o.waiting
	o.mu.Unlock()
	h := o.hub
	total := h.queued.Add(n)
	for {
		m := h.maxQueued.Load()
		if q <= m || h.maxQueued.CompareAndSwap(m, q) {
			break
		}
	}
	switch {
	case q > h.queueBytes:
		o.cut(q, "its send queue passed the per-connection bound")
	case total > h.queueTotal && q > h.queueBytes/pressureShare && time.Since(waiting) > stallGrace:
		o.cut(q, "the send queues of all connections passed their bound, and it wrote nothing for half a second")
	case total > h.queueTotal+h.queueTotal/2 && q > h.queueBytes/pressureShare && time.Since(waiting) > pressedGrace:
		o.cut(q, "the send queues of all connections passed one and a half times their bound, and it wrote nothing for 50 ms")
	}
}

// flushed moves a batch from pending to in flight. A batch may hold packets made before the
// outbox existed (the Engine.IO open packet), so pending never goes below zero.
func (o *outbox) flushed(n int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return
	}
	moved := min(n, o.pending)
	o.pending -= moved
	o.inFlight += moved
}

func (o *outbox) written() {
	o.mu.Lock()
	n := o.inFlight
	o.inFlight = 0
	o.waiting = time.Time{}
	if o.pending > 0 {
		o.waiting = time.Now() // progress: what is left waits from now
	}
	o.mu.Unlock()
	if n > 0 {
		o.hub.queued.Add(-n)
	}
}

// upgraded: the old transport's batch, if any, is discarded with it.
func (o *outbox) upgraded(t transports.Transport) {
	o.written()
	o.watch(t)
}

// release forgets the connection: its write buffer is dropped with it.
func (o *outbox) release() {
	o.mu.Lock()
	n := o.pending + o.inFlight
	o.pending, o.inFlight, o.closed = 0, 0, true
	o.mu.Unlock()
	o.hub.queued.Add(-n)
}

// cut closes the connection once, discarding what it has queued. It runs on its own goroutine:
// the packet that crossed the bound is being written by a caller that holds the library's
// per-client lock, which closing takes too.
func (o *outbox) cut(queued int64, why string) {
	o.mu.Lock()
	first := !o.cutting && !o.closed
	o.cutting = true
	o.mu.Unlock()
	if !first {
		return
	}
	h := o.hub
	h.cut.Add(1)
	if n, ok := h.cutLog.allow(); ok {
		attrs := []any{"reason", why, "queued", queued, "remote", o.conn.RemoteAddress(), "suppressed", n}
		if id := o.who.Load(); id != nil {
			attrs = append(attrs, "organization", id.OrganizationID, "user", id.UserID)
			if id.APIKeyID != "" {
				attrs = append(attrs, "apiKey", id.APIKeyID)
			}
		}
		h.log.Warn("socket closed: its client does not read what it is sent", attrs...)
	}
	go func() {
		o.conn.Close(true)
		h.collect()
	}()
}

// collectAfter is how long after the last connection closed for its queue the hub collects.
const collectAfter = 100 * time.Millisecond

// collect runs a garbage collection collectAfter after the last of a wave of connections
// closed for their queues has let go of them: what they held is garbage, but Go would only
// collect it once the heap had grown to twice what was live before, queues and all, and the
// flood that filled them goes on meanwhile.
func (h *Hub) collect() {
	h.collectMu.Lock()
	defer h.collectMu.Unlock()
	if h.collectTimer == nil {
		h.collectTimer = time.AfterFunc(collectAfter, runtime.GC)
		return
	}
	h.collectTimer.Reset(collectAfter)
}

// census counts live authenticated sockets by user, API key and organization.
type census struct {
	mu sync.Mutex
	n  map[string]int
}

// subject is one count a socket takes part in, with its cap.
type subject struct {
	key  string // "user:<id>", "key:<id>" or "org:<id>"
	cap  int
	what string // for the refusal: "This user", "This API key", "Your organization"
}

// acquire counts the socket in every subject, unless one of them is at its cap: then it
// counts it nowhere and returns that subject.
func (c *census) acquire(subjects []subject) (full *subject) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	for i := range subjects {
		if c.n[subjects[i].key] >= subjects[i].cap {
			return &subjects[i]
		}
	}
	for _, s := range subjects {
		c.n[s.key]++
	}
	return nil
}

func (c *census) release(subjects []subject) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range subjects {
		if c.n[s.key]--; c.n[s.key] <= 0 {
			delete(c.n, s.key)
		}
	}
}

// subjectsOf are the counts a socket of id takes part in: its API key's or its user's, and its
// organization's.
func (h *Hub) subjectsOf(id Identity) []subject {
	first := subject{key: "user:" + id.UserID, cap: h.socketsPerUser, what: "This user"}
	if id.APIKeyID != "" {
		first = subject{key: "key:" + id.APIKeyID, cap: h.socketsPerUser, what: "This API key"}
	}
	return []subject{first, {key: "org:" + id.OrganizationID, cap: h.socketsPerOrg, what: "Your organization"}}
}

func tooManyMessage(s *subject) string {
	plural := "s"
	if s.cap == 1 {
		plural = ""
	}
	return fmt.Sprintf("%s already has %d live connection%s, the most allowed; close one to open another", s.what, s.cap, plural)
}

func rateLimitedMessage(secs int) string {
	return fmt.Sprintf("Too many new connections; try again in %d seconds", secs)
}

func retrySeconds(d time.Duration) int { return max(int((d+time.Second-1)/time.Second), 1) }

// allowHandshake takes a new Engine.IO session from its client address's count, answering
// 429 when it is refused.
func (h *Hub) allowHandshake(w http.ResponseWriter, r *http.Request) bool {
	if h.rateLimit == nil {
		return true
	}
	ip := h.clientIP(r)
	ok, retry := h.rateLimit(r.Context(), BucketSocketIP, "ip:"+ip)
	if ok {
		return true
	}
	secs := retrySeconds(retry)
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusTooManyRequests)
	_, _ = fmt.Fprintf(w, `{"code":4,"message":%q,"retryAfter":%d}`, errRateLimited+": "+rateLimitedMessage(secs), secs)
	return false
}

// peerIP is the request's peer address, without the port.
func peerIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
