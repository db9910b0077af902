package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// balancer is the load balancer an operator puts in front of the replicas: round robin, and a
// request whose connection to a replica cannot be made goes to the other one (passive health:
// a replica that refused a connection is skipped for a second). A request already sent is not
// sent again unless it is a GET or HEAD, as nginx's default proxy_next_upstream does; a
// request whose replica broke off answers 502, which the driver counts as a connection error.
// Clients and the remote runner reach the replicas only through it.
type balancer struct {
	backends []*backend
	next     atomic.Uint32
	tr       *http.Transport
	proxy    *httputil.ReverseProxy

	mu     sync.Mutex
	window *traffic
}

type backend struct {
	addr      string
	downUntil atomic.Int64 // unix nanoseconds

	mu       sync.Mutex
	inFlight map[*http.Request]string // requests sent and not yet answered in full: "METHOD path"
}

// busy lists the requests in flight on the replica.
func (be *backend) busy() []string {
	be.mu.Lock()
	defer be.mu.Unlock()
	var out []string
	for _, s := range be.inFlight {
		out = append(out, s)
	}
	return out
}

func (be *backend) track(r *http.Request) func() {
	be.mu.Lock()
	defer be.mu.Unlock()
	if be.inFlight == nil {
		be.inFlight = map[*http.Request]string{}
	}
	be.inFlight[r] = r.Method + " " + r.URL.Path
	var once sync.Once
	return func() {
		once.Do(func() {
			be.mu.Lock()
			delete(be.inFlight, r)
			be.mu.Unlock()
		})
	}
}

// doneBody calls done when the answer's body is closed.
type doneBody struct {
	io.ReadCloser
	done func()
}

func (b *doneBody) Close() error {
	err := b.ReadCloser.Close()
	b.done()
	return err
}

// traffic counts what the balancer answered during one window (a fault and its recovery).
type traffic struct {
	mu        sync.Mutex
	byClass   map[string]map[string]int // route class (api, events, runner) → outcome → count
	failovers int                       // requests sent to the other replica after a refused connection
	samples   []string                  // a few 500 answers: method, path, body
}

func newTraffic() *traffic { return &traffic{byClass: map[string]map[string]int{}} }

func (t *traffic) add(class, outcome string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.byClass[class]
	if m == nil {
		m = map[string]int{}
		t.byClass[class] = m
	}
	m[outcome]++
}

// count sums an outcome over the classes given (all when none).
func (t *traffic) count(outcome string, classes ...string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for c, m := range t.byClass {
		if len(classes) == 0 || contains(classes, c) {
			n += m[outcome]
		}
	}
	return n
}

// total counts every answer.
func (t *traffic) total() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, m := range t.byClass {
		for _, k := range m {
			n += k
		}
	}
	return n
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

func newBalancer(addrs []string) *balancer {
	b := &balancer{tr: &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 2 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     30 * time.Second,
	}, window: newTraffic()}
	for _, a := range addrs {
		b.backends = append(b.backends, &backend{addr: a})
	}
	b.proxy = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme = "http"
			pr.Out.URL.Host = "replica" // chosen per attempt by RoundTrip
			pr.SetXForwarded()
		},
		Transport:     b,
		FlushInterval: -1,
		ModifyResponse: func(res *http.Response) error {
			b.record(res.Request, outcomeOf(res.StatusCode))
			if res.StatusCode == http.StatusInternalServerError {
				body, _ := io.ReadAll(io.LimitReader(res.Body, 512))
				res.Body.Close()
				res.Body = io.NopCloser(bytes.NewReader(body))
				b.sample(res.Request, body)
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
				b.record(r, "client gone")
				return
			}
			b.record(r, "conn error")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadGateway)
			fmt.Fprintf(w, `{"success":false,"error":"Bad gateway","message":%q}`, "balancer: "+err.Error())
		},
	}
	return b
}

// backendOf is the backend at addr.
func (b *balancer) backendOf(addr string) *backend {
	for _, be := range b.backends {
		if be.addr == addr {
			return be
		}
	}
	return nil
}

func (b *balancer) ServeHTTP(w http.ResponseWriter, r *http.Request) { b.proxy.ServeHTTP(w, r) }

// setWindow starts counting into a new window and returns it.
func (b *balancer) setWindow() *traffic {
	t := newTraffic()
	b.mu.Lock()
	b.window = t
	b.mu.Unlock()
	return t
}

func (b *balancer) current() *traffic {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.window
}

func classOf(r *http.Request) string {
	switch p := r.URL.Path; {
	case strings.HasPrefix(p, "/api/runner/"):
		return "runner"
	case strings.HasSuffix(p, "/events"):
		return "events"
	default:
		return "api"
	}
}

func outcomeOf(code int) string {
	switch {
	case code == http.StatusInternalServerError:
		return "500"
	case code == http.StatusServiceUnavailable:
		return "503"
	case code >= 500:
		return "5xx"
	case code >= 400:
		return "4xx"
	default:
		return "2xx"
	}
}

func (b *balancer) record(r *http.Request, outcome string) { b.current().add(classOf(r), outcome) }

func (b *balancer) sample(r *http.Request, body []byte) {
	t := b.current()
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.samples) < 8 {
		t.samples = append(t.samples, fmt.Sprintf("%s %s → 500 %s", r.Method, r.URL.Path, strings.TrimSpace(string(body))))
	}
}

// RoundTrip sends the request to one replica, and to the other when the first refuses the
// connection (or, for a GET or HEAD, fails before answering).
func (b *balancer) RoundTrip(r *http.Request) (*http.Response, error) {
	n := len(b.backends)
	start := int(b.next.Add(1))
	now := time.Now().UnixNano()
	order := make([]*backend, 0, n)
	for i := range n { // healthy ones first
		if be := b.backends[(start+i)%n]; be.downUntil.Load() <= now {
			order = append(order, be)
		}
	}
	for i := range n {
		if be := b.backends[(start+i)%n]; be.downUntil.Load() > now {
			order = append(order, be)
		}
	}
	// The body is read first, as nginx buffers it, so that a request can go to the other
	// replica (a transport closes the body it was given, even on a refused connection).
	var body []byte
	if r.Body != nil && r.Body != http.NoBody {
		var err error
		if body, err = io.ReadAll(io.LimitReader(r.Body, maxBufferedBody)); err != nil {
			return nil, err
		}
		r.Body.Close()
	}
	var err error
	for i, be := range order {
		out := r.Clone(r.Context())
		out.URL.Host = be.addr
		out.Host = be.addr
		if body != nil {
			out.Body = io.NopCloser(bytes.NewReader(body))
			out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		}
		var res *http.Response
		done := be.track(out)
		res, err = b.tr.RoundTrip(out)
		if err == nil {
			res.Body = &doneBody{ReadCloser: res.Body, done: done}
			return res, nil
		}
		done()
		if r.Context().Err() != nil {
			return nil, err
		}
		dial := isDialError(err)
		if dial {
			be.downUntil.Store(time.Now().Add(time.Second).UnixNano())
		}
		idempotent := r.Method == http.MethodGet || r.Method == http.MethodHead
		if i == len(order)-1 || !(dial || idempotent) {
			break
		}
		b.current().mu.Lock()
		b.current().failovers++
		b.current().mu.Unlock()
	}
	return nil, err
}

// maxBufferedBody bounds a request body the balancer holds (report uploads are the largest).
const maxBufferedBody = 64 << 20

func isDialError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}
