package web

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"verdict/internal/auth"
	"verdict/internal/identity"
)

// The test doubles' identity ends every session without complaint.
func (ids) RevokeSession(context.Context, *identity.Principal) error { return nil }

// revoking records the sessions signing out revoked, or fails with err.
type revoking struct {
	ids
	revoked []string
	err     error
}

func (r *revoking) RevokeSession(_ context.Context, p *identity.Principal) error {
	if r.err != nil {
		return r.err
	}
	r.revoked = append(r.revoked, p.SessionID)
	return nil
}

type sessionTokens struct{ exp time.Time }

func (t sessionTokens) Verify(tok string) (auth.Claims, error) {
	if tok != "good" {
		return auth.Claims{}, errors.New("bad token")
	}
	return auth.Claims{ID: "jti-1", UserID: "u1", OrganizationID: "o1", ExpiresAt: t.exp}, nil
}

// Signing out revokes the session the cookie holds (by its ID and expiry) before clearing the
// cookie; if the revocation fails, the cookie is kept and the failure shown, so that signing
// out again can end the session. A cookie that no longer authenticates is only cleared.
func TestSignOutRevokesTheSession(t *testing.T) {
	exp := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	ident := &revoking{}
	s := New(Deps{Identity: ident, Executions: execs{}, JWT: sessionTokens{exp: exp}, CSRFKey: []byte("k")})
	post := func(cookie string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", "/logout", strings.NewReader("csrf="+s.csrfToken("session", cookie)))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.AddCookie(&http.Cookie{Name: SessionCookie, Value: cookie})
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		return w
	}
	cleared := func(w *httptest.ResponseRecorder) bool {
		for _, c := range w.Result().Cookies() {
			if c.Name == SessionCookie && c.MaxAge < 0 {
				return true
			}
		}
		return false
	}

	w := post("good")
	if w.Code != 303 || w.Header().Get("Location") != "/login" || !cleared(w) {
		t.Fatalf("sign-out: %d %v", w.Code, w.Header())
	}
	if len(ident.revoked) != 1 || ident.revoked[0] != "jti-1" {
		t.Fatalf("revoked %v, want the cookie's session jti-1", ident.revoked)
	}

	ident.err = errors.New("database gone")
	w = post("good")
	if w.Code != 500 || cleared(w) {
		t.Fatalf("a failed revocation: %d, cookie cleared %v; want 500 and the cookie kept", w.Code, cleared(w))
	}

	ident.err, ident.revoked = nil, nil
	req := httptest.NewRequest("POST", "/logout", strings.NewReader("csrf=x"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(&http.Cookie{Name: SessionCookie, Value: "expired"})
	w = httptest.NewRecorder()
	s.ServeHTTP(w, req)
	// Without a valid session the form's token is bound to the pre-session cookie: this one is
	// refused, and nothing is revoked.
	if w.Code != 403 || len(ident.revoked) != 0 {
		t.Fatalf("sign-out with a dead cookie: %d, revoked %v", w.Code, ident.revoked)
	}
}
