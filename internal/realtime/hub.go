// Package realtime is the Socket.IO v4 endpoint at /socket.io/ that pushes live execution
// updates to the members of an organization.
//
// A client sends its JWT in the handshake as auth.token, or an API key as auth.apiKey. The server accepts the namespace
// connection, verifies the token through the caller's Authenticator and then either puts the
// socket in room "org:<organizationId>" and emits auth-success, or emits auth-error and
// disconnects it. Hub.Emit sends an event to one organization's room only.
//
// Emit never blocks its caller: events are queued and delivered, in order, by one dispatcher
// goroutine (emit.go). With a Redis URL the library's Redis adapter fans every Emit out to the
// sockets of all replicas. HTTP long-polling clients then need sticky sessions at the load
// balancer, because an Engine.IO session lives in the replica that made it; WebSocket clients
// do not.
//
// What a client can make the hub hold is bounded: each connection's send queue, all of them
// together, the live sockets of a user, an API key and an organization, and the rate of new
// connections (limits.go).
//
// The server library (github.com/zishang520/socket.io v3.0.2) has connection-lifecycle bugs
// that this package works around at its edges; sessions.go lists them.
package realtime

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	rds "github.com/redis/go-redis/v9"
	"github.com/zishang520/socket.io/adapters/redis/v3"
	"github.com/zishang520/socket.io/adapters/redis/v3/adapter"
	"github.com/zishang520/socket.io/servers/engine/v3"
	"github.com/zishang520/socket.io/servers/socket/v3"
)

// Event names, as documented under GET /socket.io/ in docs/openapi.yaml.
const (
	EventAuthSuccess      = "auth-success"
	EventAuthError        = "auth-error"
	EventExecutionUpdated = "execution-updated"
	EventExecutionLog     = "execution-log"
)

// ExecutionLog is the payload of EventExecutionLog; Log holds one or more whole lines, which
// start Offset bytes into the run's log (a page that rendered the log's first n bytes skips
// what it has and asks for what it missed). The
// payload of EventExecutionUpdated is the REST API's execution view (api.Execution), so both
// show a run alike.
type ExecutionLog struct {
	TaskID string `json:"taskId"`
	Log    string `json:"log"`
	Offset int64  `json:"offset"`
	// Shard is the shard whose log it is (its offset is in that shard's log), in a sharded
	// run; 0 (left out) for a run of one container.
	Shard int `json:"shard,omitempty"`
}

// Identity is who an authenticated connection acts as.
type Identity struct {
	UserID         string
	OrganizationID string
	Role           string
	ExpiresIn      time.Duration // time left on the token: the socket is disconnected then (0: never)
	// APIKeyID is the API key the socket authenticated with ("" for a token): revoking the key
	// ends the socket (EndKeySessions).
	APIKeyID string
	// SessionID is the session whose token (or socket ticket) opened the socket: revoking the
	// session ends it (EndTokenSessions).
	SessionID string
	// Revoked, when set, tells whether the credential was revoked since the Authenticator
	// checked it. The hub asks once the socket is in its rooms: a revocation that came in
	// between found no socket to end, and is caught here.
	Revoked func() bool
}

// Authenticator verifies the handshake token (and re-reads the user, as every REST request does). Any error
// refuses the connection; its text is logged, never sent to the client.
type Authenticator func(ctx context.Context, token string) (Identity, error)

// Options configure a Hub.
type Options struct {
	// Authenticate is required.
	Authenticate Authenticator
	// RedisURL, e.g. redis://host:6379/0, makes replicas fan out to each other's clients. Empty
	// means in-memory: a single process.
	RedisURL string
	// RedisPrefix prefixes the adapter's pub/sub channel names; empty keeps the library's
	// default "socket.io". Replicas that should reach each other's clients use the same prefix.
	RedisPrefix string
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// AllowedOrigins lists the browser origins (scheme://host[:port]) that may connect besides
	// the server's own; "*" allows any. Requests without an Origin header (CI clients, scripts)
	// are always let through: the token, not the origin, is the credential.
	AllowedOrigins []string

	// What one client or tenant may make this replica hold (limits.go); zero takes the default.
	// QueueBytes bounds the bytes waiting to be written to one connection [DefaultQueueBytes]:
	// a connection past it is closed. QueueTotal bounds them for all connections together
	// [DefaultQueueTotal]: past it, each connection with more than a sixteenth of QueueBytes
	// waiting and nothing written for half a second is closed.
	QueueBytes int64
	QueueTotal int64
	// SocketsPerUser caps the live sockets of one user, and those of one API key
	// [DefaultSocketsPerUser]; SocketsPerOrg those of one organization [DefaultSocketsPerOrg].
	// Counted on this replica.
	SocketsPerUser int
	SocketsPerOrg  int
	// RateLimit counts new sessions by client address and authenticated sockets by user or
	// API key (BucketSocketIP, BucketSocket); nil: no rate limit.
	RateLimit RateLimiter
	// ClientIP is the address a new session is counted by; nil: the request's peer.
	ClientIP func(*http.Request) string
}

