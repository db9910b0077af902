//go:build integration

package app_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"verdict/internal/testenv"
)

// sseEvent is one Server-Sent Event as a client parses it.
type sseEvent struct {
	id, event, data string
}

// openSSE opens GET /api/executions/{task}/events; hdr are extra header name/value pairs.
func (h *harness) openSSE(ctx context.Context, path string, a auth, hdr ...string) *http.Response {
	h.t.Helper()
	req, err := http.NewRequestWithContext(ctx, "GET", h.srv.URL+path, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	a.sign(req, hdr...)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	return res
}

// readSSE parses events from r until it ends or fn returns false.
func readSSE(r io.Reader, fn func(sseEvent) bool) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var ev sseEvent
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if ev.event != "" || ev.data != "" {
				if !fn(ev) {
					return nil
				}
			}
			ev = sseEvent{}
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "id: "):
			ev.id = line[4:]
		case strings.HasPrefix(line, "event: "):
			ev.event = line[7:]
		case strings.HasPrefix(line, "data: "):
			ev.data += line[6:]
		}
	}
	return sc.Err()
}

// followed is what a client made of a stream: the log's text and the final view.
type followed struct {
	log      strings.Builder
	from     int64 // the offset the stream started at
	events   int
	updates  []map[string]any
	lastID   string
	afterEnd bool // a log event came after the final update
}

// consume checks each log event's offset and id against what came before and keeps the text.
// stop (optional) ends reading early.
func (f *followed) consume(t *testing.T, body io.Reader, stop func(*followed) bool) {
	t.Helper()
	final := false
	err := readSSE(body, func(ev sseEvent) bool {
		f.events++
		switch ev.event {
		case "execution-log":
			var d struct {
				TaskID string `json:"taskId"`
				Log    string `json:"log"`
				Offset int64  `json:"offset"`
			}
			if err := json.Unmarshal([]byte(ev.data), &d); err != nil {
				t.Errorf("log event %q: %v", ev.data, err)
				return false
			}
			if want := f.from + int64(f.log.Len()); d.Offset != want {
				t.Errorf("log event at offset %d, want %d", d.Offset, want)
				return false
			}
			if len(d.Log) > 64<<10 {
				t.Errorf("log event of %d bytes", len(d.Log))
			}
			f.log.WriteString(d.Log)
			if want := strconv.FormatInt(f.from+int64(f.log.Len()), 10); ev.id != want {
				t.Errorf("event id %s, want %s", ev.id, want)
			}
			if final {
				f.afterEnd = true
			}
		case "execution-updated":
			var v map[string]any
			if err := json.Unmarshal([]byte(ev.data), &v); err != nil {
				t.Errorf("update %q: %v", ev.data, err)
				return false
			}
			f.updates = append(f.updates, v)
			if s, _ := v["status"].(string); isFinal(s) {
				final = true
			}
		}
		f.lastID = ev.id
		return stop == nil || !stop(f)
	})
	if err != nil && stop == nil {
		t.Errorf("reading the stream: %v", err)
	}
}

func isFinal(s string) bool {
	switch s {
	case "PASSED", "FAILED", "UNSTABLE", "ERROR", "CANCELLED":
		return true
	}
	return false
}

func (f *followed) finalStatus() string {
	if len(f.updates) == 0 {
		return ""
	}
	s, _ := f.updates[len(f.updates)-1]["status"].(string)
	return s
}

// storedLog is the run's whole log as GET …/logs answers it.
func (h *harness) storedLog(a auth, task string) string {
	h.t.Helper()
	r := h.do("GET", "/api/executions/"+task+"/logs", a, nil)
	expect(h.t, r, 200, "")
	return r.str("logs")
}

