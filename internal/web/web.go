// Package web is Verdict's dashboard: server-rendered pages (html/template) on the services the
// API calls, with a browser session in a cookie. Templates, the style sheet and the vendored
// htmx are embedded in the binary.
//
// Security, page by page: every answer carries a strict Content-Security-Policy (no inline
// script or style anywhere, so the templates hold none); the session is the API's JWT in an
// HttpOnly, SameSite=Lax cookie, authenticated on every request exactly like a bearer token
// (the user is re-read: a suspended or deleted user is signed out at once); every
// state-changing request carries a CSRF token bound to the session (or, before signing in, to
// a random cookie of its own).
package web

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"errors"
	"html/template"
	"io/fs"
	"log/slog"
	"mime"
	"net/http"
	"strings"

	"verdict/internal/domain"
	"verdict/internal/identity"
	"verdict/internal/outage"
	"verdict/internal/ports"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// ContentSecurityPolicy is sent with every page and asset: scripts, styles, images and
// connections come from Verdict itself, nothing inline, no framing.
const ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'"

// Cookie names: the session (the API's JWT) and the pre-session CSRF seed of the sign-in forms.
const (
	SessionCookie = "verdict_session"
	preCookie     = "verdict_presession"
	csrfField     = "csrf"
	csrfHeader    = "X-CSRF-Token"
)

// The services the pages call are declared once for both front doors, in internal/ports. As
// with the API, every method a signed-in page reaches takes the principal, and the service
// decides what it may do.

// Deps are what the pages call and their settings. Identity, Executions, JWT and CSRFKey are
// required; New fills in Log and Clock.
type Deps struct {
	Identity   ports.Identity
	Executions ports.Executions
	JWT        ports.TokenVerifier
	// Billing serves the billing page's actions; nil: plan and usage only.
	Billing ports.Billing
	// Analyst serves the model settings on /settings; nil: not shown.
	Analyst ports.Analyst
	// TestCases serves /test-cases and the planner's choice of cases; nil: not available.
	TestCases ports.TestCases
	// Planner serves /planner; nil: not available.
	Planner ports.Planner
	// Trackers serves /settings/integrations and a run's ticket buttons; nil: not available.
	Trackers ports.Trackers
	// CSRFKey signs the CSRF tokens (derived from the JWT secret by internal/app).
	CSRFKey []byte
	// SecureCookies marks the cookies Secure (the public URL is https).
	SecureCookies bool
	// Limit takes a request from the API's rate-limit bucket of the route doing the same action
	// ("login" for the sign-in form, "invite" for the invitation form…), counted as the route
	// counts it (by p's organization, or by client IP for a public bucket), answering the
	// route's 429 error when the bucket is empty; nil: no limit.
	Limit func(r *http.Request, bucket string, p *identity.Principal) error
	// ReportLink is a link to a run's main report that opens it for p (carrying a short-lived
	// report token), "" for none; nil: no report links.
	ReportLink func(ctx context.Context, p *identity.Principal, e *domain.Execution) string
	// Executable is the path of the running verdict binary, served at GET /downloads/verdict
	// (the CLI, for the server's own OS and architecture); "": not served.
	Executable string
	// SocketTickets issues the tickets a page's script opens Socket.IO with; nil: no live updates.
	SocketTickets *SocketTickets
	// Outage answers requests that meet a dependency that is away (503, counted, logged);
	// nil: one of its own.
	Outage *outage.Reporter
	Log    *slog.Logger
	Clock  domain.Clock
}

// Server serves the dashboard.
type Server struct {
	outage     *outage.Reporter
	identity   ports.Identity
	executions ports.Executions
	billing    ports.Billing
	analyst    ports.Analyst
	testCases  ports.TestCases
	planner    ports.Planner
	trackers   ports.Trackers
	jwt        ports.TokenVerifier
	csrfKey    []byte
	secure     bool
	reportLink func(ctx context.Context, p *identity.Principal, e *domain.Execution) string
	executable string
	limit      func(r *http.Request, bucket string, p *identity.Principal) error
	tickets    *SocketTickets
	log        *slog.Logger
	clock      domain.Clock
	pages      map[string]*template.Template
	mux        *http.ServeMux
}

