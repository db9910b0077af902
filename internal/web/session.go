package web

import (
	"context"
	"crypto/rand"
	"errors"
	"net/http"

	"verdict/internal/domain"
	"verdict/internal/identity"
)

// The browser session: the signed-in principal from the session cookie, the page state a
// request carries, and the cookie itself.

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
