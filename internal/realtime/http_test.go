package realtime

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
)

func readAll(t testing.TB, r io.Reader) []byte {
	t.Helper()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestClientBundleIsServed(t *testing.T) {
	_, srv := start(t, Options{})
	if !bytes.HasPrefix(clientJS, []byte("/*!\n * Socket.IO v"+ClientVersion+"\n")) {
		t.Fatalf("embedded bundle does not start with the Socket.IO v%s banner", ClientVersion)
	}

	get := func(path string, header http.Header) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		for k, v := range header {
			req.Header[k] = v
		}
		// A bare Transport: the default one would ask for gzip and undo it silently.
		resp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}

	resp := get("/socket.io/socket.io.js", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/javascript") {
		t.Fatalf("Content-Type %q, want JavaScript", ct)
	}
	if body := readAll(t, resp.Body); !bytes.Equal(body, clientJS) {
		t.Fatalf("body is %d bytes, want the %d-byte bundle", len(body), len(clientJS))
	}
	etag := resp.Header.Get("ETag")

	resp = get("/socket.io/socket.io.js", http.Header{"Accept-Encoding": {"gzip, br"}})
	if resp.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("Content-Encoding %q, want gzip", resp.Header.Get("Content-Encoding"))
	}
	zr, err := gzip.NewReader(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(t, zr); !bytes.Equal(body, clientJS) {
		t.Fatal("gzipped body is not the bundle")
	}

	if resp := get("/socket.io/socket.io.js", http.Header{"Accept-Encoding": {"gzip;q=0"}}); resp.Header.Get("Content-Encoding") != "" {
		t.Fatal("gzip sent although refused with q=0")
	}
	if resp := get("/socket.io/socket.io.js", http.Header{"If-None-Match": {etag}}); resp.StatusCode != http.StatusNotModified {
		t.Fatalf("revalidation: status %d, want 304", resp.StatusCode)
	}
	if resp := get("/socket.io/socket.io.min.js", nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("socket.io.min.js: status %d", resp.StatusCode)
	}
	if resp := get("/socket.io/socket.io.min.js.map", nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("source map: status %d, want 404", resp.StatusCode)
	}
	resp, err = http.Post(srv.URL+"/socket.io/socket.io.js", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("POST: status %d, want 405", resp.StatusCode)
	}
}

func TestOriginPolicy(t *testing.T) {
	type attempt struct {
		origin string
		ok     bool
	}
	cases := []struct {
		name     string
		allowed  []string
		attempts func(self string) []attempt
	}{
		{"default: same origin and non-browsers", nil, func(self string) []attempt {
			return []attempt{{"", true}, {self, true}, {"https://evil.example", false}, {"null", false}}
		}},
		{"listed origins", []string{"https://dash.example.com/", "http://localhost:5173"}, func(self string) []attempt {
			return []attempt{{"https://dash.example.com", true}, {"http://localhost:5173", true}, {self, true},
				{"https://dash.example.com:8443", false}, {"http://dash.example.com", false}}
		}},
		{"any origin", []string{"*"}, func(string) []attempt {
			return []attempt{{"https://anything.example", true}, {"null", true}}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, srv := start(t, Options{AllowedOrigins: tc.allowed})
			for _, a := range tc.attempts(srv.URL) {
				for _, tr := range transportNames {
					header := http.Header{}
					if a.origin != "" {
						header.Set("Origin", a.origin)
					}
					var c *sioClient
					var err error
					if tr == "polling" {
						c, err = dialPolling(t, srv.URL, dialOpts{header: header})
					} else {
						c, err = dialWebSocket(t, srv.URL, dialOpts{header: header})
					}
					if c != nil {
						c.stop()
					}
					var he *handshakeError
					switch {
					case a.ok && err != nil:
						t.Errorf("%s from %q refused: %v", tr, a.origin, err)
					case !a.ok && (!errors.As(err, &he) || he.status != http.StatusForbidden):
						t.Errorf("%s from %q: got %v, want 403", tr, a.origin, err)
					}
				}
			}
		})
	}
}

// Cross-origin polling needs CORS headers; same-origin needs none.
func TestCORSHeadersForListedOrigins(t *testing.T) {
	_, srv := start(t, Options{AllowedOrigins: []string{"https://dash.example.com"}})
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/socket.io/?EIO=4&transport=polling", nil)
	req.Header.Set("Origin", "https://dash.example.com")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("Access-Control-Allow-Origin"); got != "https://dash.example.com" {
		t.Fatalf("Access-Control-Allow-Origin %q", got)
	}
	if got := resp.Header.Get("Access-Control-Allow-Credentials"); got != "" {
		t.Fatalf("Access-Control-Allow-Credentials %q, want none: the token is not a cookie", got)
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	for _, opts := range []Options{
		{},
		{Authenticate: testAuthenticate, AllowedOrigins: []string{"dash.example.com"}},
		{Authenticate: testAuthenticate, AllowedOrigins: []string{"https://dash.example.com/app"}},
		{Authenticate: testAuthenticate, RedisURL: "redis://127.0.0.1:56379", RedisPrefix: "verdict:*"},
		{Authenticate: testAuthenticate, RedisURL: "not a url"},
	} {
		if h, err := New(opts); err == nil {
			h.Close()
			t.Errorf("New(%+v) succeeded", opts)
		}
	}
}
