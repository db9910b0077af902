package api

import (
	"net/http"

	"verdict/internal/domain"
	"verdict/internal/sso"
)

// The organization's OpenID Connect provider (admins). The browser's sign-in through it
// (/auth/sso and its callback) is the dashboard's, since it ends in the dashboard's session.

var errSSOOff = domain.Unavailable("Single sign-on unavailable", "Single sign-on is not available on this server")

func (s *Server) getSSO(w http.ResponseWriter, r *http.Request) {
	if s.sso == nil {
		writeDomainError(w, errSSOOff)
		return
	}
	v, err := s.sso.Get(r.Context(), principalFrom(r))
	if err != nil {
		s.fail(w, r, err, "Failed to fetch single sign-on")
		return
	}
	ok(w, obj{"data": v})
}

func (s *Server) putSSO(w http.ResponseWriter, r *http.Request) {
	if s.sso == nil {
		writeDomainError(w, errSSOOff)
		return
	}
	var in sso.Input
	if err := decode(w, r, &in); err != nil {
		writeDomainError(w, err)
		return
	}
	v, err := s.sso.Put(r.Context(), principalFrom(r), in)
	if err != nil {
		s.fail(w, r, err, "Failed to save single sign-on")
		return
	}
	ok(w, obj{"message": "Single sign-on saved", "data": v})
}
