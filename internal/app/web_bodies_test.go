//go:build integration

package app_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"verdict/internal/web"
)

// bodyAttack is a POST whose body the client sends in part and then holds back, as a client
// that stalls does: a server that waits for the whole body before answering never answers it.
type bodyAttack struct {
	name        string
	path        string
	contentType string
	headers     []string // more header lines, "Name: value"
	length      int64    // the declared Content-Length; -1: chunked, no length
	prefix      string   // the body's first bytes (a form's fields, a multipart part's head)
	send        int64    // bytes of body sent (prefix included) before it stalls
}

// filler is an endless body of 'a's.
type filler struct{}

func (filler) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'a'
	}
	return len(p), nil
}

// post sends a to addr and waits up to wait for the answer while the rest of the body is held
// back. It returns the status (0: no answer in time) and body of the answer, how long it took,
// and the multipart temporary files in tmp once the client has sent what it sends (the
// server's parser removes its files when the request fails, so they are looked for while the
// connection is still open).
func (a bodyAttack) post(t *testing.T, addr, tmp string, wait time.Duration) (status int, body string, took time.Duration, temps []string) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	head := "POST " + a.path + " HTTP/1.1\r\nHost: verdict.test\r\nContent-Type: " + a.contentType + "\r\n"
	for _, h := range a.headers {
		head += h + "\r\n"
	}
	if a.length >= 0 {
		head += "Content-Length: " + strconv.FormatInt(a.length, 10) + "\r\n\r\n"
	} else {
		head += "Transfer-Encoding: chunked\r\n\r\n"
	}
	start := time.Now()
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		if _, err := io.WriteString(conn, head); err != nil {
			return
		}
		var w io.Writer = conn
		if a.length < 0 {
			w = httputil.NewChunkedWriter(conn) // never closed: the body has no end
		}
		// Stops at the first error: the server hung up.
		_, _ = io.CopyBuffer(w, io.MultiReader(strings.NewReader(a.prefix), io.LimitReader(filler{}, a.send-int64(len(a.prefix)))),
			make([]byte, 64<<10))
	}()
	_ = conn.SetReadDeadline(start.Add(wait))
	if res, err := http.ReadResponse(bufio.NewReader(conn), nil); err == nil {
		raw, _ := io.ReadAll(res.Body)
		res.Body.Close()
		status, body = res.StatusCode, string(raw)
	}
	took = time.Since(start)
	select {
	case <-sent:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: the client could not send %d bytes in 30s", a.name, a.send)
	}
	time.Sleep(200 * time.Millisecond) // what the server read of it is on disk by now
	temps, _ = filepath.Glob(filepath.Join(tmp, "multipart-*"))
	return status, body, took, temps
}

func presessionCookie(t *testing.T, b *browser) string {
	t.Helper()
	u, _ := url.Parse(b.h.srv.URL)
	for _, c := range b.c.Jar.Cookies(u) {
		if c.Name == "verdict_presession" {
			return c.Name + "=" + c.Value
		}
	}
	t.Fatal("GET /login set no pre-session cookie")
	return ""
}

