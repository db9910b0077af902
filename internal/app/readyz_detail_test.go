//go:build integration

package app_test

import (
	"encoding/json"
	"io"
	"net"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"verdict/internal/testenv"
	"verdict/internal/testenv/s3env"
)

// cuttableProxy forwards TCP connections to a real service until cut: then its connections
// are closed and its port refuses new ones, as when the service's host goes away.
type cuttableProxy struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func startCuttableProxy(t *testing.T, target string) *cuttableProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cuttableProxy{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(up, c); up.Close() }()
			go func() { _, _ = io.Copy(c, up); c.Close() }()
		}
	}()
	t.Cleanup(p.cut)
	return p
}

func (p *cuttableProxy) addr() string { return p.ln.Addr().String() }

func (p *cuttableProxy) cut() {
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
}

// TestReadyzHidesCheckErrors: with Redis, the report bucket and the Docker engine unreachable,
// the public GET /readyz answers 503 naming each failing check and nothing of its error (no
// address, port or error text); the log has each error, with the check's name, once when the
// check starts failing and again only after a minute however often the route is polled.
func TestReadyzHidesCheckErrors(t *testing.T) {
	redisURL, err := url.Parse(testenv.RedisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	bucket := s3env.Bucket(t)
	s3URL, err := url.Parse(bucket.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	redisProxy, s3Proxy := startCuttableProxy(t, redisURL.Host), startCuttableProxy(t, s3URL.Host)
	redisURL.Host = redisProxy.addr()
	// An engine address nothing listens on: the port of a listener closed at once.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	engineAddr := ln.Addr().String()
	ln.Close()

	env := s3Env(bucket, t.TempDir())
	env["VERDICT_S3_ENDPOINT"] = "http://" + s3Proxy.addr()
	env["REDIS_URL"] = redisURL.String()
	env["DOCKER_HOST"] = "tcp://" + engineAddr // the embedded runner's engine (not started: no workers)
	logs := &syncBuffer{}
	h := newHarness(t, harnessOpts{dialect: "sqlite", env: env, log: logs})

	// Up: every required check passes (the engine is optional, and down from the start).
	up := h.do("GET", "/readyz", anon, nil)
	if up.status != 200 || up.get("checks", "redis", "ok") != true || up.get("checks", "reports", "ok") != true {
		t.Fatalf("readyz with Redis and the bucket up: %d %s", up.status, up.raw)
	}
	redisProxy.cut()
	s3Proxy.cut()

	down := h.do("GET", "/readyz", anon, nil)
	if down.status != 503 {
		t.Fatalf("readyz with Redis and the bucket down: %d %s", down.status, down.raw)
	}
	var body map[string]any
	if err := json.Unmarshal([]byte(down.raw), &body); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"success": false, "ready": false, "checks": map[string]any{
		"database": map[string]any{"ok": true},
		"docker":   map[string]any{"ok": false, "optional": true},
		"redis":    map[string]any{"ok": false, "optional": true}, // served without it: limits count in memory
		"reports":  map[string]any{"ok": false, "optional": false},
	}}
	if !reflect.DeepEqual(body, want) {
		t.Fatalf("readyz when down:\n got %s\nwant %v", down.raw, want)
	}
	for _, leak := range []string{"127.0.0.1", redisProxy.addr(), s3Proxy.addr(), engineAddr, "dial", "refused",
		"connect", "tcp", "error", bucket.Bucket} {
		if strings.Contains(strings.ToLower(down.raw), strings.ToLower(leak)) {
			t.Fatalf("readyz shows %q: %s", leak, down.raw)
		}
	}

	// The log has the detail, once per check however often the route is polled.
	type failed struct{ check, err string }
	failures := func() []failed {
		var out []failed
		for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
			var m map[string]any
			if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == "readiness check failed" {
				if m["level"] != "WARN" {
					t.Fatalf("readiness failure logged at %v: %s", m["level"], l)
				}
				c, _ := m["check"].(string)
				e, _ := m["err"].(string)
				out = append(out, failed{c, e})
			}
		}
		return out
	}
	for range 5 {
		h.do("GET", "/readyz", anon, nil)
	}
	count := map[string]int{}
	for _, f := range failures() {
		count[f.check]++
		port := func(addr string) string { _, p, _ := net.SplitHostPort(addr); return p }
		detail := map[string]string{"redis": port(redisProxy.addr()), "reports": bucket.Bucket, "docker": port(engineAddr)}[f.check]
		if detail == "" || !strings.Contains(f.err, detail) {
			t.Fatalf("logged failure of %q without its detail: %q\n%s", f.check, f.err, logs.String())
		}
	}
	if !reflect.DeepEqual(count, map[string]int{"redis": 1, "reports": 1, "docker": 1}) {
		t.Fatalf("failures logged after 6 polls: %v, want each check once\n%s", count, logs.String())
	}
	// A minute on, a check still failing is logged again: once.
	h.clock.Advance(61 * time.Second)
	for range 3 {
		h.do("GET", "/readyz", anon, nil)
	}
	count = map[string]int{}
	for _, f := range failures() {
		count[f.check]++
	}
	if !reflect.DeepEqual(count, map[string]int{"redis": 2, "reports": 2, "docker": 2}) {
		t.Fatalf("failures logged a minute on: %v, want each check twice\n%s", count, logs.String())
	}
}
