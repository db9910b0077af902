// Package realtime is the Socket.IO v4 endpoint at /socket.io/ that pushes live execution
// updates to the members of an organization.
//
// A client sends its JWT in the handshake as auth.token. The server accepts the namespace
// connection, verifies the token through the caller's Authenticator and then either puts the
// socket in room "org:<organizationId>" and emits auth-success, or emits auth-error and
// disconnects it (DECISIONS 19). Hub.Emit sends an event to one organization's room only.
//
// With a Redis URL the library's Redis adapter fans every Emit out to the sockets of all
// replicas. HTTP long-polling clients then need sticky sessions at the load balancer, because an
// Engine.IO session lives in the replica that made it; WebSocket clients do not.
package realtime

import (
	"context"
	"encoding/json"
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
	"github.com/zishang520/socket.io/servers/socket/v3"
)

// Event names (SPEC "Events", DECISIONS 19).
const (
	EventAuthSuccess      = "auth-success"
	EventAuthError        = "auth-error"
	EventExecutionUpdated = "execution-updated"
	EventExecutionLog     = "execution-log"
)

// ExecutionLog is the payload of EventExecutionLog; Log holds one or more whole lines.
type ExecutionLog struct {
	TaskID string `json:"taskId"`
	Log    string `json:"log"`
}

// Identity is who an authenticated connection acts as.
type Identity struct {
	UserID         string
	OrganizationID string
	Role           string
}

// Authenticator verifies the handshake token (and re-reads the user, DECISIONS 3). Any error
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
}

const (
	// emitQueueSize bounds the events waiting for the dispatcher. It only fills when Redis
	// stalls; then Emit drops rather than blocks its caller (a run's log pump).
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
	engine  http.Handler
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

	rejectGrace time.Duration // rejectedConnGrace; tests shorten it

	dropped   atomic.Uint64
	dropLog   throttle
	redisLog  throttle
	emitErrLg throttle
}

type emission struct {
	room    socket.Room
	event   string
	payload []byte // JSON, encoded by Emit
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
	}

	sopts := socket.DefaultServerOptions()
	sopts.SetServeClient(false) // the library looks for client files beside the executable; we embed ours
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
	h.engine = h.io.ServeHandler(nil)
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

// Emit sends event with payload to the sockets in room org:<orgID>, on every replica when Redis
// is configured. It never waits for clients or Redis: the payload is encoded to JSON now (so the
// caller may reuse it) and queued for one dispatcher goroutine, which keeps events in Emit order.
// If the queue is full the event is dropped and logged. Emit after Close does nothing.
func (h *Hub) Emit(orgID, event string, payload any) {
	if orgID == "" || event == "" || socket.SOCKET_RESERVED_EVENTS.Has(event) {
		h.log.Error("emit refused: empty organization or event, or reserved event name", "organization", orgID, "event", event)
		return
	}
	b, err := json.Marshal(payload)
	if err != nil {
		h.log.Error("emit refused: payload is not JSON-encodable", "event", event, "error", err)
		return
	}
	select {
	case <-h.done:
		return
	default:
	}
	select {
	case h.queue <- emission{room: orgRoom(orgID), event: event, payload: b}:
	default:
		h.dropped.Add(1)
		if n, ok := h.dropLog.allow(); ok {
			h.log.Warn("emit queue full, event dropped", "event", event, "organization", orgID, "suppressed", n)
		}
	}
}

func orgRoom(orgID string) socket.Room { return socket.Room("org:" + orgID) }

// dispatch delivers queued events one at a time, which is what preserves their order.
func (h *Hub) dispatch() {
	defer close(h.stopped)
	for {
		select {
		case e := <-h.queue:
			h.broadcast(e)
		case <-h.done:
			for {
				select {
				case e := <-h.queue:
					h.broadcast(e)
				default:
					return
				}
			}
		}
	}
}

func (h *Hub) broadcast(e emission) {
	// The payload goes to the library as plain JSON values (maps, slices, float64...), not as
	// the caller's type: the Redis adapter encodes with msgpack, which ignores json tags, so a
	// struct would reach other replicas' clients with Go field names.
	var v any
	if err := json.Unmarshal(e.payload, &v); err != nil {
		h.log.Error("emit: re-decoding payload", "event", e.event, "error", err)
		return
	}
	// Broadcast writes into each client's buffer and returns; socket writes happen on the
	// library's per-connection goroutines. With Redis it also PUBLISHes, synchronously.
	if err := h.io.To(e.room).Emit(e.event, v); err != nil {
		if n, ok := h.emitErrLg.allow(); ok {
			h.log.Error("emit", "event", e.event, "error", err, "suppressed", n)
		}
	}
}

// Close stops accepting events, delivers the ones already accepted (waiting at most two
// seconds), disconnects every client, leaves Redis and waits for the Hub's goroutines.
// It is safe to call more than once.
func (h *Hub) Close() error {
	h.closeOnce.Do(func() {
		h.closed.Store(true)
		close(h.done)
		select {
		case <-h.stopped:
		case <-time.After(closeDrainTimeout):
			h.log.Warn("close: undelivered events abandoned", "count", len(h.queue))
			h.cancel() // fails the dispatcher's pending Redis call
			<-h.stopped
		}
		h.io.Close(nil)
		h.cancel()
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
