package realtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	sio "github.com/zishang520/socket.io/clients/socket/v3"
	"github.com/zishang520/socket.io/v3/pkg/types"
)

// tokenFor makes a token that testAuthenticate accepts.
func tokenFor(org, user, role string) string { return "valid:" + org + ":" + user + ":" + role }

// testAuthenticate stands in for the JWT check: "valid:<org>:<user>:<role>" is accepted.
func testAuthenticate(_ context.Context, token string) (Identity, error) {
	parts := strings.Split(token, ":")
	if len(parts) != 4 || parts[0] != "valid" {
		return Identity{}, errors.New("bad token")
	}
	return Identity{OrganizationID: parts[1], UserID: parts[2], Role: parts[3]}, nil
}

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// newHub builds a Hub closed at the end of the test; opts.Authenticate defaults to
// testAuthenticate.
func newHub(t testing.TB, opts Options) *Hub {
	t.Helper()
	if opts.Authenticate == nil {
		opts.Authenticate = testAuthenticate
	}
	if opts.Logger == nil {
		opts.Logger = testLogger(t)
	}
	h, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	return h
}

// serve mounts the hub the way the API server does and returns the base URL.
func serve(t testing.TB, h *Hub) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/socket.io/", h.Handler())
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

type event struct {
	name string
	args []any
}

// client is the library's Go client with every event recorded in arrival order.
type client struct {
	t      testing.TB
	sock   *sio.Socket
	events chan event
}

// dial connects with the library's Go client. transports: "websocket" (default) or "polling".
func dial(t testing.TB, baseURL, token string, transport string) *client {
	t.Helper()
	opts := sio.DefaultOptions()
	opts.SetForceNew(true)
	opts.SetReconnection(false)
	opts.SetTimeout(10 * time.Second)
	if token != "" {
		opts.SetAuth(map[string]any{"token": token})
	}
	switch transport {
	case "polling":
		opts.SetTransports(types.NewSet(sio.Polling))
	default:
		opts.SetTransports(types.NewSet(sio.WebSocket))
	}
	sock, err := sio.Connect(baseURL, opts)
	if err != nil {
		t.Fatal(err)
	}
	c := &client{t: t, sock: sock, events: make(chan event, 100000)}
	sock.OnAny(func(args ...any) {
		name, _ := args[0].(string)
		c.events <- event{name: name, args: args[1:]}
	})
	_ = sock.On("disconnect", func(args ...any) {
		c.events <- event{name: "disconnect", args: args}
	})
	_ = sock.On("connect_error", func(args ...any) {
		c.events <- event{name: "connect_error", args: args}
	})
	t.Cleanup(func() { sock.Disconnect() })
	return c
}

// next returns the next recorded event, failing the test after timeout.
func (c *client) next(timeout time.Duration) event {
	c.t.Helper()
	select {
	case e := <-c.events:
		return e
	case <-time.After(timeout):
		c.t.Fatalf("no event within %v", timeout)
		return event{}
	}
}

// expect returns the next event, which must be called name.
func (c *client) expect(name string) event {
	c.t.Helper()
	e := c.next(10 * time.Second)
	if e.name != name {
		c.t.Fatalf("got event %q %v, want %q", e.name, e.args, name)
	}
	return e
}

// authenticated waits for auth-success.
func (c *client) authenticated() map[string]any {
	c.t.Helper()
	e := c.expect(EventAuthSuccess)
	m, _ := e.args[0].(map[string]any)
	return m
}

// none asserts that no event arrives within d.
func (c *client) none(d time.Duration) {
	c.t.Helper()
	select {
	case e := <-c.events:
		c.t.Fatalf("unexpected event %q %v", e.name, e.args)
	case <-time.After(d):
	}
}

// field returns payload[key] of an event whose first argument is an object.
func field(e event, key string) any {
	if len(e.args) == 0 {
		return nil
	}
	m, _ := e.args[0].(map[string]any)
	return m[key]
}

var _ = fmt.Sprint
var _ sync.Mutex
