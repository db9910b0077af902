package api

import (
	"net/http"

	"verdict/internal/domain"
)

func (s *Server) listUsers(w http.ResponseWriter, r *http.Request) {
	users, err := s.identity.ListUsers(r.Context(), principalFrom(r))
	if err != nil {
		s.fail(w, r, err, "Failed to list users")
		return
	}
	out := make([]User, len(users))
	for i := range users {
		out[i] = userView(&users[i])
	}
	ok(w, obj{"users": out})
}

func (s *Server) getUser(w http.ResponseWriter, r *http.Request) {
	u, err := s.identity.GetUser(r.Context(), principalFrom(r), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err, "Failed to fetch user")
		return
	}
	ok(w, obj{"user": userView(u)})
}

func (s *Server) changeRole(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Role domain.Role `json:"role"`
	}
	if err := decode(w, r, &in); err != nil {
		writeDomainError(w, err)
		return
	}
	if in.Role == "" {
		writeDomainError(w, domain.BadRequest("Missing required fields", "role is required"))
		return
	}
	u, err := s.identity.ChangeRole(r.Context(), principalFrom(r), r.PathValue("id"), in.Role)
	if err != nil {
		s.fail(w, r, err, "Failed to change role")
		return
	}
	ok(w, obj{"message": "Role updated", "user": obj{"id": u.ID, "email": u.Email, "role": u.Role}})
}

func (s *Server) changeStatus(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Status domain.UserStatus `json:"status"`
	}
	if err := decode(w, r, &in); err != nil {
		writeDomainError(w, err)
		return
	}
	u, err := s.identity.SetStatus(r.Context(), principalFrom(r), r.PathValue("id"), in.Status)
	if err != nil {
		s.fail(w, r, err, "Failed to change status")
		return
	}
	ok(w, obj{"message": "Status updated", "user": obj{"id": u.ID, "email": u.Email, "status": u.Status}})
}

func (s *Server) deleteUser(w http.ResponseWriter, r *http.Request) {
	if err := s.identity.DeleteUser(r.Context(), principalFrom(r), r.PathValue("id")); err != nil {
		s.fail(w, r, err, "Failed to delete user")
		return
	}
	ok(w, obj{"message": "User deleted"})
}
