package api

import (
	"net/http"

	"verdict/internal/domain"
)

func (s *Server) invite(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Email string      `json:"email"`
		Role  domain.Role `json:"role"`
	}
	if err := decode(w, r, &in); err != nil {
		writeDomainError(w, err)
		return
	}
	c, err := s.identity.Invite(r.Context(), principalFrom(r), in.Email, in.Role)
	if err != nil {
		s.fail(w, r, err, "Failed to send invitation")
		return
	}
	i := c.Invitation
	created(w, obj{"message": "Invitation sent to " + i.Email, "invitation": obj{"id": i.ID, "email": i.Email,
		"role": i.Role, "expiresAt": ts(i.ExpiresAt), "userExists": c.UserExists, "actionType": c.ActionType()}})
}

func (s *Server) listInvitations(w http.ResponseWriter, r *http.Request) {
	list, err := s.identity.ListInvitations(r.Context(), principalFrom(r))
	if err != nil {
		s.fail(w, r, err, "Failed to list invitations")
		return
	}
	now := s.clock()
	out := make([]Invitation, len(list))
	for i := range list {
		out[i] = invitationView(&list[i], now)
	}
	ok(w, obj{"invitations": out})
}

func (s *Server) revokeInvitation(w http.ResponseWriter, r *http.Request) {
	if err := s.identity.RevokeInvitation(r.Context(), principalFrom(r), r.PathValue("id")); err != nil {
		s.fail(w, r, err, "Failed to revoke invitation")
		return
	}
	ok(w, obj{"message": "Invitation revoked"})
}

func (s *Server) validateInvitation(w http.ResponseWriter, r *http.Request) {
	p, err := s.identity.ValidateInvitation(r.Context(), r.PathValue("token"))
	if err != nil {
		s.fail(w, r, err, "Failed to validate invitation")
		return
	}
	ok(w, obj{"valid": true, "organizationName": p.OrganizationName, "role": p.Role,
		"inviterName": p.InviterName, "email": p.Email, "userExists": p.UserExists})
}

func (s *Server) acceptInvitation(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Token string `json:"token"`
	}
	if err := decode(w, r, &in); err != nil {
		writeDomainError(w, err)
		return
	}
	a, err := s.identity.AcceptInvitation(r.Context(), principalFrom(r), in.Token)
	if err != nil {
		s.fail(w, r, err, "Failed to accept invitation")
		return
	}
	ok(w, obj{"message": "You joined " + a.Org.Name, "organization": obj{"id": a.Org.ID, "name": a.Org.Name},
		"token": a.Token, "user": obj{"id": a.User.ID, "email": a.User.Email, "role": a.User.Role}})
}