// Anyone gets a pre-session CSRF token from GET /login: with it in the header, a sign-in's body
// used to be parsed with net/http's own bounds (10 MB of a urlencoded form; a multipart one up
// to 32 MiB in memory and the rest in a temporary file, without bound). Every form's body is now
// bounded before anything parses it, whichever carries the token: a larger one is a 413 at
// once (by its Content-Length, or as it is read), a multipart one where no file is taken a 415,
// nothing is written to disk, and the server serves on. The API's bodies are bounded too.
func TestWebFormBodiesBounded(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // where net/http's multipart parser writes its files
	h := newHarness(t, harnessOpts{dialect: "sqlite"})
	addr := strings.TrimPrefix(h.srv.URL, "http://")
	admin := h.signup("ada@example.com", "Bodies Co")

	pre := h.browser(t)
	pre.get("/login")
	preToken, preCookie := pre.csrf, presessionCookie(t, pre)
	anonHeaders := []string{"X-CSRF-Token: " + preToken, "Cookie: " + preCookie}
	signed := h.signIn(t, admin.email)
	signed.get("/members")
	signedHeaders := []string{"X-CSRF-Token: " + signed.csrf, "Cookie: " + web.SessionCookie + "=" + signed.session()}

	const boundary = "XyZ"
	multipart := "multipart/form-data; boundary=" + boundary
	filePart := "--" + boundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"big.csv\"\r\nContent-Type: text/csv\r\n\r\n"
	urlencoded := "application/x-www-form-urlencoded"
	for _, c := range []struct {
		bodyAttack
		status int
		text   string
	}{
		{bodyAttack{name: "sign-in, 30 MiB multipart, token in the header", path: "/login", contentType: multipart, headers: anonHeaders,
			length: 30 << 20, prefix: filePart, send: 4 << 20}, 413, "Request body too large"},
		{bodyAttack{name: "sign-in, 20 MB urlencoded, token in the header", path: "/login", contentType: urlencoded, headers: anonHeaders,
			length: 20e6, prefix: "email=", send: 4 << 20}, 413, "Request body too large"},
		{bodyAttack{name: "sign-in, 20 MB urlencoded, token in the form", path: "/login", contentType: urlencoded, headers: anonHeaders[1:],
			length: 20e6, prefix: "csrf=" + preToken + "&email=", send: 4 << 20}, 413, "Request body too large"},
		// An 80 MiB file, 40 MiB of it sent: past the 32 MiB net/http keeps in memory.
		{bodyAttack{name: "sign-in, 80 MiB multipart, token in the header", path: "/login", contentType: multipart, headers: anonHeaders,
			length: 80 << 20, prefix: filePart, send: 40 << 20}, 413, "Request body too large"},
		// Without a length, the bound holds as the body is read; a multipart body is not read.
		{bodyAttack{name: "sign-in, chunked multipart, token in the header", path: "/login", contentType: multipart, headers: anonHeaders,
			length: -1, prefix: filePart, send: 40 << 20}, 415, "This form takes no file"},
		{bodyAttack{name: "sign-in, chunked urlencoded, token in the header", path: "/login", contentType: urlencoded, headers: anonHeaders,
			length: -1, prefix: "email=", send: 4 << 20}, 413, "Request body too large"},
		{bodyAttack{name: "signup, chunked urlencoded, token in the form", path: "/signup", contentType: urlencoded, headers: anonHeaders[1:],
			length: -1, prefix: "csrf=" + preToken + "&email=", send: 4 << 20}, 413, "Request body too large"},
		// Signed in, the same.
		{bodyAttack{name: "invitation, 30 MiB multipart, token in the header", path: "/members/invite", contentType: multipart, headers: signedHeaders,
			length: 30 << 20, prefix: filePart, send: 4 << 20}, 413, "Request body too large"},
		{bodyAttack{name: "invitation, chunked multipart, token in the header", path: "/members/invite", contentType: multipart, headers: signedHeaders,
			length: -1, prefix: filePart, send: 40 << 20}, 415, "This form takes no file"},
		// The one route that takes a file keeps its own bound: the file's 10 MiB and its fields.
		{bodyAttack{name: "CSV import, 30 MiB multipart, token in the header", path: "/test-cases/import", contentType: multipart, headers: signedHeaders,
			length: 30 << 20, prefix: filePart, send: 4 << 20}, 413, "The file must be at most 10.0 MiB"},
		{bodyAttack{name: "CSV import, chunked multipart, token in the header", path: "/test-cases/import", contentType: multipart, headers: signedHeaders,
			length: -1, prefix: filePart, send: 40 << 20}, 413, "The file must be at most 10.0 MiB"},
		// The API bounds its JSON bodies at 1 MiB.
		{bodyAttack{name: "API sign-in, 20 MB JSON", path: "/api/auth/login", contentType: "application/json",
			length: 20e6, prefix: `{"email":"`, send: 4 << 20}, 400, "Request body too large"},
	} {
		status, body, took, temps := c.post(t, addr, tmp, 10*time.Second)
		t.Logf("%s: %d after %v", c.name, status, took.Round(time.Millisecond))
		if status != c.status || !strings.Contains(body, c.text) {
			if status == 0 {
				t.Errorf("%s: no answer within %v while the body was held back (the server waits to read it all); want %d", c.name, took.Round(time.Millisecond), c.status)
			} else {
				t.Errorf("%s: %d, want %d with %q: %.300s", c.name, status, c.status, c.text, body)
			}
		}
		if len(temps) > 0 {
			t.Errorf("%s: the server wrote the body to %v", c.name, temps)
			for _, f := range temps {
				_ = os.Remove(f) // for the next case
			}
		}
	}

	// The server serves on: the sign-in page, signing in, an invitation.
	wantStatus(t, "the sign-in page afterwards", h.browser(t).get("/login"), 200, "Sign in")
	h.signIn(t, admin.email)
	wantRedirect(t, "an invitation afterwards", signed.post("/members/invite", url.Values{"email": {"new@example.com"}, "role": {"viewer"}}), "/members")
}
