package realtime

import (
	"bytes"
	"compress/gzip"
	"context"
	_ "embed"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zishang520/socket.io/v3/pkg/types"
)

// ClientVersion is the version of the vendored browser client (clientdist/).
const ClientVersion = "4.8.4"

//go:embed clientdist/socket.io.min.js
var clientJS []byte

// Handler serves the Socket.IO endpoint (WebSocket and HTTP long-polling) and the browser client
// at socket.io.js. Mount it at /socket.io/ without stripping the prefix.
func (h *Hub) Handler() http.Handler { return http.HandlerFunc(h.serveHTTP) }

func (h *Hub) serveHTTP(w http.ResponseWriter, r *http.Request) {
	switch name := r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:]; {
	case name == "socket.io.js" || name == "socket.io.min.js":
		serveClient(w, r)
		return
	case strings.HasSuffix(name, ".map"):
		// The bundle names a source map that is not vendored; answer plainly instead of
		// letting the engine call it an unknown transport.
		http.NotFound(w, r)
		return
	}
	if h.closed.Load() {
		writeEngineError(w, http.StatusServiceUnavailable, "Server shutting down")
		return
	}
	// The library accepts any Origin (its WebSocket upgrader's CheckOrigin returns true), so
	// the policy is enforced here, on every request, not only on the handshake.
	if !h.origins.allows(r) {
		writeEngineError(w, http.StatusForbidden, "Origin not allowed")
		return
	}
	// A new session (no sid: a handshake, by polling or straight over WebSocket) is counted by
	// its client's address before the engine does anything for it (limits.go).
	sid := r.URL.Query().Get("sid")
	if sid == "" && !h.allowHandshake(w, r) {
		return
	}
	// sessions.go explains the session bookkeeping below.
	if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		open := make(chan struct{})
		defer close(open)
		h.engine.ServeHTTP(&gatedWriter{ResponseWriter: w, open: open}, r)
		return
	}
	// A polling request lives at most as long as the Hub, so that Close can end the ones the
	// engine leaves unanswered.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(h.ctx, cancel)()
	r = r.WithContext(ctx)
	if sid != "" {
		end := h.sessions.begin(ctx, sid, cancel) // waits until the session is ready
		defer end()
	}
	// What the engine's ServeHTTP does for a non-upgrade request, with a context of our own so
	// that the handler returns only once the engine is done with the request (sessions.go, 4).
	hctx := types.NewHttpContext(w, r)
	released := make(chan struct{})
	_ = hctx.Once("close", func(...any) { close(released) })
	h.engine.HandleRequest(hctx)
	select {
	case <-released:
	case <-time.After(time.Second): // not expected: the engine returns only after closing hctx
	}
}

// writeEngineError answers in the Engine.IO error shape, which clients report as connect_error.
func writeEngineError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, `{"code":4,"message":%q}`, msg)
}

var (
	clientETag   = `"socket.io-client-` + ClientVersion + `"`
	gzipOnce     sync.Once
	clientJSGzip []byte
)

func serveClient(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	hdr := w.Header()
	hdr.Set("Content-Type", "text/javascript; charset=utf-8")
	hdr.Set("X-Content-Type-Options", "nosniff")
	// The URL carries no version, so browsers revalidate; the ETag makes that a 304.
	hdr.Set("Cache-Control", "public, no-cache")
	hdr.Set("ETag", clientETag)
	hdr.Set("Vary", "Accept-Encoding")
	if inm := r.Header.Get("If-None-Match"); inm == clientETag || inm == "W/"+clientETag || inm == "*" {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	body := clientJS
	if acceptsGzip(r) {
		gzipOnce.Do(func() {
			var buf bytes.Buffer
			zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
			_, _ = zw.Write(clientJS)
			_ = zw.Close()
			clientJSGzip = buf.Bytes()
		})
		body = clientJSGzip
		hdr.Set("Content-Encoding", "gzip")
	}
	hdr.Set("Content-Length", fmt.Sprint(len(body)))
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(body)
}

func acceptsGzip(r *http.Request) bool {
	for part := range strings.SplitSeq(r.Header.Get("Accept-Encoding"), ",") {
		coding, params, _ := strings.Cut(part, ";")
		if !strings.EqualFold(strings.TrimSpace(coding), "gzip") {
			continue
		}
		q, ok := strings.CutPrefix(strings.ReplaceAll(params, " ", ""), "q=")
		if !ok {
			return true
		}
		f, err := strconv.ParseFloat(q, 64)
		return err == nil && f > 0
	}
	return false
}

// originPolicy decides which browser origins may connect. Same-origin is always allowed (the
// dashboard is served by the same server), as are requests without Origin (non-browsers).
type originPolicy struct {
	any     bool
	allowed map[string]bool // normalized scheme://host[:port]
}

func newOriginPolicy(list []string) (originPolicy, error) {
	p := originPolicy{allowed: map[string]bool{}}
	for _, o := range list {
		if o == "*" {
			p.any = true
			continue
		}
		n, ok := normalizeOrigin(o)
		if !ok {
			return originPolicy{}, fmt.Errorf("realtime: allowed origin %q is not scheme://host[:port]", o)
		}
		p.allowed[n] = true
	}
	return p, nil
}

func normalizeOrigin(o string) (string, bool) {
	u, err := url.Parse(strings.TrimSuffix(strings.TrimSpace(o), "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", false
	}
	host := strings.ToLower(u.Host)
	if (u.Scheme == "https" && strings.HasSuffix(host, ":443")) || (u.Scheme == "http" && strings.HasSuffix(host, ":80")) {
		host = host[:strings.LastIndexByte(host, ':')]
	}
	return u.Scheme + "://" + host, true
}

func (p originPolicy) allows(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" || p.any {
		return true
	}
	// Same origin: compare hosts only, since TLS often ends at a proxy in front of us.
	if u, err := url.Parse(origin); err == nil && u.Host != "" && strings.EqualFold(u.Host, r.Host) {
		return true
	}
	n, ok := normalizeOrigin(origin)
	return ok && p.allowed[n]
}

// cors gives polling requests from the listed origins the CORS headers browsers need; nil when
// only same-origin browsers are allowed. Credentials stay off: the token travels in the
// handshake payload, not in a cookie.
func (p originPolicy) cors() *types.Cors {
	c := &types.Cors{Methods: "GET,POST", Credentials: false}
	switch {
	case p.any:
		c.Origin = "*"
	case len(p.allowed) > 0:
		var list []any
		for o := range p.allowed {
			list = append(list, o)
		}
		c.Origin = list
	default:
		return nil
	}
	return c
}