const (
	// emitQueueSize bounds the events waiting for the dispatcher. It fills only when Redis
	// stalls or events come faster than the dispatcher's ceiling (see the benchmarks); then Emit
	// drops rather than blocks its caller (a run's log pump).
	emitQueueSize = 16384
	// authTimeout bounds one Authenticator call.
	authTimeout = 10 * time.Second
	// rejectedConnGrace is how long a connection whose socket failed authentication may stay
	// open; compliant clients close it themselves on the DISCONNECT packet.
	rejectedConnGrace = 5 * time.Second
	// closeDrainTimeout bounds how long Close waits for already accepted events.
	closeDrainTimeout = 2 * time.Second
)

// Hub owns the Socket.IO server. Create it with New, mount Handler at /socket.io/, call Emit
// from anywhere, and Close it on shutdown.
type Hub struct {
	io      *socket.Server
	engine  engine.Server
	auth    Authenticator
	log     *slog.Logger
	origins originPolicy
	redis   *rds.Client // nil in memory mode

	// ctx is canceled by Close; it bounds authentications and Redis calls.
	ctx    context.Context
	cancel context.CancelFunc

	queue     chan emission
	done      chan struct{} // closed by Close: Emit stops accepting
	stopped   chan struct{} // closed when the dispatcher has returned
	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error

	// live maps an Engine.IO connection id to the id of its authenticated socket, so that the
	// grace timer of an earlier rejection on the same connection leaves it open.
	live sync.Map

	sessions sessions // Engine.IO session bookkeeping (sessions.go)

	rejectGrace time.Duration // rejectedConnGrace; tests shorten it

	// Bounds (limits.go).
	queueBytes, queueTotal        int64
	socketsPerUser, socketsPerOrg int
	rateLimit                     RateLimiter
	clientIP                      func(*http.Request) string
	outboxes                      sync.Map // Engine.IO connection id -> *outbox
	census                        census
	queued, maxQueued             atomic.Int64
	cut                           atomic.Uint64
	cutLog                        throttle
	collectMu                     sync.Mutex
	collectTimer                  *time.Timer // see collect

	dropped    atomic.Uint64
	dropLog    throttle
	redisLog   throttle
	emitErrLog throttle
}

