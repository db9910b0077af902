package traceviewer

import (
	"crypto/sha256"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

func get(t *testing.T, method, target string) *http.Response {
	t.Helper()
	w := httptest.NewRecorder()
	ServeHTTP(w, httptest.NewRequest(method, target, nil))
	return w.Result()
}

// The viewer's files are served with their types and the viewer's headers; nothing else is.
func TestServe(t *testing.T) {
	for _, c := range []struct{ path, ctype, cache, contains string }{
		{"/trace/", "text/html; charset=utf-8", "no-cache", "<title>Playwright Trace Viewer</title>"},
		{"/trace/index.html", "text/html; charset=utf-8", "no-cache", "<title>Playwright Trace Viewer</title>"},
		{"/trace/sw.bundle.js", "text/javascript; charset=utf-8", "no-cache", "registration.scope"},
		{"/trace/snapshot.html", "text/html; charset=utf-8", "no-cache", "<iframe"},
		{"/trace/manifest.webmanifest", "application/manifest+json", "no-cache", "Trace Viewer"},
		{"/trace/playwright-logo.svg", "image/svg+xml", "public, max-age=86400", "<svg"},
	} {
		res := get(t, "GET", c.path)
		body, _ := io.ReadAll(res.Body)
		h := res.Header
		if res.StatusCode != 200 || h.Get("Content-Type") != c.ctype || h.Get("Cache-Control") != c.cache ||
			!strings.Contains(string(body), c.contains) {
			t.Fatalf("%s: %d %v %.200q", c.path, res.StatusCode, h, body)
		}
		if h.Get("Content-Security-Policy") != ContentSecurityPolicy || h.Get("Cross-Origin-Opener-Policy") != "same-origin" ||
			h.Get("Referrer-Policy") != "no-referrer" || h.Get("X-Content-Type-Options") != "nosniff" || h.Get("X-Frame-Options") != "" ||
			h.Get("Service-Worker-Allowed") != "" {
			t.Fatalf("%s: headers %v", c.path, h)
		}
	}
	// The service worker of the version the package names, and every file index.html loads.
	sw, _ := io.ReadAll(get(t, "GET", "/trace/sw.bundle.js").Body)
	index, _ := io.ReadAll(get(t, "GET", "/trace/index.html").Body)
	if !strings.Contains(string(sw), "registration.scope") || Version == "" {
		t.Fatalf("service worker or version (%q) missing", Version)
	}
	for _, m := range regexpAll(`(?:src|href)="\./([^"]+)"`, string(index)) {
		if res := get(t, "GET", "/trace/"+m); res.StatusCode != 200 {
			t.Fatalf("index.html loads %s: %d", m, res.StatusCode)
		}
	}
	for _, p := range []string{"/trace/nope.js", "/trace/assets", "/trace/../go.mod", "/trace/assets/../index.html.map",
		"/trace/uiMode.html", "/trace/%2e%2e/LICENSE", "/reports/x"} {
		if res := get(t, "GET", p); res.StatusCode != 404 {
			t.Fatalf("%s: %d", p, res.StatusCode)
		}
	}
	if res := get(t, "POST", "/trace/index.html"); res.StatusCode != 405 || res.Header.Get("Allow") != "GET, HEAD" {
		t.Fatalf("POST: %d", res.StatusCode)
	}
}

// The policy lets the viewer's own inline script run, by its hash, and nothing else inline.
func TestPolicy(t *testing.T) {
	index, _ := io.ReadAll(get(t, "GET", "/trace/index.html").Body)
	m := inlineScript.FindSubmatch(index)
	if m == nil {
		t.Fatal("index.html has no inline script")
	}
	sum := sha256.Sum256(m[1])
	hash := "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
	for _, want := range []string{"script-src 'self' " + hash + ";", "connect-src 'self';", "frame-ancestors 'self'", "object-src 'none'"} {
		if !strings.Contains(ContentSecurityPolicy, want) {
			t.Fatalf("policy %q lacks %q", ContentSecurityPolicy, want)
		}
	}
	if strings.Contains(ContentSecurityPolicy, "unsafe-eval") || strings.Count(ContentSecurityPolicy, "unsafe-inline") != 1 {
		t.Fatalf("policy %q", ContentSecurityPolicy)
	}
}

// A Playwright report's "View trace" link goes to the viewer with its trace URLs alone.
func TestFromReport(t *testing.T) {
	const tr = "http://r.test/reports/o/t/~tok/playwright-report/data/0a1b.zip"
	for _, c := range []struct {
		rel, query, want string
	}{
		{"playwright-report/trace/index.html", "trace=" + url.QueryEscape(tr), "/trace/index.html?trace=" + url.QueryEscape(tr)},
		{"a/b/trace/index.html", "trace=x&trace=y&other=1", "/trace/index.html?trace=x&trace=y"},
		{"trace/index.html", "trace=x", "/trace/index.html?trace=x"},
		{"playwright-report/trace/index.html", "", ""},
		{"playwright-report/trace/index.html", "other=1", ""},
		{"playwright-report/index.html", "trace=x", ""},
		{"playwright-report/trace/sw.bundle.js", "trace=x", ""},
		{"playwright-report/tracer/index.html", "trace=x", ""},
	} {
		q, _ := url.ParseQuery(c.query)
		got, ok := FromReport(c.rel, q)
		if got != c.want || ok != (c.want != "") {
			t.Fatalf("FromReport(%q, %q) = %q, %v; want %q", c.rel, c.query, got, ok, c.want)
		}
	}
}

func regexpAll(expr, s string) []string {
	var out []string
	for _, m := range regexp.MustCompile(expr).FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}