// TestSSEFollow follows a real run over SSE with an API key: the log events come in order
// with ids that are their end offsets, then the final update ends the stream, and the text
// equals the stored log. A stream cut in the middle resumes with Last-Event-ID without a byte
// repeated or missing; ?since= after the end gives the rest and the update; another
// organization's run is the 404 of GET /api/executions/{taskId}.
func TestSSEFollow(t *testing.T) {
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			h := runHarness(t, dialect)
			admin := h.signup("sse@example.com", "SSE Co")
			key := h.do("POST", "/api/auth/api-keys", bearer(admin.token), map[string]any{"name": "ci"}).str("apiKey")
			k := apiKey(key)
			task := h.queue(k, map[string]any{"image": slowImage, "envVars": map[string]any{"LINES": "300", "INTERVAL_MS": "10"}})
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()

			// A whole stream, and a second one cut after some log and resumed.
			var whole, first, resumed followed
			res := h.openSSE(ctx, "/api/executions/"+task+"/events", k)
			if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream; charset=utf-8" ||
				res.Header.Get("Cache-Control") != "no-store" || res.Header.Get("X-Accel-Buffering") != "no" {
				t.Fatalf("stream: %d %v", res.StatusCode, res.Header)
			}
			var wg sync.WaitGroup
			wg.Add(1)
			go func() { defer wg.Done(); defer res.Body.Close(); whole.consume(t, res.Body, nil) }()

			// Bearer pk_live_… is an API key too.
			cut := h.openSSE(ctx, "/api/executions/"+task+"/events", auth{}, "Authorization", "Bearer "+key)
			first.consume(t, cut.Body, func(f *followed) bool { return f.log.Len() >= 2000 })
			cut.Body.Close()
			if first.log.Len() < 2000 || isFinal(first.finalStatus()) {
				t.Fatalf("cut stream: %d bytes, status %q", first.log.Len(), first.finalStatus())
			}
			resumed.from, _ = strconv.ParseInt(first.lastID, 10, 64)
			again := h.openSSE(ctx, "/api/executions/"+task+"/events", k, "Last-Event-ID", first.lastID)
			resumed.consume(t, again.Body, nil)
			again.Body.Close()
			wg.Wait()

			stored := h.storedLog(k, task)
			if !strings.Contains(stored, "line 300 of 300") {
				t.Fatalf("stored log: %q", stored)
			}
			if whole.log.String() != stored || whole.afterEnd || whole.finalStatus() != "PASSED" {
				t.Fatalf("whole stream: %d bytes of %d, after end %v, status %q", whole.log.Len(), len(stored), whole.afterEnd, whole.finalStatus())
			}
			if got := first.log.String() + resumed.log.String(); got != stored || resumed.finalStatus() != "PASSED" {
				t.Fatalf("resumed stream: %d+%d bytes of %d, status %q", first.log.Len(), resumed.log.Len(), len(stored), resumed.finalStatus())
			}

			// After the end: ?since= gives the rest, then the final update, then the end.
			var tail followed
			tail.from = int64(len(stored) - 100)
			res = h.openSSE(ctx, fmt.Sprintf("/api/executions/%s/events?since=%d", task, tail.from), bearer(admin.token))
			tail.consume(t, res.Body, nil)
			res.Body.Close()
			if tail.log.String() != stored[len(stored)-100:] || len(tail.updates) != 1 || tail.finalStatus() != "PASSED" {
				t.Fatalf("since after the end: %q %v", tail.log.String(), tail.updates)
			}
			if tail.updates[0]["taskId"] != task {
				t.Fatalf("final view: %v", tail.updates[0])
			}

			// Another organization: the 404 of GET /api/executions/{taskId}, as JSON.
			other := h.signup("other@example.com", "Other Co")
			want := h.do("GET", "/api/executions/"+task, bearer(other.token), nil)
			got := h.do("GET", "/api/executions/"+task+"/events", bearer(other.token), nil)
			if got.status != 404 || got.raw != want.raw {
				t.Fatalf("other organization: %d %s, want %s", got.status, got.raw, want.raw)
			}
			expect(t, h.do("GET", "/api/executions/"+task+"/events?since=x", k, nil), 400, "Validation error")
			expect(t, h.do("GET", "/api/executions/"+task+"/events", auth{}, nil, "Authorization", "Bearer pk_live_"+strings.Repeat("0", 64)), 401, "Invalid API key")
			// On a bearer-only route an API key stays refused, in either header.
			expect(t, h.do("GET", "/api/auth/api-keys", auth{}, nil, "Authorization", "Bearer "+key), 403, "API key not allowed")
			expect(t, h.do("GET", "/api/auth/api-keys", k, nil), 403, "API key not allowed")
		})
	}
}