// New builds the dashboard and its routes.
func New(d Deps) *Server {
	if d.Log == nil {
		d.Log = slog.Default()
	}
	if d.Clock == nil {
		d.Clock = domain.SystemClock
	}
	if len(d.CSRFKey) == 0 {
		panic("web: a CSRF key is required")
	}
	if d.Outage == nil {
		d.Outage = &outage.Reporter{Log: d.Log}
	}
	s := &Server{identity: d.Identity, executions: d.Executions, billing: d.Billing, analyst: d.Analyst, jwt: d.JWT, csrfKey: d.CSRFKey,
		secure: d.SecureCookies, reportLink: d.ReportLink, executable: d.Executable, limit: d.Limit, tickets: d.SocketTickets, outage: d.Outage, log: d.Log, clock: d.Clock,
		pages: parsePages(), mux: http.NewServeMux()}
	s.testCases, s.planner, s.trackers = d.TestCases, d.Planner, d.Trackers
	s.routes()
	return s
}

func (s *Server) routes() {
	static, err := fs.Sub(staticFS, "static")
	if err != nil {
		panic(err)
	}
	s.mux.Handle("GET /static/", http.StripPrefix("/static/", staticFiles(static)))
	s.mux.HandleFunc("GET /{$}", s.home)
	s.mux.HandleFunc("GET /downloads/verdict", s.download)
	s.mux.HandleFunc("GET /login", s.public(s.loginPage))
	s.mux.HandleFunc("POST /login", s.public(s.csrf(s.login)))
	s.mux.HandleFunc("GET /signup", s.public(s.signupPage))
	s.mux.HandleFunc("POST /signup", s.public(s.csrf(s.signup)))
	s.mux.HandleFunc("GET /accept-invitation", s.public(s.invitationPage))
	s.mux.HandleFunc("POST /accept-invitation", s.public(s.csrf(s.acceptInvitation)))
	s.mux.HandleFunc("POST /logout", s.public(s.csrf(s.logout)))
	s.mux.HandleFunc("GET /overview", s.signedIn(s.overview))
	s.mux.HandleFunc("GET /runs", s.signedIn(s.runs))
	s.mux.HandleFunc("GET /runs/{taskId}", s.signedIn(s.run))
	s.mux.HandleFunc("GET /runs/{taskId}/log", s.signedIn(s.runLog))
	s.mux.HandleFunc("POST /runs", s.signedIn(s.csrf(s.takes("executions", s.queueRun))))
	s.mux.HandleFunc("GET /runs/folders", s.signedIn(s.folders))
	s.mux.HandleFunc("POST /runs/{taskId}/cancel", s.signedIn(s.csrf(s.takes("executions", s.cancelRun))))
	s.mux.HandleFunc("POST /runs/{taskId}/rerun", s.signedIn(s.csrf(s.takes("executions", s.rerun))))
	s.mux.HandleFunc("POST /runs/{taskId}/delete", s.signedIn(s.csrf(s.takes("executions", s.deleteRun))))
	s.mux.HandleFunc("POST /runs/{taskId}/analysis", s.signedIn(s.csrf(s.takes("executions", s.reanalyse))))
	s.mux.HandleFunc("POST /runs/{taskId}/triage", s.signedIn(s.csrf(s.takes("executions", s.triage))))
	s.mux.HandleFunc("GET /projects", s.signedIn(s.projects))
	s.mux.HandleFunc("POST /projects", s.signedIn(s.csrf(s.takes("api", s.createProject))))
	s.mux.HandleFunc("GET /projects/{id}", s.signedIn(s.project))
	s.mux.HandleFunc("POST /projects/{id}", s.signedIn(s.csrf(s.takes("api", s.updateProject))))
	s.mux.HandleFunc("GET /session/socket-token", s.socketToken)
	s.memberRoutes()
	s.mux.HandleFunc("GET /settings/billing", s.signedIn(s.billingPage))
	s.mux.HandleFunc("POST /settings/billing/checkout", s.signedIn(s.csrf(s.takes("strict", s.checkout))))
	s.mux.HandleFunc("POST /settings/billing/portal", s.signedIn(s.csrf(s.takes("strict", s.portal))))
	s.mux.HandleFunc("GET /settings", s.signedIn(s.settings))
	s.mux.HandleFunc("POST /settings/organization", s.signedIn(s.csrf(s.takes("strict", s.updateOrganization))))
	s.mux.HandleFunc("POST /settings/ai/model", s.signedIn(s.csrf(s.takes("strict", s.setDefaultModel))))
	s.mux.HandleFunc("POST /settings/ai/key", s.signedIn(s.csrf(s.takes("strict", s.saveOwnKey))))
	s.mux.HandleFunc("POST /settings/ai/remove-key", s.signedIn(s.csrf(s.takes("strict", s.removeOwnKey))))
	s.toolRoutes()
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.errorPage(w, r, http.StatusNotFound, "Page not found", "There is no page at this address.")
	})
}