// New builds a Hub; with a Redis URL it connects and subscribes before returning.
func New(opts Options) (*Hub, error) {
	if opts.Authenticate == nil {
		return nil, errors.New("realtime: Options.Authenticate is required")
	}
	origins, err := newOriginPolicy(opts.AllowedOrigins)
	if err != nil {
		return nil, err
	}
	if strings.ContainsAny(opts.RedisPrefix, "*?[]\\") {
		// The adapter subscribes with PSUBSCRIBE <prefix>#/#*, so glob characters would make
		// replicas receive other prefixes' events.
		return nil, fmt.Errorf("realtime: RedisPrefix %q must not contain glob characters", opts.RedisPrefix)
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	logger = logger.With("component", "realtime")

	ctx, cancel := context.WithCancel(context.Background())
	h := &Hub{
		auth:        opts.Authenticate,
		log:         logger,
		origins:     origins,
		ctx:         ctx,
		cancel:      cancel,
		queue:       make(chan emission, emitQueueSize),
		done:        make(chan struct{}),
		stopped:     make(chan struct{}),
		rejectGrace: rejectedConnGrace,

		queueBytes:     cmp.Or(opts.QueueBytes, DefaultQueueBytes),
		queueTotal:     cmp.Or(opts.QueueTotal, DefaultQueueTotal),
		socketsPerUser: cmp.Or(opts.SocketsPerUser, DefaultSocketsPerUser),
		socketsPerOrg:  cmp.Or(opts.SocketsPerOrg, DefaultSocketsPerOrg),
		rateLimit:      opts.RateLimit,
		clientIP:       opts.ClientIP,
	}
	if h.clientIP == nil {
		h.clientIP = peerIP
	}

	sopts := socket.DefaultServerOptions()
	// The library would look for the client bundle beside the executable; ours is embedded.
	sopts.SetServeClient(false)
	// Inbound only: clients send nothing but CONNECT and pongs.
	sopts.SetMaxHttpBufferSize(64 << 10)
	if cors := origins.cors(); cors != nil {
		sopts.SetCors(cors)
	}
	if opts.RedisURL != "" {
		if err := h.connectRedis(opts.RedisURL, opts.RedisPrefix, sopts); err != nil {
			cancel()
			return nil, err
		}
	}

	h.io = socket.NewServer(nil, sopts)
	eng, ok := h.io.ServeHandler(nil).(engine.Server)
	if !ok {
		cancel()
		return nil, errors.New("realtime: the Socket.IO library's handler is not an engine.Server")
	}
	h.engine = eng
	// Registered after the Socket.IO layer's own listener, so it runs once that layer is ready
	// for the connection's data (sessions.go).
	_ = h.io.Engine().On("connection", func(args ...any) {
		if c, ok := args[0].(engine.Socket); ok {
			id := c.Id()
			h.track(c)
			h.sessions.markReady(id)
			_ = c.Once("close", func(...any) { h.sessions.closed(id, c) })
		}
	})
	// Another replica ends a user's or a key's sessions: this one ends its own sockets of them.
	_ = h.io.Sockets().On(eventEndSessions, func(args ...any) {
		if len(args) > 0 {
			if room, ok := args[0].(string); ok && (strings.HasPrefix(room, "user:") || strings.HasPrefix(room, "key:")) {
				h.endLocalSessions(socket.Room(room))
			}
		}
	})
	_ = h.io.On("connection", func(args ...any) {
		if s, ok := args[0].(*socket.Socket); ok {
			h.onConnection(s)
		}
	})

	go h.dispatch()
	return h, nil
}

func (h *Hub) connectRedis(rawURL, prefix string, sopts *socket.ServerOptions) error {
	ropts, err := rds.ParseURL(rawURL)
	if err != nil {
		return fmt.Errorf("realtime: Redis URL: %w", err)
	}
	client := rds.NewClient(ropts)
	pingCtx, cancel := context.WithTimeout(h.ctx, 5*time.Second)
	defer cancel()
	if err := client.Ping(pingCtx).Err(); err != nil {
		_ = client.Close()
		return fmt.Errorf("realtime: Redis at %s: %w", ropts.Addr, err)
	}
	h.redis = client

	rc := redis.NewRedisClient(h.ctx, client)
	// The adapter reports publish and subscription failures here and nowhere else.
	_ = rc.On("error", func(args ...any) {
		if h.closed.Load() {
			return
		}
		if n, ok := h.redisLog.allow(); ok {
			h.log.Warn("redis adapter error", "error", fmt.Sprint(args...), "suppressed", n)
		}
	})
	aopts := adapter.DefaultRedisAdapterOptions()
	if prefix != "" {
		aopts.SetKey(prefix)
	}
	sopts.SetAdapter(&adapter.RedisAdapterBuilder{Redis: rc, Opts: aopts})
	return nil
}

// Close stops accepting events, delivers the ones already accepted, disconnects every client,
// ends pending authentications and long-polls, and leaves Redis. Call it before
// http.Server.Shutdown: Shutdown waits for in-flight requests, and long-polls are among them.
// It is safe to call more than once.
func (h *Hub) Close() error {
	h.closeOnce.Do(func() {
		h.closed.Store(true)
		close(h.done)
		select {
		case <-h.stopped:
		case <-time.After(closeDrainTimeout):
			// Redis is slow: cancelling fails the remaining PUBLISHes at once, so the rest of
			// the queue still reaches this replica's clients, just not the others'.
			h.log.Warn("close: Redis too slow, remaining events delivered locally only", "count", len(h.queue))
			h.cancel()
			<-h.stopped
		}
		h.io.Close(nil)
		h.cancel()
		h.sessions.reset()
		if h.redis != nil {
			h.closeErr = h.redis.Close()
		}
	})
	return h.closeErr
}

// throttle lets one log line through per interval and counts the ones it held back, so a
// Redis outage or a flood of drops cannot flood the log.
type throttle struct {
	mu         sync.Mutex
	last       time.Time
	suppressed uint64
}

const throttleInterval = 10 * time.Second

func (t *throttle) allow() (suppressed uint64, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	if !t.last.IsZero() && now.Sub(t.last) < throttleInterval {
		t.suppressed++
		return 0, false
	}
	t.last = now
	n := t.suppressed
	t.suppressed = 0
	return n, true
}
