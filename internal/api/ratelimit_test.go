package api

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"verdict/internal/domain"
	"verdict/internal/ratelimit"
	"verdict/internal/testenv"
)

// The rate-limit headers and the 429, on the memory limiter with a controlled clock that stands
// half a second into a second, so the rounding shows.
func TestRateLimitHeaders(t *testing.T) {
	start := time.Date(2030, 1, 2, 3, 4, 5, 5e8, time.UTC)
	clock := testenv.NewClock(start)
	s := &Server{limiter: ratelimit.NewMemoryLimiter(clock.Now), log: slog.New(slog.DiscardHandler)}
	h := s.rateLimit(Rule{Name: "t", Limit: 5, Window: time.Minute, Key: byIP}, func(w http.ResponseWriter, r *http.Request) {})
	do := func() *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h(rec, httptest.NewRequest("GET", "/", nil))
		return rec
	}
	unix := func(t time.Time) string { return strconv.FormatInt(t.Add(time.Second-1).Unix(), 10) } // rounded up
	for i := 1; i <= 5; i++ {
		rec := do()
		hd := rec.Header()
		// Reset: when the bucket is full again, 12 s (one emission interval) per request taken.
		if rec.Code != 200 || hd.Get("X-RateLimit-Limit") != "5" || hd.Get("X-RateLimit-Remaining") != strconv.Itoa(5-i) ||
			hd.Get("X-RateLimit-Reset") != unix(start.Add(time.Duration(i)*12*time.Second)) || hd.Get("Retry-After") != "" {
			t.Fatalf("request %d: %d %v", i, rec.Code, hd)
		}
	}
	refused := func(retryAfter string) {
		t.Helper()
		rec := do()
		hd := rec.Header()
		var body struct {
			Error      string `json:"error"`
			RetryAfter int    `json:"retryAfter"`
		}
		_ = json.Unmarshal(rec.Body.Bytes(), &body)
		if rec.Code != 429 || body.Error != "Rate limit exceeded" || strconv.Itoa(body.RetryAfter) != retryAfter ||
			hd.Get("Retry-After") != retryAfter || hd.Get("X-RateLimit-Remaining") != "0" ||
			hd.Get("X-RateLimit-Reset") != unix(start.Add(time.Minute)) { // a refusal takes nothing
			t.Fatalf("refused: %d %v %s; want Retry-After %s", rec.Code, hd, rec.Body, retryAfter)
		}
	}
	refused("12")
	clock.Advance(11*time.Second + 900*time.Millisecond)
	refused("1") // 0.1 s rounds up: never 0
	clock.Advance(100 * time.Millisecond)
	if rec := do(); rec.Code != 200 || rec.Header().Get("X-RateLimit-Remaining") != "0" ||
		rec.Header().Get("X-RateLimit-Reset") != unix(start.Add(72*time.Second)) {
		t.Fatalf("at Retry-After: %d %v", rec.Code, rec.Header())
	}
}

// A limiter that cannot answer lets the request through, without rate-limit headers, and logs.
func TestRateLimitOutageLetsThrough(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: time.Second})
	defer client.Close()
	var logs bytes.Buffer
	s := &Server{limiter: ratelimit.NewRedisLimiter(client, "x:", domain.SystemClock), log: slog.New(slog.NewTextHandler(&logs, nil))}
	reached := false
	h := s.rateLimit(Rule{Name: "t", Limit: 1, Window: time.Minute, Key: byIP}, func(w http.ResponseWriter, r *http.Request) { reached = true })
	rec := httptest.NewRecorder()
	h(rec, httptest.NewRequest("GET", "/", nil))
	if !reached || rec.Header().Get("X-RateLimit-Limit") != "" || !strings.Contains(logs.String(), "rate limiter unavailable") {
		t.Fatalf("reached %v, headers %v, log %q", reached, rec.Header(), logs.String())
	}
}
