package web

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"mime"
	"net/http"
	"strings"
)

// CSRF: every state-changing request carries a token bound to the session (or, before signing
// in, to a random cookie), checked after its form is read within its bound.

// csrfToken is the HMAC of what the token is bound to: the session's JWT, or the pre-session
// cookie.
func (s *Server) csrfToken(kind, seed string) string {
	m := hmac.New(sha256.New, s.csrfKey)
	m.Write([]byte("verdict csrf " + kind + "\x00" + seed))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// csrf refuses a state-changing request whose token (the form field csrf, or the
// X-CSRF-Token header that htmx sends) is missing or is not the one of this session, having
// read its form (checkedForm).
func (s *Server) csrf(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.checkedForm(w, r, plainForm) {
			h(w, r)
		}
	}
}

// checkedForm reads r's form within b (readForm), whichever carries the CSRF token, and checks
// the token: one in the header before the body is read, so that a forged request's body is not
// even read, one in the form after. It answers the refusal itself.
func (s *Server) checkedForm(w http.ResponseWriter, r *http.Request, b formBound) bool {
	if r.Header.Get(csrfHeader) != "" {
		return s.csrfValid(w, r) && s.readForm(w, r, b)
	}
	return s.readForm(w, r, b) && s.csrfValid(w, r)
}

// csrfValid checks the request's token, answering the 403 page when it is missing or wrong; a
// token not in the header is looked for in the form already read.
func (s *Server) csrfValid(w http.ResponseWriter, r *http.Request) bool {
	got := r.Header.Get(csrfHeader)
	if got == "" {
		got = r.PostForm.Get(csrfField)
	}
	want := stateOf(r).csrf
	if got == "" || want == "" || !hmac.Equal([]byte(got), []byte(want)) {
		s.errorPage(w, r, http.StatusForbidden, "Request refused",
			"This form has expired or did not come from this site. Go back, reload the page and try again.")
		return false
	}
	return true
}

// formBound is how much of a form's body the server reads, and whether it may be a multipart
// form (a route that takes a file).
type formBound struct {
	bytes int64
	files bool
	// tooLarge is the refusal of a larger body.
	tooLarge string
}

// plainForm bounds the body of every form but the CSV import's (importForm): 64 KiB, the bound
// the forms that carry their token as a field were always read with. It holds any sign-in,
// setting, project or run form; a test case of more than some 60,000 characters of text is
// refused (the API's JSON body takes up to 1 MiB). Sign-in and signup are posted before any
// session exists, so this is what anyone may make the server read.
var plainForm = formBound{bytes: 64 << 10, tooLarge: "The form must be at most 64 KiB. Nothing was changed."}

// readForm reads r's form into r.PostForm before anything else parses it: at most b.bytes, in
// memory; a multipart form only where b.files is set, with at most 1 MiB of it in memory and
// the rest in temporary files (which the caller removes: net/http removes only those of the
// request it made, not of one derived from it with a context). A body over the
// bound (by its Content-Length, before any of it is read, or as it is read) is a 413 page, a
// multipart body on a route that takes no file a 415, both before anything is parsed or
// changed, and the connection is then closed rather than drained. Without this, net/http
// parses a form lazily with its own bounds: 10 MB of a urlencoded form, and a multipart one
// up to 32 MiB in memory and without bound on disk.
func (s *Server) readForm(w http.ResponseWriter, r *http.Request, b formBound) bool {
	if r.ContentLength > b.bytes {
		s.formRefused(w, r, http.StatusRequestEntityTooLarge, "Request body too large", b.tooLarge)
		return false
	}
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	multipart := strings.HasPrefix(mt, "multipart/")
	if multipart && !b.files {
		s.formRefused(w, r, http.StatusUnsupportedMediaType, "Unsupported form",
			"This form takes no file: it is sent as application/x-www-form-urlencoded. Nothing was changed.")
		return false
	}
	r.Body = http.MaxBytesReader(w, r.Body, b.bytes)
	var err error
	if b.files {
		err = r.ParseMultipartForm(1 << 20)
	} else {
		err = r.ParseForm()
	}
	if tooLarge := (*http.MaxBytesError)(nil); errors.As(err, &tooLarge) {
		s.formRefused(w, r, http.StatusRequestEntityTooLarge, "Request body too large", b.tooLarge)
		return false
	} else if err != nil {
		s.formRefused(w, r, http.StatusBadRequest, "Invalid form", "The form could not be read.")
		return false
	}
	return true
}

// formRefused answers a form that was not read, closing the connection: the rest of its body
// is not read either.
func (s *Server) formRefused(w http.ResponseWriter, r *http.Request, status int, heading, message string) {
	w.Header().Set("Connection", "close")
	s.errorPage(w, r, status, heading, message)
}
