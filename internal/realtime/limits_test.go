package realtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"verdict/internal/domain"
	"verdict/internal/ratelimit"
	"verdict/internal/testenv"
)

// stopReading connects a member over transport, reads up to auth-success and then never reads
// again (nor polls): the client an attack leaves behind, its session kept open.
func stopReading(t *testing.T, baseURL, transport, org, user string) *sioClient {
	t.Helper()
	c := dial(t, baseURL, dialOpts{transport: transport, noReader: true, auth: map[string]any{"token": tokenFor(org, user, "viewer")}})
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		f, err := c.recv()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(f, `42["auth-success"`) {
			return c
		}
	}
	t.Fatal("no auth-success")
	return nil
}

// heapAlloc is the live heap after a collection.
func heapAlloc() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// A client that stops reading (and, over polling, stops polling) while many MB go to its
// organization is disconnected once its queue passes the bound, and the hub holds no more than
// the bound for it; a client that reads gets every line, in order, and stays connected.
func TestSocketThatStopsReadingIsCut(t *testing.T) {
	if testing.Short() {
		t.Skip("many MB to a stalled client on each transport, 2 to 8 s: the full tier (go test without -short) runs it")
	}
	for _, tr := range transportNames {
		t.Run(tr, func(t *testing.T) {
			h, srv := start(t, Options{})
			stalled := stopReading(t, srv.URL, tr, "acme", "stalled")
			reader := member(t, srv.URL, "websocket", "acme", "reader")
			before := heapAlloc()

			// 32 MiB of log: far more than the bound and the loopback's socket buffers together.
			const chunks = 1024
			total := chunks * chunkLen
			if err := emitToReader(h, "acme", reader, chunks); err != nil {
				t.Fatalf("%v; %+v", err, h.QueueStats())
			}
			held := heapAlloc() - before
			st := h.QueueStats()
			t.Logf("%s: %d MiB emitted; heap %+.1f MiB; %+v", tr, total>>20, float64(held)/(1<<20), st)

			// Reading the stalled session now ends in its close, after what the socket buffers
			// held, never in the whole log.
			received := 0
			var err error
			for {
				var f string
				if f, err = stalled.recv(); err != nil {
					break
				}
				received += len(f)
				if tr == "polling" && !strings.Contains(f, EventExecutionLog) {
					err = fmt.Errorf("poll answered %.60q", f)
					break
				}
			}
			t.Logf("the stalled client then read %.1f MiB before: %v", float64(received)/(1<<20), err)
			if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() || received >= total {
				t.Fatalf("the stalled client's session was never closed: it read %d bytes of %d, then %v", received, total, err)
			}
			if held > 16<<20 {
				t.Fatalf("the heap grew by %.1f MiB with a stalled client in the room", float64(held)/(1<<20))
			}
			if st.Cut != 1 {
				t.Fatalf("%d connections closed, want 1 (the stalled one)", st.Cut)
			}
			// The bound, and what reached the queue while the connection was being closed.
			if st.MaxQueued > DefaultQueueBytes+2<<20 {
				t.Fatalf("a connection had %d bytes queued, bound %d", st.MaxQueued, DefaultQueueBytes)
			}
			waitFor(t, 5*time.Second, "the queues to be empty", func() bool { return h.QueueStats().Queued < 64<<10 })
		})
	}
}

// queueOrgs is how many organizations stalledOrgs gives a stalled client; queueChunk is the
// 16 KiB log chunk the queue tests emit to each.
const queueOrgs = 6

var queueChunk = strings.Repeat("y", 16<<10-1) + "\n"

// stalledOrgs starts a hub with opts, a client of each of queueOrgs organizations that stops
// polling, and a WebSocket client of org0 that reads.
func stalledOrgs(t *testing.T, opts Options) (*Hub, *sioClient) {
	t.Helper()
	h, srv := start(t, opts)
	for i := range queueOrgs {
		stopReading(t, srv.URL, "polling", fmt.Sprint("org", i), "stalled")
	}
	return h, member(t, srv.URL, "websocket", "org0", "reader")
}

