package report

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
)

// ContentSecurityPolicy is sent with every report response. Reports are HTML
// written by a tenant's container, served from the API's own origin unless reports have one of
// their own (internal/api splitOrigins), so they are treated as hostile pages. The sandbox
// directive without allow-same-origin gives them an opaque origin: their scripts run (the
// Playwright and Allure reports are script applications) but cannot read the origin's cookies
// or storage or call the API as the user. 'self' still means this server
// (browsers take it from the response URL), so a report loads its own files; inline scripts,
// eval, data: and blob: URLs are what the report applications are built from.
//
// Checked in Chromium 156 with a real Playwright 1.65 HTML report (document.cookie throws,
// window.origin is "null"):
//   - The report itself reads localStorage on start, which throws in an opaque origin and left
//     a blank page; Serve therefore gives every HTML page storageShim. With it the test list,
//     the test pages, errors and steps render.
//   - Screenshots and videos are plain <img>/<video> loads of data/<hash>.* and work, given
//     Cross-Origin-Resource-Policy cross-origin (see SetHeaders), when the request is allowed
//     without a cookie (last point).
//   - Text attachments shown inline (error-context.md, logs) are read with fetch(), and Allure 2's
//     usual report reads data/*.json with XMLHttpRequest: CORS requests from origin "null". They
//     are readable when served through a report link, which answers them with
//     Access-Control-Allow-Origin: * (internal/api serveReport); by bearer token they are not.
//     (Checked with a test page doing both, not with a full Allure report.) `allure generate
//     --single-file` inlines its data and needs none of this. The trace viewer the report carries
//     needs a service worker, which an opaque origin cannot register: its "View trace" link is
//     sent to Verdict's own viewer instead (package traceviewer, internal/api serveReport).
//   - A sandboxed page's requests for its own files (screenshots, scripts) carry no cookie:
//     seen with SameSite=Lax and with SameSite=None; Secure alike, the page's origin being
//     opaque. Access to those files therefore travels in the URL: a report link puts its token
//     in the path, /reports/{org}/{task}/~<token>/..., which relative links keep (checked in
//     Chromium 156: image, XHR and fetch of files under the link all load; under a cookie they
//     all failed).
const ContentSecurityPolicy = "sandbox allow-scripts allow-popups allow-forms allow-modals allow-downloads; " +
	"default-src 'self' 'unsafe-inline' 'unsafe-eval' data: blob:; " +
	"object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'self'"

// SetHeaders puts the report response headers on h: the sandboxing policy, no MIME sniffing
// (a file is only what its extension says), no referrer (report URLs may carry a token), and no
// caching of tenant data. Cross-Origin-Resource-Policy is cross-origin, not same-origin: a
// sandboxed report's origin is opaque, which is neither same-origin nor same-site with anything,
// so a stricter value blocks the report's own screenshots and scripts (verified: Chromium
// answers ERR_BLOCKED_BY_RESPONSE.NotSameOrigin / NotSameSite). The cost is that another site
// may embed (not read) a report file whose URL it knows and is allowed to fetch. (A report
// link's URL is itself the credential; its files are readable from any origin, see above.)
func SetHeaders(h http.Header) {
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Resource-Policy", "cross-origin")
	h.Set("Cache-Control", "private, no-store")
}

// storageShim gives a sandboxed page in-memory localStorage and sessionStorage where reading
// the real ones throws, so report applications that keep their settings there start at all.
// It changes nothing in a page that is not sandboxed.
const storageShim = `<script>/* verdict: sandboxed reports get in-memory storage */(function(){` +
	`function mem(){var d={};return Object.defineProperties(d,{` +
	`getItem:{value:function(k){return Object.prototype.hasOwnProperty.call(d,k)?String(d[k]):null}},` +
	`setItem:{value:function(k,v){d[k]=String(v)}},removeItem:{value:function(k){delete d[k]}},` +
	`clear:{value:function(){for(var k in d)delete d[k]}},` +
	`key:{value:function(i){var ks=Object.keys(d);return i<ks.length?ks[i]:null}},` +
	`length:{get:function(){return Object.keys(d).length}}})}` +
	`["localStorage","sessionStorage"].forEach(function(n){try{window[n]}catch(e){` +
	`Object.defineProperty(window,n,{value:mem(),configurable:true})}})})()</script>`