// TestSSEManyFollowers follows one run with 200 streams: one topic in the broadcaster, every
// stream gets the whole log and the final update.
func TestSSEManyFollowers(t *testing.T) {
	h := runHarness(t, "sqlite")
	admin := h.signup("many@example.com", "Many Co")
	a := bearer(admin.token)
	task := h.queue(a, map[string]any{"image": slowImage, "envVars": map[string]any{"LINES": "100", "INTERVAL_MS": "30"}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const n = 200
	streams := make([]followed, n)
	var wg sync.WaitGroup
	for i := range streams {
		res := h.openSSE(ctx, "/api/executions/"+task+"/events", a)
		if res.StatusCode != 200 {
			t.Fatalf("stream %d: %d", i, res.StatusCode)
		}
		wg.Add(1)
		go func() { defer wg.Done(); defer res.Body.Close(); streams[i].consume(t, res.Body, nil) }()
	}
	deadline := time.Now().Add(10 * time.Second)
	for h.app.Follow.Stats().Followers < n && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	st := h.app.Follow.Stats()
	if st.Followers != n || st.Runs != 1 || st.Upstream != 0 {
		t.Fatalf("stats with %d followers: %+v", n, st)
	}
	wg.Wait()
	stored := h.storedLog(a, task)
	for i := range streams {
		if streams[i].log.String() != stored || streams[i].finalStatus() != "PASSED" {
			t.Fatalf("stream %d: %d bytes of %d, status %q", i, streams[i].log.Len(), len(stored), streams[i].finalStatus())
		}
	}
	if st := h.app.Follow.Stats(); st.Followers != 0 || st.Runs != 0 {
		t.Fatalf("stats after the end: %+v", st)
	}
}

// TestSSESlowFollowerDropped opens a stream and never reads it while a chatty run logs
// megabytes: the follower's buffer stays within its bound, the follower is dropped and its
// connection ends, and a reading follower of the same run is not disturbed.
func TestSSESlowFollowerDropped(t *testing.T) {
	testenv.DockerHost(t)
	const bound = 1 << 20
	h := newHarness(t, harnessOpts{dialect: "sqlite", realClock: true, workers: true, lease: 2 * time.Second,
		followBuffer: bound})
	admin := h.signup("slow@example.com", "Slow Co")
	task := h.queue(bearer(admin.token), map[string]any{"image": slowImage, "envVars": map[string]any{"LINES": "300000", "INTERVAL_MS": "0"}})

	// A small receive buffer, set before connecting so that the window is negotiated with it.
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 16<<10) })
	}}
	conn, err := d.Dial("tcp", strings.TrimPrefix(h.srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /api/executions/%s/events HTTP/1.1\r\nHost: verdict\r\nAuthorization: Bearer %s\r\n\r\n", task, admin.token)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var reader followed
	res := h.openSSE(ctx, "/api/executions/"+task+"/events", bearer(admin.token))
	done := make(chan struct{})
	go func() { defer close(done); defer res.Body.Close(); reader.consume(t, res.Body, nil) }()

	deadline := time.Now().Add(2 * time.Minute)
	for h.app.Follow.Stats().Dropped == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the silent follower was never dropped: %+v", h.app.Follow.Stats())
		}
		time.Sleep(20 * time.Millisecond)
	}
	st := h.app.Follow.Stats()
	if st.MaxQueued > bound || st.Dropped != 1 {
		t.Fatalf("stats: %+v (bound %d)", st, bound)
	}
	// Its stream ends: reading now drains what the kernel held, then the response's end (or a
	// cut connection, when the drop interrupted a write).
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	br := bufio.NewReader(conn)
	silent, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, silent.Body)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("the silent follower's stream did not end: %v after %d bytes", err, n)
	}
	<-done
	stored := h.storedLog(bearer(admin.token), task)
	if len(stored) < 4<<20 || reader.log.String() != stored || reader.finalStatus() != "PASSED" {
		t.Fatalf("reading follower: %d bytes of %d, status %q; stats %+v", reader.log.Len(), len(stored), reader.finalStatus(), h.app.Follow.Stats())
	}
	t.Logf("silent follower got %d bytes before it was dropped; log %d bytes; stats %+v", n, len(stored), h.app.Follow.Stats())
}