// Past the bound of all queues together, a connection with more than a sixteenth of its own
// bound waiting and nothing written for a second is closed, however many organizations the
// stalled clients come from; a client that reads keeps its connection.
func TestQueuesTogetherAreBounded(t *testing.T) {
	t.Parallel() // it waits out real timers; alone it would hold a test slot
	const perConn, together = 1 << 20, 2 << 20
	h, reader := stalledOrgs(t, Options{QueueBytes: perConn, QueueTotal: together})
	emit := func(rounds int) {
		for range rounds {
			for i := range queueOrgs {
				h.Emit(fmt.Sprint("org", i), EventExecutionLog, ExecutionLog{TaskID: "t", Log: queueChunk})
			}
			time.Sleep(time.Millisecond)
		}
		waitFor(t, 5*time.Second, "the dispatcher", func() bool { return len(h.queue) == 0 })
		time.Sleep(100 * time.Millisecond)
	}
	emit(24) // 384 KiB to each: 2.25 MiB in all, past the bound, but nobody has waited a second
	if st := h.QueueStats(); st.Cut != 0 || st.Queued < together {
		t.Fatalf("before a second has passed: %+v", st)
	}
	time.Sleep(stallGrace)
	emit(24) // 384 KiB more to each: under each connection's own bound
	st := h.QueueStats()
	t.Logf("%+v", st)
	if st.Cut == 0 || st.Queued > together+perConn/pressureShare*queueOrgs {
		t.Fatalf("%d bytes queued for stalled clients, bound %d together: %+v", st.Queued, together, st)
	}
	if st.MaxQueued > perConn {
		t.Fatalf("one connection had %d bytes queued, more than its own bound %d", st.MaxQueued, perConn)
	}
	if got := len(reader.logLines("t", 48)); got != 48 || isEnded(reader) {
		t.Fatalf("the reader got %d lines, ended %v", got, isEnded(reader))
	}
}

// Past one and a half times the bound of all queues together, a connection with more than a
// sixteenth of its own bound waiting and nothing written for 50 ms is closed, without waiting
// for the half second: a fast log to many stalled connections would otherwise fill each one's
// own bound within it. A client that reads keeps its connection.
func TestQueuesPastTheirBoundByHalfAreCutAtOnce(t *testing.T) {
	t.Parallel()
	const perConn, together = 1 << 20, 1 << 20
	h, reader := stalledOrgs(t, Options{QueueBytes: perConn, QueueTotal: together})
	start := time.Now()
	for range 24 { // 384 KiB to each over about 100 ms: 2.25 MiB in all, past 1.5 times the bound
		for i := range queueOrgs {
			h.Emit(fmt.Sprint("org", i), EventExecutionLog, ExecutionLog{TaskID: "t", Log: queueChunk})
		}
		time.Sleep(4 * time.Millisecond)
	}
	waitFor(t, 5*time.Second, "the dispatcher", func() bool { return len(h.queue) == 0 })
	st := h.QueueStats()
	t.Logf("after %s: %+v", time.Since(start).Round(time.Millisecond), st)
	if st.Cut == 0 {
		t.Fatalf("nothing closed with %d bytes queued, 1.5 times the bound being %d: %+v", st.Queued, together*3/2, st)
	}
	if st.Queued > together*3/2+perConn/pressureShare*queueOrgs {
		t.Fatalf("%d bytes stayed queued for stalled clients, 1.5 times the bound being %d: %+v", st.Queued, together*3/2, st)
	}
	if got := len(reader.logLines("t", 24)); got != 24 || isEnded(reader) {
		t.Fatalf("the reader got %d lines, ended %v", got, isEnded(reader))
	}
}

func isEnded(c *sioClient) bool {
	select {
	case <-c.ended:
		return true
	default:
		return false
	}
}

// keyAuthenticate is testAuthenticate, plus "key:<org>:<user>:<keyID>" for a socket opened
// with an API key.
func keyAuthenticate(ctx context.Context, token string) (Identity, error) {
	if p := strings.Split(token, ":"); len(p) == 4 && p[0] == "key" {
		return Identity{OrganizationID: p[1], UserID: p[2], Role: "developer", APIKeyID: p[3]}, nil
	}
	return testAuthenticate(ctx, token)
}