// contentTypes is fixed here rather than taken from mime.TypeByExtension, whose answers depend
// on the host's mime.types (".ts" is a video there). Anything else is served as bytes.
var contentTypes = map[string]string{
	".html":  "text/html; charset=utf-8",
	".htm":   "text/html; charset=utf-8",
	".js":    "text/javascript; charset=utf-8",
	".mjs":   "text/javascript; charset=utf-8",
	".css":   "text/css; charset=utf-8",
	".json":  "application/json",
	".map":   "application/json",
	".png":   "image/png",
	".jpg":   "image/jpeg",
	".jpeg":  "image/jpeg",
	".gif":   "image/gif",
	".webp":  "image/webp",
	".svg":   "image/svg+xml",
	".ico":   "image/x-icon",
	".woff":  "font/woff",
	".woff2": "font/woff2",
	".txt":   "text/plain; charset=utf-8",
	".log":   "text/plain; charset=utf-8",
	".md":    "text/plain; charset=utf-8",
	".csv":   "text/csv; charset=utf-8",
	".xml":   "application/xml",
	".zip":   "application/zip",
	".webm":  "video/webm",
	".mp4":   "video/mp4",
	".trace": "application/octet-stream",
}

// ContentType is the type a report file is served as, by its extension.
func ContentType(name string) string {
	if t, ok := contentTypes[strings.ToLower(path.Ext(name))]; ok {
		return t
	}
	return "application/octet-stream"
}

// Serve answers a GET or HEAD for relPath (the part of the URL path after
// /reports/{org}/{task}/, unescaped, as http.Request.PathValue gives it) of a run's reports.
// The caller has already decided that the requester may see this organization's run. A folder
// is served as its index.html, after a redirect to the URL with a trailing slash so that the
// page's relative links resolve inside it. An HTML page gets storageShim. Anything missing or
// refused is a plain 404 that says no more. Every response carries SetHeaders.
func Serve(w http.ResponseWriter, r *http.Request, s Store, orgID, taskID, relPath string) {
	SetHeaders(w.Header())
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, http.StatusText(http.StatusMethodNotAllowed), http.StatusMethodNotAllowed)
		return
	}
	name := relPath
	f, info, err := s.Open(r.Context(), orgID, taskID, name)
	if errors.Is(err, ErrIsDir) {
		if !strings.HasSuffix(r.URL.Path, "/") {
			target := url.PathEscape(path.Base(r.URL.Path)) + "/"
			if r.URL.RawQuery != "" {
				target += "?" + r.URL.RawQuery
			}
			http.Redirect(w, r, target, http.StatusMovedPermanently)
			return
		}
		name = path.Join(relPath, "index.html")
		f, info, err = s.Open(r.Context(), orgID, taskID, name)
	}
	if err != nil {
		http.NotFound(w, r)
		return
	}
	defer f.Close()
	ctype := ContentType(name)
	w.Header().Set("Content-Type", ctype)
	if strings.HasPrefix(ctype, "text/html") {
		serveHTML(w, r, f, info.Size())
		return
	}
	http.ServeContent(keepHeaders{w}, r, name, info.ModTime(), f)
}

// serveHTML sends a page with storageShim right after its doctype (before it would switch the
// page to quirks mode), or at its start when it has none. Pages are sent whole: no ranges.
func serveHTML(w http.ResponseWriter, r *http.Request, f io.Reader, size int64) {
	head := make([]byte, 1024)
	n, err := io.ReadFull(f, head)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		http.Error(w, http.StatusText(http.StatusInternalServerError), http.StatusInternalServerError)
		return
	}
	head = head[:n]
	at := shimOffset(head)
	w.Header().Set("Content-Length", strconv.FormatInt(size+int64(len(storageShim)), 10))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	w.Write(head[:at])
	io.WriteString(w, storageShim)
	w.Write(head[at:])
	io.Copy(w, f)
}

// shimOffset is where the shim goes in a page starting with head: after a byte-order mark,
// leading space and a doctype.
func shimOffset(head []byte) int {
	at := len(head) - len(bytes.TrimPrefix(head, []byte("\xef\xbb\xbf")))
	rest := bytes.TrimLeft(head[at:], " \t\r\n")
	if len(rest) >= 9 && bytes.EqualFold(rest[:9], []byte("<!doctype")) {
		if end := bytes.IndexByte(rest, '>'); end >= 0 {
			return len(head) - len(rest) + end + 1
		}
	}
	return at
}

// keepHeaders puts the report headers back on an error that ServeContent writes (an
// unsatisfiable range), where it has removed Cache-Control since Go 1.23.
type keepHeaders struct{ http.ResponseWriter }

func (k keepHeaders) WriteHeader(code int) {
	if code >= http.StatusBadRequest {
		SetHeaders(k.Header())
	}
	k.ResponseWriter.WriteHeader(code)
}

// ReadFrom keeps the server's sendfile path for the file body.
func (k keepHeaders) ReadFrom(r io.Reader) (int64, error) { return io.Copy(k.ResponseWriter, r) }

func (k keepHeaders) Unwrap() http.ResponseWriter { return k.ResponseWriter }
