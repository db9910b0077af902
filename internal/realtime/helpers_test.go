package realtime

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
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

// start builds a Hub, mounts it the way the API server does and returns both. At the end of the
// test the Hub is closed before the HTTP server: Close answers pending long-polls, which
// httptest.Server.Close (like http.Server.Shutdown) would otherwise wait for.
func start(t testing.TB, opts Options) (*Hub, *httptest.Server) {
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
	mux := http.NewServeMux()
	mux.Handle("/socket.io/", h.Handler())
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		if err := h.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		srv.Close()
	})
	return h, srv
}

// member connects as a member of org over transport and waits for auth-success.
func member(t testing.TB, baseURL, transport, org, user string) *sioClient {
	t.Helper()
	c := dial(t, baseURL, dialOpts{transport: transport, auth: map[string]any{"token": tokenFor(org, user, "developer")}})
	c.expectEvent(EventAuthSuccess)
	return c
}

var transportNames = []string{"websocket", "polling"}

// logLines reads execution-log events of run taskID until n lines have arrived (an event may
// carry several, see Emit) and returns the lines in order.
func (c *sioClient) logLines(taskID string, n int) []string {
	c.t.Helper()
	var lines []string
	for len(lines) < n {
		got := decode[ExecutionLog](c.t, c.expectEvent(EventExecutionLog))
		if got.TaskID != taskID || !strings.HasSuffix(got.Log, "\n") {
			c.t.Fatalf("got %+v, want whole lines of run %q", got, taskID)
		}
		lines = append(lines, strings.SplitAfter(got.Log, "\n")...)
		lines = lines[:len(lines)-1] // SplitAfter leaves an empty tail
	}
	if len(lines) != n {
		c.t.Fatalf("got %d lines, want %d", len(lines), n)
	}
	return lines
}