// connectAs dials over transport with token and returns the first event's name and payload.
func connectAs(t *testing.T, baseURL, transport, token string) (*sioClient, string, map[string]any) {
	t.Helper()
	c := dial(t, baseURL, dialOpts{transport: transport, auth: map[string]any{"token": token}})
	name, arg, ok := parseEvent(c.next(10 * time.Second))
	if !ok {
		t.Fatal("no event after CONNECT")
	}
	return c, name, decode[map[string]any](t, arg)
}

// The sockets of one user, of one API key and of one organization are capped: the one past the
// cap gets auth-error "Too many connections" with a message naming the cap, and is disconnected;
// a socket that closes frees its place.
func TestSocketCaps(t *testing.T) {
	t.Parallel() // it waits out real timers; alone it would hold a test slot
	for _, tr := range transportNames {
		t.Run(tr, func(t *testing.T) {
			t.Parallel() // each transport has a hub of its own
			h, srv := start(t, Options{Authenticate: keyAuthenticate, SocketsPerUser: 2, SocketsPerOrg: 5})
			h.rejectGrace = 300 * time.Millisecond
			refused := func(token, message string) {
				t.Helper()
				c, name, p := connectAs(t, srv.URL, tr, token)
				if name != EventAuthError || p["error"] != "Too many connections" || p["message"] != message {
					t.Fatalf("socket past the cap: %s %v, want auth-error Too many connections: %q", name, p, message)
				}
				c.waitEnded(5 * time.Second)
			}
			u1 := member(t, srv.URL, tr, "acme", "u1")
			member(t, srv.URL, tr, "acme", "u1")
			refused(tokenFor("acme", "u1", "developer"),
				"This user already has 2 live connections, the most allowed; close one to open another")

			// An API key counts apart from its user's other sockets.
			for range 2 {
				if _, name, p := connectAs(t, srv.URL, tr, "key:acme:u1:k1"); name != EventAuthSuccess {
					t.Fatalf("socket of key k1: %s %v", name, p)
				}
			}
			refused("key:acme:u1:k1", "This API key already has 2 live connections, the most allowed; close one to open another")

			// The organization's fifth socket is its last; another organization is not counted with it.
			member(t, srv.URL, tr, "acme", "u2")
			refused(tokenFor("acme", "u3", "viewer"),
				"Your organization already has 5 live connections, the most allowed; close one to open another")
			member(t, srv.URL, tr, "globex", "g1")

			// Closing a socket frees its place, in the user's count and in the organization's.
			u1.stop()
			waitFor(t, 5*time.Second, "the closed socket's place", func() bool {
				h.census.mu.Lock()
				defer h.census.mu.Unlock()
				return h.census.n["user:u1"] == 1 && h.census.n["org:acme"] == 4
			})
			member(t, srv.URL, tr, "acme", "u1")
			// Refused sockets took no place: the counts are what the live sockets make.
			h.census.mu.Lock()
			counts := fmt.Sprint(h.census.n)
			h.census.mu.Unlock()
			if want := "map[key:k1:2 org:acme:5 org:globex:1 user:g1:1 user:u1:2 user:u2:1]"; counts != want {
				t.Fatalf("counts %s, want %s", counts, want)
			}
		})
	}
}

// A socket that ends any other way (its token expires, its user's sessions are ended, the
// client leaves while its token is checked) gives its place back too.
func TestSocketCapReleasedOnServerDisconnect(t *testing.T) {
	t.Parallel() // it waits out real timers; alone it would hold a test slot
	release := make(chan struct{})
	auth := func(ctx context.Context, token string) (Identity, error) {
		if token == "slow" {
			<-release
			return Identity{OrganizationID: "acme", UserID: "u1", Role: "viewer"}, nil
		}
		id, err := testAuthenticate(ctx, token)
		id.ExpiresIn = time.Hour
		if strings.Contains(token, ":short:") {
			id.ExpiresIn = 200 * time.Millisecond
		}
		return id, err
	}
	h, srv := start(t, Options{Authenticate: auth, SocketsPerUser: 1})
	counted := func() int {
		h.census.mu.Lock()
		defer h.census.mu.Unlock()
		return h.census.n["org:acme"]
	}
	c := member(t, srv.URL, "websocket", "acme", "short")
	c.expectEvent(EventAuthError) // the token expired
	waitFor(t, 5*time.Second, "the expired socket's place", func() bool { return counted() == 0 })

	member(t, srv.URL, "websocket", "acme", "u1")
	h.EndUserSessions("u1")
	waitFor(t, 5*time.Second, "the ended socket's place", func() bool { return counted() == 0 })

	slow := dial(t, srv.URL, dialOpts{auth: map[string]any{"token": "slow"}})
	slow.stop()
	close(release)
	time.Sleep(200 * time.Millisecond)
	if n := counted(); n != 0 {
		t.Fatalf("a socket that left while its token was checked holds %d places", n)
	}
	member(t, srv.URL, "websocket", "acme", "u1")
}