// ServeHTTP serves a page with the dashboard's security headers.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer") // invitation links carry their token in the query
	if !strings.HasPrefix(r.URL.Path, "/static/") {
		h.Set("Cache-Control", "no-store")
	}
	s.mux.ServeHTTP(w, r)
}

// staticFiles serves the embedded assets; they change only with the binary.
func staticFiles(root fs.FS) http.Handler {
	files := http.FileServerFS(root)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "" || strings.HasSuffix(r.URL.Path, "/") {
			http.NotFound(w, r) // no directory listings
			return
		}
		w.Header().Set("Cache-Control", "public, max-age=3600")
		files.ServeHTTP(w, r)
	})
}

// ctxKey keys the request's page state in its context.
type ctxKey int

const stateKey ctxKey = 0

// state is what a page knows of its request: the signed-in principal (nil: none), the user
// and organization shown in the navigation, and the CSRF token of its forms.
type state struct {
	p     *identity.Principal
	user  *domain.User
	org   *domain.Organization
	csrf  string
	flash *flash
}

func stateOf(r *http.Request) *state {
	st, _ := r.Context().Value(stateKey).(*state)
	if st == nil {
		st = &state{}
	}
	return st
}

var errNoSession = errors.New("no session")

// principalOf authenticates the session cookie as the API authenticates a bearer token: the
// JWT is verified (a revoked one is refused) and the user re-read, so a suspended or deleted
// user is refused at once.
func (s *Server) principalOf(r *http.Request) (*identity.Principal, string, error) {
	c, err := r.Cookie(SessionCookie)
	if err != nil || c.Value == "" {
		return nil, "", errNoSession
	}
	claims, err := s.jwt.Verify(c.Value)
	if err != nil {
		return nil, c.Value, err
	}
	p, err := s.identity.AuthenticateClaims(r.Context(), claims.UserID, claims.OrganizationID)
	if err != nil {
		return nil, c.Value, err
	}
	p.SessionID, p.SessionExpires = claims.ID, claims.ExpiresAt
	return p, c.Value, nil
}

// signedIn serves h to a signed-in user; anyone else (no session, an expired token, a
// suspended or deleted user) has the cookie cleared and is sent to /login. A session that
// cannot be checked now (the database is away) is kept: the answer is a 503 page.
func (s *Server) signedIn(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p, token, err := s.principalOf(r)
		if errors.Is(err, domain.ErrUnavailable) {
			s.fail(w, r, err)
			return
		}
		if err != nil {
			if !errors.Is(err, errNoSession) {
				s.clearSession(w)
			}
			redirect(w, r, "/login")
			return
		}
		st := &state{p: p, user: p.User, csrf: s.csrfToken("session", token)}
		if _, org, _, err := s.identity.Me(r.Context(), p); err == nil {
			st.org = org
		}
		h(w, r.WithContext(context.WithValue(r.Context(), stateKey, st)))
	}
}

// public serves h with or without a session. Without one, the forms' CSRF token is bound to
// a random pre-session cookie, set here when missing, so that even signing in cannot be forged.
func (s *Server) public(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		st := &state{}
		p, token, err := s.principalOf(r)
		switch {
		case err == nil:
			st.p, st.user, st.csrf = p, p.User, s.csrfToken("session", token)
		case errors.Is(err, domain.ErrUnavailable):
			s.fail(w, r, err) // the session is kept: it could not be checked, not refused
			return
		default:
			if !errors.Is(err, errNoSession) {
				s.clearSession(w)
			}
			seed := ""
			if c, err := r.Cookie(preCookie); err == nil && len(c.Value) == 26 {
				seed = c.Value
			} else {
				seed = rand.Text() // 128 random bits
				http.SetCookie(w, &http.Cookie{Name: preCookie, Value: seed, Path: "/", HttpOnly: true,
					Secure: s.secure, SameSite: http.SameSiteLaxMode})
			}
			st.csrf = s.csrfToken("presession", seed)
		}
		h(w, r.WithContext(context.WithValue(r.Context(), stateKey, st)))
	}
}

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

func (s *Server) setSession(w http.ResponseWriter, token string) {
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: token, Path: "/", HttpOnly: true,
		Secure: s.secure, SameSite: http.SameSiteLaxMode})
}

func (s *Server) clearSession(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true,
		Secure: s.secure, SameSite: http.SameSiteLaxMode})
}

// redirect sends the browser to path: a 303 for a page, HX-Redirect for an htmx request.
func redirect(w http.ResponseWriter, r *http.Request, path string) {
	if r.Header.Get("HX-Request") == "true" {
		w.Header().Set("HX-Redirect", path)
		w.WriteHeader(http.StatusNoContent)
		return
	}
	http.Redirect(w, r, path, http.StatusSeeOther)
}
