package web

import (
	"net/http"
	"strings"
	"time"

	"verdict/internal/domain"
)

type memberRow struct {
	ID, Name, Email string
	Role            domain.Role
	Status          domain.UserStatus
	LastLogin       *time.Time
	Self            bool
}

type membersData struct {
	Members     []memberRow
	Invitations []domain.Invitation // pending ones, admins only
	Roles       []domain.Role
	Admin       bool
}

func (s *Server) members(w http.ResponseWriter, r *http.Request) {
	st := stateOf(r)
	users, err := s.identity.ListUsers(r.Context(), st.p)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	d := membersData{Roles: []domain.Role{domain.RoleAdmin, domain.RoleDeveloper, domain.RoleViewer}, Admin: st.p.IsAdmin()}
	for _, u := range users {
		d.Members = append(d.Members, memberRow{ID: u.ID, Name: u.Name, Email: u.Email, Role: u.Role, Status: u.Status,
			LastLogin: u.LastLoginAt, Self: u.ID == st.p.UserID})
	}
	if d.Admin {
		invs, err := s.identity.ListInvitations(r.Context(), st.p)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		now := s.clock()
		for i := range invs {
			if invs[i].EffectiveStatus(now) == domain.InvitationPending {
				d.Invitations = append(d.Invitations, invs[i])
			}
		}
	}
	s.render(w, r, http.StatusOK, "members", "Members", d)
}

func (s *Server) inviteMember(w http.ResponseWriter, r *http.Request) {
	c, err := s.identity.Invite(r.Context(), stateOf(r).p, strings.TrimSpace(r.PostFormValue("email")),
		domain.Role(r.PostFormValue("role")))
	if err != nil {
		s.refused(w, r, "/members", err)
		return
	}
	s.done(w, r, "/members", "Invitation sent to "+c.Invitation.Email+".")
}

func (s *Server) changeMemberRole(w http.ResponseWriter, r *http.Request) {
	u, err := s.identity.ChangeRole(r.Context(), stateOf(r).p, r.PathValue("id"), domain.Role(r.PostFormValue("role")))
	if err != nil {
		s.refused(w, r, "/members", err)
		return
	}
	s.done(w, r, "/members", u.Email+" is now "+string(u.Role)+".")
}

func (s *Server) changeMemberStatus(w http.ResponseWriter, r *http.Request) {
	u, err := s.identity.SetStatus(r.Context(), stateOf(r).p, r.PathValue("id"), domain.UserStatus(r.PostFormValue("status")))
	if err != nil {
		s.refused(w, r, "/members", err)
		return
	}
	text := u.Email + " is reactivated."
	if u.Status == domain.UserSuspended {
		text = u.Email + " is suspended."
	}
	s.done(w, r, "/members", text)
}

func (s *Server) deleteMember(w http.ResponseWriter, r *http.Request) {
	if err := s.identity.DeleteUser(r.Context(), stateOf(r).p, r.PathValue("id")); err != nil {
		s.refused(w, r, "/members", err)
		return
	}
	s.done(w, r, "/members", "Member deleted.")
}

func (s *Server) revokeInvitation(w http.ResponseWriter, r *http.Request) {
	if err := s.identity.RevokeInvitation(r.Context(), stateOf(r).p, r.PathValue("id")); err != nil {
		s.refused(w, r, "/members", err)
		return
	}
	s.done(w, r, "/members", "Invitation revoked.")
}

type apiKeysData struct {
	Keys []domain.APIKey
	// NewKey is the value of the key just created, shown only in the answer to its creation
	// (never stored in a cookie or a URL); NewName is its name.
	NewKey, NewName string
	Error           *formError
	Name            string
}

func (s *Server) apiKeysPage(w http.ResponseWriter, r *http.Request, status int, d apiKeysData) {
	keys, err := s.identity.ListAPIKeys(r.Context(), stateOf(r).p, false)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	d.Keys = keys
	s.render(w, r, status, "api-keys", "API keys", d)
}

func (s *Server) apiKeys(w http.ResponseWriter, r *http.Request) {
	s.apiKeysPage(w, r, http.StatusOK, apiKeysData{})
}

// createAPIKey answers with the page itself, not a redirect: the key's value is shown this
// once and is never put in a cookie or a URL.
func (s *Server) createAPIKey(w http.ResponseWriter, r *http.Request) {
	name := r.PostFormValue("name")
	k, value, err := s.identity.CreateAPIKey(r.Context(), stateOf(r).p, name)
	if err != nil {
		fe := s.formErrorOf(r, err)
		s.apiKeysPage(w, r, fe.Status, apiKeysData{Error: fe, Name: name})
		return
	}
	s.apiKeysPage(w, r, http.StatusCreated, apiKeysData{NewKey: value, NewName: k.Name})
}

func (s *Server) revokeAPIKey(w http.ResponseWriter, r *http.Request) {
	if err := s.identity.RevokeAPIKey(r.Context(), stateOf(r).p, r.PathValue("id")); err != nil {
		s.refused(w, r, "/settings/api-keys", err)
		return
	}
	s.done(w, r, "/settings/api-keys", "API key revoked.")
}