// limiterFor is the API's rate limiter (internal/ratelimit, in memory) with the given buckets.
func limiterFor(buckets map[string]int) RateLimiter {
	l := ratelimit.NewMemoryLimiter(domain.SystemClock)
	return func(ctx context.Context, bucket, key string) (bool, time.Duration) {
		d, err := l.Allow(ctx, "rl:"+bucket+":"+key, buckets[bucket], time.Minute)
		if err != nil {
			panic(err)
		}
		return d.Allowed, d.RetryAfter
	}
}

// New sessions are rate limited by client address before anything is done for them: a
// handshake past the bucket answers 429 with Retry-After, by polling and over WebSocket alike.
// Requests of an existing session (its polls, its upgrade) are not counted.
func TestHandshakeRateLimitByAddress(t *testing.T) {
	var addr atomic.Value
	addr.Store("198.51.100.7")
	_, srv := start(t, Options{RateLimit: limiterFor(map[string]int{BucketSocketIP: 3, BucketSocket: 100}),
		ClientIP: func(*http.Request) string { return addr.Load().(string) }})
	c := member(t, srv.URL, "polling", "acme", "u1") // 1, its polls not counted
	member(t, srv.URL, "websocket", "acme", "u1")    // 2
	for range 5 {
		req, _ := http.NewRequest("POST", srv.URL+"/socket.io/?EIO=4&transport=polling&sid="+c.sid, strings.NewReader("3"))
		res, err := http.DefaultClient.Do(req)
		if err != nil || res.StatusCode != 200 {
			t.Fatalf("a request of an existing session: %v %v", res, err)
		}
		res.Body.Close()
	}
	member(t, srv.URL, "websocket", "acme", "u2") // 3
	for _, tr := range transportNames {
		var err error
		var herr *handshakeError
		if tr == "polling" {
			_, err = dialPolling(t, srv.URL, dialOpts{})
		} else {
			_, err = dialWebSocket(t, srv.URL, dialOpts{})
		}
		if !errors.As(err, &herr) || herr.status != http.StatusTooManyRequests {
			t.Fatalf("%s: 4th handshake from one address: %v, want 429", tr, err)
		}
	}
	res, err := http.Get(srv.URL + "/socket.io/?EIO=4&transport=polling")
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Code       int    `json:"code"`
		Message    string `json:"message"`
		RetryAfter int    `json:"retryAfter"`
	}
	_ = json.NewDecoder(res.Body).Decode(&body)
	res.Body.Close()
	if res.StatusCode != 429 || res.Header.Get("Retry-After") != "20" || body.RetryAfter != 20 ||
		body.Message != "Rate limit exceeded: Too many new connections; try again in 20 seconds" {
		t.Fatalf("429 answer: %d Retry-After %q %+v", res.StatusCode, res.Header.Get("Retry-After"), body)
	}
	addr.Store("203.0.113.9") // another address has its own count
	member(t, srv.URL, "websocket", "acme", "u3")
}