// TestSSEAcrossReplicas follows, on one replica, a run that another replica executes: the
// events cross through Redis (one subscription per replica).
func TestSSEAcrossReplicas(t *testing.T) {
	testenv.DockerHost(t)
	dbURL := testenv.PostgresDB(t)
	prefix := testenv.KeyPrefix(t)
	runner := newHarness(t, harnessOpts{dialect: "postgres", databaseURL: dbURL, redis: true, redisPrefix: prefix,
		realClock: true, workers: true, lease: 2 * time.Second})
	other := newHarness(t, harnessOpts{dialect: "postgres", databaseURL: dbURL, redis: true, redisPrefix: prefix, realClock: true})
	admin := runner.signup("replicas@example.com", "Replica Co")
	a := bearer(admin.token)
	task := runner.queue(a, map[string]any{"image": slowImage, "envVars": map[string]any{"LINES": "200", "INTERVAL_MS": "20"}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var f followed
	res := other.openSSE(ctx, "/api/executions/"+task+"/events", a)
	f.consume(t, res.Body, nil)
	res.Body.Close()
	stored := runner.storedLog(a, task)
	if f.log.String() != stored || f.finalStatus() != "PASSED" {
		t.Fatalf("followed on the other replica: %d bytes of %d, status %q", f.log.Len(), len(stored), f.finalStatus())
	}
	if st := other.app.Follow.Stats(); st.Upstream != 1 || st.Delivered == 0 {
		t.Fatalf("the other replica's broadcaster: %+v", st)
	}
}

// TestSocketAPIKey opens Socket.IO with auth: {apiKey}: the key's user and organization, and
// the run's events; an unknown key is refused with auth-error.
func TestSocketAPIKey(t *testing.T) {
	h := runHarness(t, "sqlite")
	admin := h.signup("sockkey@example.com", "Sock Co")
	created := h.do("POST", "/api/auth/api-keys", bearer(admin.token), map[string]any{"name": "ci"})
	key := created.str("apiKey")
	events := dialSocketAuth(t, h.srv.URL, map[string]any{"apiKey": key})
	e := nextEvent(t, events, 10*time.Second)
	if e.name != "auth-success" || e.data["userId"] != admin.id || e.data["organizationId"] != admin.orgID || e.data["role"] != "admin" {
		t.Fatalf("handshake with an API key: %+v", e)
	}
	task := h.queue(apiKey(key), map[string]any{"image": passImage})
	deadline := time.After(60 * time.Second)
	for done := false; !done; {
		select {
		case e := <-events:
			if e.name == "execution-updated" && e.data["taskId"] == task && isFinal(fmt.Sprint(e.data["status"])) {
				done = true
			}
		case <-deadline:
			t.Fatal("no final execution-updated over the API key's socket")
		}
	}
	// Revoking the key ends its socket at once (and not the user's other sessions).
	own := dialSocketAuth(t, h.srv.URL, map[string]any{"token": admin.token})
	if e := nextEvent(t, own, 10*time.Second); e.name != "auth-success" {
		t.Fatalf("the admin's own socket: %+v", e)
	}
	expect(t, h.do("DELETE", "/api/auth/api-keys/"+created.str("data", "id"), bearer(admin.token), nil), 200, "")
	for {
		e := nextEvent(t, events, 10*time.Second)
		if e.name == "auth-error" {
			if !strings.Contains(fmt.Sprint(e.data["error"]), "Session ended") {
				t.Fatalf("the revoked key's socket: %+v", e)
			}
			break
		}
	}
	h.queue(bearer(admin.token), map[string]any{"image": passImage, "taskId": "after-revoke"})
	for {
		e := nextEvent(t, own, 30*time.Second)
		if e.name == "auth-error" {
			t.Fatalf("revoking a key ended the user's token socket: %+v", e)
		}
		if e.name == "execution-updated" && e.data["taskId"] == "after-revoke" {
			break
		}
	}
	bad := dialSocketAuth(t, h.srv.URL, map[string]any{"apiKey": "pk_live_" + strings.Repeat("0", 64)})
	if e := nextEvent(t, bad, 10*time.Second); e.name != "auth-error" || e.data["error"] != "Invalid or expired token" {
		t.Fatalf("unknown key: %+v", e)
	}
}
