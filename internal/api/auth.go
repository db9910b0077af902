package api

import (
	"net/http"

	"verdict/internal/domain"
	"verdict/internal/identity"
)

func (s *Server) signup(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Email            string `json:"email"`
		Password         string `json:"password"`
		Name             string `json:"name"`
		OrganizationName string `json:"organizationName"`
		InviteToken      string `json:"inviteToken"`
	}
	if err := decode(w, r, &in); err != nil {
		writeDomainError(w, err)
		return
	}
	ctx := domain.WithClientIP(r.Context(), clientIP(r, s.proxies)) // for the audit entry of a joining member
	sess, err := s.identity.Signup(ctx, identity.SignupInput(in))
	if err != nil {
		s.fail(w, r, err, "Signup failed")
		return
	}
	created(w, sessionView(sess))
}

func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Email    string `json:"email"`
		Password string `json:"password"`
	}
	if err := decode(w, r, &in); err != nil {
		writeDomainError(w, err)
		return
	}
	ctx := domain.WithClientIP(r.Context(), clientIP(r, s.proxies)) // for the audit entry of a break-glass sign-in
	sess, err := s.identity.Login(ctx, in.Email, in.Password)
	if err != nil {
		s.fail(w, r, err, "Login failed")
		return
	}
	ok(w, sessionView(sess))
}

func (s *Server) me(w http.ResponseWriter, r *http.Request) {
	u, org, count, err := s.identity.Me(r.Context(), principalFrom(r))
	if err != nil {
		s.fail(w, r, err, "Failed to fetch user info")
		return
	}
	data := Me{User: userView(u), Organization: orgView(org, count)}
	data.CreatedAt, data.Organization.CreatedAt = "", "" // left out of this view
	ok(w, obj{"data": data})
}

// logout is stateless: the server keeps no session, and the client discards its token (it
// stays valid until it expires; POST /api/auth/revoke ends it).
func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	ok(w, obj{"message": "Logged out; discard the token on the client"})
}

// revoke ends the calling token's session on the server: the token is refused from now on
// (by every replica within identity.RevocationInterval), and the live connections opened
// with it end.
func (s *Server) revoke(w http.ResponseWriter, r *http.Request) {
	if err := s.identity.RevokeSession(r.Context(), principalFrom(r)); err != nil {
		s.fail(w, r, err, "Failed to revoke token")
		return
	}
	ok(w, obj{"message": "Token revoked; it is refused from now on"})
}

func (s *Server) createAPIKey(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Name string `json:"name"`
	}
	if err := decode(w, r, &in); err != nil {
		writeDomainError(w, err)
		return
	}
	k, value, err := s.identity.CreateAPIKey(r.Context(), principalFrom(r), in.Name)
	if err != nil {
		s.fail(w, r, err, "Failed to create API key")
		return
	}
	created(w, obj{"apiKey": value, "data": apiKeyView(k).NewAPIKey})
}

func (s *Server) listAPIKeys(w http.ResponseWriter, r *http.Request) {
	all := r.URL.Query().Get("all") == "true"
	keys, err := s.identity.ListAPIKeys(r.Context(), principalFrom(r), all)
	if err != nil {
		s.fail(w, r, err, "Failed to list API keys")
		return
	}
	out := make([]APIKey, len(keys))
	for i := range keys {
		out[i] = apiKeyView(&keys[i])
	}
	ok(w, obj{"data": out})
}

func (s *Server) revokeAPIKey(w http.ResponseWriter, r *http.Request) {
	if err := s.identity.RevokeAPIKey(r.Context(), principalFrom(r), r.PathValue("id")); err != nil {
		s.fail(w, r, err, "Failed to revoke API key")
		return
	}
	ok(w, obj{"message": "API key revoked"})
}