// Authenticated sockets are rate limited by user, and by API key for a key's sockets: past the
// bucket a socket gets auth-error "Rate limit exceeded" with retryAfter, and is disconnected.
func TestSocketRateLimitByUserAndKey(t *testing.T) {
	t.Parallel() // it waits out real timers; alone it would hold a test slot
	for _, tr := range transportNames {
		t.Run(tr, func(t *testing.T) {
			h, srv := start(t, Options{Authenticate: keyAuthenticate,
				RateLimit: limiterFor(map[string]int{BucketSocketIP: 100, BucketSocket: 2})})
			h.rejectGrace = 300 * time.Millisecond
			for range 2 {
				member(t, srv.URL, tr, "acme", "u1").stop() // closed sockets still count: it is a rate
			}
			c, name, p := connectAs(t, srv.URL, tr, tokenFor("acme", "u1", "viewer"))
			if name != EventAuthError || p["error"] != "Rate limit exceeded" || p["retryAfter"] != float64(30) ||
				p["message"] != "Too many new connections; try again in 30 seconds" {
				t.Fatalf("third socket of u1 in a minute: %s %v", name, p)
			}
			c.waitEnded(5 * time.Second)
			// Another user, and the same user's API key, have counts of their own.
			member(t, srv.URL, tr, "acme", "u2")
			if _, name, p := connectAs(t, srv.URL, tr, "key:acme:u1:k1"); name != EventAuthSuccess {
				t.Fatalf("u1's API key: %s %v", name, p)
			}
		})
	}
}

// The log emitToReader sends: chunks of 32 whole lines of 1 KiB.
const (
	lineLen       = 1024
	linesPerChunk = 32
	chunkLen      = lineLen * linesPerChunk
)

// emitToReader emits n chunks of log to org through h and checks that reader gets every line,
// in order. The reader reads as fast as it can, which on a loaded machine can be slow: the
// emitter waits while it is 1 MiB behind, so that what is checked is that a client that keeps
// within the bound is never cut, whatever its pace.
func emitToReader(h *Hub, org string, reader *sioClient, n int) error {
	chunk := strings.Repeat(strings.Repeat("x", lineLen-1)+"\n", linesPerChunk)
	got := make(chan error, 1)
	var linesRead atomic.Int64
	go func() {
		lines := 0
		for lines < n*linesPerChunk {
			var p string
			select {
			case p = <-reader.packets:
			case <-reader.ended:
				got <- errors.New("the reader's connection ended")
				return
			}
			name, arg, _ := parseEvent(p)
			if name != EventExecutionLog {
				got <- fmt.Errorf("the reader got %q", p)
				return
			}
			var l ExecutionLog
			if err := json.Unmarshal(arg, &l); err != nil || l.Offset != int64(lines*lineLen) || len(l.Log)%lineLen != 0 {
				got <- fmt.Errorf("the reader got an event at offset %d of %d bytes after %d lines (%v)", l.Offset, len(l.Log), lines, err)
				return
			}
			lines += len(l.Log) / lineLen
			linesRead.Store(int64(lines))
		}
		got <- nil
	}()
	for i := range n {
		for int64(i*linesPerChunk)-linesRead.Load() > (1<<20)/lineLen {
			select {
			case err := <-got:
				return err
			case <-time.After(time.Millisecond):
			}
		}
		h.Emit(org, EventExecutionLog, ExecutionLog{TaskID: "t", Log: chunk, Offset: int64(i * len(chunk))})
	}
	select {
	case err := <-got:
		return err
	case <-time.After(60 * time.Second):
		return fmt.Errorf("the reader did not get every line within 60s, only %d", linesRead.Load())
	}
}

// With Redis, events another replica emits count in this replica's queues: its stalled client
// is cut there too.
func TestSocketThatStopsReadingIsCutOnAnyReplica(t *testing.T) {
	redisURL, prefix := testenv.RedisURL(t), testenv.KeyPrefix(t)
	hubA, _ := start(t, Options{RedisURL: redisURL, RedisPrefix: prefix})
	hubB, srvB := start(t, Options{RedisURL: redisURL, RedisPrefix: prefix})
	reader := member(t, srvB.URL, "websocket", "acme", "reader")
	stalled := stopReading(t, srvB.URL, "websocket", "acme", "stalled")
	awaitFanOut(t, hubA, "acme", reader)
	if err := emitToReader(hubA, "acme", reader, 512); err != nil { // 16 MiB
		t.Fatalf("%v; %+v", err, hubB.QueueStats())
	}
	if st := hubB.QueueStats(); st.Cut != 1 || st.MaxQueued > DefaultQueueBytes+2<<20 {
		t.Fatalf("replica B: %+v, want the stalled client cut at its bound", st)
	}
	for {
		if _, err := stalled.recv(); err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("the stalled client's session is still open: %v", err)
			}
			break
		}
	}
}

func waitFor(t *testing.T, d time.Duration, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !ok(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
