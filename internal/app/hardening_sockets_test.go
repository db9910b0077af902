//go:build integration

package app_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The Socket.IO hub takes its caps from the configuration and its rate limits from the API's
// limiter and buckets: VERDICT_SOCKETS_PER_USER caps a user's live sockets, bucket socket counts
// a user's connections, and bucket socket-ip refuses a new session from one address with 429.
func TestSocketBoundsFromConfiguration(t *testing.T) {
	limits := generousLimits()
	perUser, perIP := limits["socket"], limits["socket-ip"]
	perUser.Limit, perIP.Limit = 2, 4
	limits["socket"], limits["socket-ip"] = perUser, perIP
	h := newHarness(t, harnessOpts{dialect: "sqlite", rateLimits: limits, env: map[string]string{"VERDICT_SOCKETS_PER_USER": "1"}})
	a := h.signup("socks@example.com", "Socks Co")

	first := dialSocket(t, h.srv.URL, a.token) // session 1 from this address, socket 1 of a's
	if e := nextEvent(t, first, 10*time.Second); e.name != "auth-success" {
		t.Fatalf("first socket: %+v", e)
	}
	second := dialSocket(t, h.srv.URL, a.token) // 2, 2
	if e := nextEvent(t, second, 10*time.Second); e.name != "auth-error" || e.data["error"] != "Too many connections" ||
		e.data["message"] != "This user already has 1 live connection, the most allowed; close one to open another" {
		t.Fatalf("second socket of a user capped at 1: %+v", e)
	}
	third := dialSocket(t, h.srv.URL, a.token) // 3, 3: past the user's bucket
	if e := nextEvent(t, third, 10*time.Second); e.name != "auth-error" || e.data["error"] != "Rate limit exceeded" ||
		e.data["retryAfter"] != float64(30) || e.data["message"] != "Too many new connections; try again in 30 seconds" {
		t.Fatalf("third socket of a user limited to 2 a minute: %+v", e)
	}
	b := h.signup("other-socks@example.com", "Other Socks Co")
	if e := nextEvent(t, dialSocket(t, h.srv.URL, b.token), 10*time.Second); e.name != "auth-success" { // 4
		t.Fatalf("another user's socket: %+v", e)
	}
	res, err := http.Get(h.srv.URL + "/socket.io/?EIO=4&transport=polling") // 5: past the address's bucket
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") != "15" ||
		!strings.Contains(string(body), `"message":"Rate limit exceeded: Too many new connections; try again in 15 seconds"`) {
		t.Fatalf("fifth session from one address, 4 a minute allowed: %d %q %s", res.StatusCode, res.Header.Get("Retry-After"), body)
	}
}
