package web

import (
	"errors"
	"net/http"

	"verdict/internal/domain"
	"verdict/internal/sso"
)

// Single sign-on in the browser. The sign-in page asks for an address (GET /login?email=) and
// offers "Sign in with <provider>" when an organization's provider signs it in: a link, not a
// form, since the page's form-action policy would stop a form's redirect to the provider.
// GET /auth/sso sends the browser to the provider with the sealed flow in a cookie scoped to
// /auth/sso; GET /auth/sso/callback checks the answer and opens the dashboard's session.

// ssoCookie carries the sealed sign-in flow from /auth/sso to its callback. SameSite=Lax: the
// provider's redirect back is a top-level navigation, which Lax lets it ride.
const ssoCookie = "verdict_sso"

// ssoOffer is what the sign-in page shows for an address an organization's provider signs in.
type ssoOffer struct {
	Email, Provider string
	Required        bool
}

// ssoOfferFor looks up the provider of an address for the sign-in page; nil for none.
func (s *Server) ssoOfferFor(r *http.Request, email string) (*ssoOffer, *formError) {
	if s.sso == nil || email == "" {
		return nil, nil
	}
	c, name, err := s.sso.Lookup(r.Context(), email)
	var de *domain.Error
	if errors.As(err, &de) && de.Kind == domain.KindNotFound {
		return nil, nil // the page says that no provider signs the address in
	}
	if errors.As(err, &de) && de.Kind != domain.KindInternal {
		return nil, &formError{Status: http.StatusOK, Title: de.Code, Message: de.Message}
	}
	if err != nil {
		return nil, s.formErrorOf(r, err)
	}
	return &ssoOffer{Email: domain.NormalizeEmail(email), Provider: name, Required: c.Required}, nil
}

func (s *Server) ssoStart(w http.ResponseWriter, r *http.Request) {
	email := r.URL.Query().Get("email")
	err := s.limited(w, r, "login")
	var start *sso.Start
	if err == nil && s.sso == nil {
		err = domain.Unavailable("Single sign-on unavailable", "Single sign-on is not available on this server")
	}
	if err == nil {
		start, err = s.sso.Begin(r.Context(), email)
	}
	if err != nil {
		fe := s.formErrorOf(r, err)
		s.render(w, r, fe.Status, "login", "Sign in", loginData{Email: email, Error: fe})
		return
	}
	http.SetCookie(w, &http.Cookie{Name: ssoCookie, Value: start.Flow, Path: "/auth/sso", MaxAge: 600, HttpOnly: true,
		Secure: s.secure, SameSite: http.SameSiteLaxMode})
	http.Redirect(w, r, start.URL, http.StatusSeeOther)
}

func (s *Server) ssoCallback(w http.ResponseWriter, r *http.Request) {
	err := s.limited(w, r, "login")
	if err == nil && s.sso == nil {
		err = domain.Unavailable("Single sign-on unavailable", "Single sign-on is not available on this server")
	}
	// The flow is good for one answer, whatever it is.
	http.SetCookie(w, &http.Cookie{Name: ssoCookie, Value: "", Path: "/auth/sso", MaxAge: -1, HttpOnly: true,
		Secure: s.secure, SameSite: http.SameSiteLaxMode})
	if err == nil {
		q := r.URL.Query()
		cb := sso.Callback{State: q.Get("state"), Code: q.Get("code"), Error: q.Get("error"),
			ErrorDescription: q.Get("error_description")}
		if c, cerr := r.Cookie(ssoCookie); cerr == nil {
			cb.Flow = c.Value
		}
		session, ferr := s.sso.Finish(r.Context(), cb)
		if ferr == nil {
			s.setSession(w, session.Token)
			redirect(w, r, "/runs")
			return
		}
		err = ferr
	}
	fe := s.formErrorOf(r, err)
	s.render(w, r, fe.Status, "login", "Sign in", loginData{Error: fe})
}
