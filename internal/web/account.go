package web

import (
	"cmp"
	"net/http"
	"net/url"
	"strings"

	"verdict/internal/identity"
)

// Signing in and out: the home page, sign-in, signup, accepting an invitation, signing out.

func (s *Server) home(w http.ResponseWriter, r *http.Request) {
	if _, _, err := s.principalOf(r); err == nil {
		redirect(w, r, "/runs")
		return
	}
	redirect(w, r, "/login")
}

type loginData struct {
	Email string
	// Next is where signing in leads (a path on this site; "" for /runs).
	Next  string
	Error *formError
	// SSO offers the address's provider ("Sign in with <provider>"); SSOAsked: the address
	// was given to look it up.
	SSO      *ssoOffer
	SSOAsked bool
}

// localPath is next when it is a path on this site, else "": a sign-in link cannot send the
// browser to another site (no scheme, no host, no protocol-relative "//", no backslash).
func localPath(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") {
		return ""
	}
	if u, err := url.Parse(next); err != nil || u.Scheme != "" || u.Host != "" {
		return ""
	}
	return next
}

func (s *Server) loginPage(w http.ResponseWriter, r *http.Request) {
	next := localPath(r.URL.Query().Get("next"))
	if stateOf(r).p != nil {
		redirect(w, r, cmp.Or(next, "/runs"))
		return
	}
	d := loginData{Next: next}
	if email := r.URL.Query().Get("email"); email != "" {
		d.Email, d.SSOAsked = email, true
		// A lookup tells whether an address has a provider: counted as a sign-in attempt.
		if err := s.limited(w, r, "login"); err != nil {
			fe := s.formErrorOf(r, err)
			d.Error = fe
			s.render(w, r, fe.Status, "login", "Sign in", d)
			return
		}
		d.SSO, d.Error = s.ssoOfferFor(r, email)
	}
	s.render(w, r, http.StatusOK, "login", "Sign in", d)
}

func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	email, next := r.PostFormValue("email"), localPath(r.PostFormValue("next"))
	err := s.limited(w, r, "login")
	var sess *identity.Session
	if err == nil {
		sess, err = s.identity.Login(r.Context(), email, r.PostFormValue("password"))
	}
	if err != nil {
		fe := s.formErrorOf(r, err)
		d := loginData{Email: email, Next: next, Error: fe}
		if fe.Title == "SSO required" {
			d.SSO, _ = s.ssoOfferFor(r, email)
		}
		s.render(w, r, fe.Status, "login", "Sign in", d)
		return
	}
	s.setSession(w, sess.Token)
	redirect(w, r, cmp.Or(next, "/runs"))
}

type signupData struct {
	Email, Name, OrganizationName string
	Error                         *formError
}

func (s *Server) signupPage(w http.ResponseWriter, r *http.Request) {
	s.render(w, r, http.StatusOK, "signup", "Create an account", signupData{})
}

func (s *Server) signup(w http.ResponseWriter, r *http.Request) {
	in := identity.SignupInput{Email: r.PostFormValue("email"), Password: r.PostFormValue("password"),
		Name: r.PostFormValue("name"), OrganizationName: r.PostFormValue("organizationName")}
	err := s.limited(w, r, "signup")
	var sess *identity.Session
	if err == nil {
		sess, err = s.identity.Signup(r.Context(), in)
	}
	if err != nil {
		fe := s.formErrorOf(r, err)
		s.render(w, r, fe.Status, "signup", "Create an account", signupData{Email: in.Email, Name: in.Name,
			OrganizationName: in.OrganizationName, Error: fe})
		return
	}
	s.setSession(w, sess.Token)
	redirect(w, r, "/runs")
}

type invitationData struct {
	Token string
	// Return is this page's address, for the sign-in link of an existing user.
	Return  string
	Preview *identity.InvitationPreview
	// Refused explains a token that cannot be used (unknown, used, revoked, expired).
	Refused *formError
	// Form is the refusal of a submitted form (signup or accept).
	Error *formError
	Name  string
	// SignedInAs is the signed-in user's e-mail; WrongUser: it is not the invitation's.
	SignedInAs string
	WrongUser  bool
}

func (s *Server) invitationData(r *http.Request, token string) (invitationData, int) {
	d := invitationData{Token: token, Return: "/accept-invitation?token=" + url.QueryEscape(token)}
	if st := stateOf(r); st.user != nil {
		d.SignedInAs = st.user.Email
	}
	prev, err := s.identity.ValidateInvitation(r.Context(), token)
	if err != nil {
		d.Refused = s.formErrorOf(r, err)
		return d, d.Refused.Status
	}
	d.Preview = prev
	d.WrongUser = d.SignedInAs != "" && d.SignedInAs != prev.Email
	return d, http.StatusOK
}

func (s *Server) invitationPage(w http.ResponseWriter, r *http.Request) {
	d, status := s.invitationData(r, strings.TrimSpace(r.URL.Query().Get("token")))
	s.render(w, r, status, "invitation", "Invitation", d)
}

// acceptInvitation joins the inviting organization: a signed-in user accepts (and gets the
// new organization's session), a new user signs up with the token.
func (s *Server) acceptInvitation(w http.ResponseWriter, r *http.Request) {
	token := strings.TrimSpace(r.PostFormValue("token"))
	st := stateOf(r)
	var sessionToken string
	var err error
	if st.p != nil {
		// As POST /api/invitations/accept.
		var acc *identity.Accepted
		if err = s.limited(w, r, "invitations"); err == nil {
			if acc, err = s.identity.AcceptInvitation(r.Context(), st.p, token); err == nil {
				sessionToken = acc.Token
			}
		}
	} else if err = s.limited(w, r, "signup"); err == nil {
		var sess *identity.Session
		sess, err = s.identity.Signup(r.Context(), identity.SignupInput{Email: r.PostFormValue("email"),
			Password: r.PostFormValue("password"), Name: r.PostFormValue("name"), InviteToken: token})
		if err == nil {
			sessionToken = sess.Token
		}
	}
	if err != nil {
		d, _ := s.invitationData(r, token)
		d.Error, d.Name = s.formErrorOf(r, err), r.PostFormValue("name")
		s.render(w, r, d.Error.Status, "invitation", "Invitation", d)
		return
	}
	s.setSession(w, sessionToken)
	redirect(w, r, "/runs")
}

// logout signs out: the session's token is revoked on the server (refused from now on, its
// live connections ended) and the cookie cleared. If the revocation fails the cookie is kept,
// so that signing out again can end the session; a cookie that no longer authenticates has
// nothing left to revoke.
func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	if p := stateOf(r).p; p != nil {
		if err := s.identity.RevokeSession(r.Context(), p); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	s.clearSession(w)
	redirect(w, r, "/login")
}
