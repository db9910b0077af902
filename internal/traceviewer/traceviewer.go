// Package traceviewer serves Verdict's own copy of Playwright's trace viewer at /trace/: the
// web application that opens a Playwright trace (trace.zip) in the browser, taken from the npm
// package playwright-core at a pinned version by scripts/update-trace-viewer.sh and embedded
// in the binary (Apache-2.0; LICENSE and NOTICE beside this file).
//
// Why Verdict serves it rather than the copy inside each Playwright HTML report: the viewer
// reads a trace through a service worker, and a report is a sandboxed page with an opaque
// origin (report.ContentSecurityPolicy), where service workers cannot start. This copy is
// trusted code, not a tenant's, so it is served without the sandbox, on the origin that serves
// reports (VERDICT_REPORTS_URL when set, else the API's), and its service worker registers for
// /trace/ alone (sw.bundle.js sits there, so the default scope is /trace/ and no
// Service-Worker-Allowed header is needed). It is public: it holds no data, and it opens a
// trace through the URL it is given (?trace=), which for a run's trace is a report link whose
// token is the credential (/reports/{org}/{task}/~<token>/...): the viewer never needs the
// user's session, and another organization's trace stays a 404 at the report route.
//
// The boundary, as Playwright 1.65's viewer works (checked in its sw.bundle.js): a trace's DOM
// snapshots are rebuilt by the service worker's snapshot renderer, which drops every <script>
// element and every on* attribute, renames <noscript>, iframe src/srcdoc/sandbox and
// non-allowlisted <meta http-equiv>, and serves the snapshot with its own
// Content-Security-Policy "script-src 'nonce-<random>'", so only the renderer's own script
// runs in it. A trace is data, never code, in the viewer's origin. Headers (SetHeaders) add:
// the viewer fetches only from its own origin (connect-src 'self', which also governs the
// service worker, so a ?trace= on another site does not load and a snapshot's requests never
// leave), no framing by other origins, no opener kept across origins, no referrer.
package traceviewer

import (
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"strings"
	"time"
)

//go:embed dist
var dist embed.FS

// files is the viewer's folder (dist) as served under Prefix.
var files = func() fs.FS {
	f, err := fs.Sub(dist, "dist")
	if err != nil {
		panic(err)
	}
	return f
}()

//go:embed VERSION
var version string

// Version is the playwright-core version the viewer was taken from.
var Version = strings.TrimSpace(version)

// Prefix is the path the viewer is served under; its service worker's scope.
const Prefix = "/trace/"

// ContentSecurityPolicy is sent with every viewer file. The viewer's scripts and styles are
// its own files ('self'), and the inline script of index.html (which only explains that file://
// is not supported) by its hash; its components set inline styles; screenshots and attachments
// are shown from data: and blob: URLs (and an empty snapshot is a data: frame, which has an
// opaque origin); snapshots are frames of the viewer's own origin, served
// by its service worker with their own policy (see the package comment). connect-src 'self'
// holds for the service worker too (it is delivered with sw.bundle.js).
var ContentSecurityPolicy = "default-src 'self'; script-src 'self'" + inlineScriptHashes() +
	"; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; media-src 'self' data: blob:; font-src 'self' data:; " +
	"connect-src 'self'; frame-src 'self' blob: data:; worker-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; " +
	"frame-ancestors 'self'"

// inlineScriptHashes lists the CSP hashes of the inline scripts of the viewer's pages.
func inlineScriptHashes() string {
	var out strings.Builder
	for _, page := range []string{"index.html", "snapshot.html"} {
		b, err := fs.ReadFile(files, page)
		if err != nil {
			panic("traceviewer: " + err.Error())
		}
		for _, m := range inlineScript.FindAllSubmatch(b, -1) {
			sum := sha256.Sum256(m[1])
			out.WriteString(" 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'")
		}
	}
	return out.String()
}

// inlineScript matches a script element without attributes and its text.
var inlineScript = regexp.MustCompile(`(?s)<script>(.*?)</script>`)

// SetHeaders puts the viewer's response headers on h.
func SetHeaders(h http.Header) {
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer") // its URL holds a report link
	// A page that opened the viewer from another origin keeps no handle on it, so it cannot
	// post it a trace to show (the viewer accepts one by postMessage from its opener).
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Del("X-Frame-Options") // frame-ancestors says it: the viewer frames its own pages
}

// contentTypes are the types of the viewer's files, by extension.
var contentTypes = map[string]string{
	".html":        "text/html; charset=utf-8",
	".js":          "text/javascript; charset=utf-8",
	".css":         "text/css; charset=utf-8",
	".svg":         "image/svg+xml",
	".ttf":         "font/ttf",
	".webmanifest": "application/manifest+json",
}

// modTime is the files' modification time for conditional requests: the embedded files have
// none, and they change only with the binary.
var modTime = time.Now()

// ServeHTTP serves a GET or HEAD under Prefix: the viewer's file, index.html for the folder
// itself, 404 for anything else. Files named by content hash may be cached; the pages, the
// service worker and the manifest are revalidated, so that a new version takes over.
func ServeHTTP(w http.ResponseWriter, r *http.Request) {
	SetHeaders(w.Header())
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, http.StatusText(http.StatusMethodNotAllowed), http.StatusMethodNotAllowed)
		return
	}
	name, ok := strings.CutPrefix(r.URL.Path, Prefix)
	if !ok {
		http.NotFound(w, r)
		return
	}
	if name == "" {
		name = "index.html"
	}
	ctype, known := contentTypes[path.Ext(name)]
	if !known || !fs.ValidPath(name) {
		http.NotFound(w, r)
		return
	}
	f, err := files.Open(name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil || info.IsDir() {
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	h.Set("Content-Type", ctype)
	switch ext := path.Ext(name); {
	case ext == ".html" || ext == ".webmanifest" || name == "sw.bundle.js":
		h.Set("Cache-Control", "no-cache")
	default:
		h.Set("Cache-Control", "public, max-age=86400")
	}
	http.ServeContent(w, r, name, modTime, f.(io.ReadSeeker)) // embed's files seek
}

// URL is the viewer's address on origin (scheme and host, no trailing slash; "" for a path on
// the same origin) opening the traces at traceURLs.
func URL(origin string, traceURLs ...string) string {
	q := url.Values{"trace": traceURLs}
	return origin + Prefix + "index.html?" + q.Encode()
}

// FromReport tells whether a request for relPath of a run's reports, with query q, is a
// Playwright HTML report's "View trace" link, and if so where the viewer opens it. The report
// links a trace as trace/index.html?trace=<absolute URL of its data/<sha1>.zip> relative to
// itself (Playwright 1.65, htmlReport's report.js), expecting the copy of the viewer it ships
// in its trace/ folder; that copy cannot run in a sandboxed report, so the link goes to this
// one, on the same origin, with the same trace URLs (under the report link they were made
// on). Only the trace parameters are passed on.
func FromReport(relPath string, q url.Values) (string, bool) {
	traces := q["trace"]
	if path.Base(relPath) != "index.html" || path.Base(path.Dir(relPath)) != "trace" || len(traces) == 0 {
		return "", false
	}
	return URL("", traces...), true
}
