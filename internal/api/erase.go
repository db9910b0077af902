package api

import (
	"net/http"

	"verdict/internal/domain"
)

// The organization's erasure (admins): scheduled with its slug typed as confirmation, at the
// end of the server's grace period, and cancelled until then.

var errCustodyOff = domain.Unavailable("Erasure unavailable", "Erasing organizations is not available on this server")

func (s *Server) eraseOrganization(w http.ResponseWriter, r *http.Request) {
	if s.custody == nil {
		writeDomainError(w, errCustodyOff)
		return
	}
	var in struct {
		Confirm string `json:"confirm"`
	}
	if err := decode(w, r, &in); err != nil {
		writeDomainError(w, err)
		return
	}
	e, err := s.custody.ScheduleErase(r.Context(), principalFrom(r), in.Confirm)
	if err != nil {
		s.fail(w, r, err, "Failed to schedule the erasure")
		return
	}
	writeJSON(w, http.StatusAccepted, obj{"success": true,
		"message": "The organization will be erased at " + ts(e.EraseAt) + "; an admin can cancel it until then",
		"data": obj{"organizationId": e.OrganizationID, "slug": e.Slug, "eraseAt": ts(e.EraseAt),
			"requestedBy": e.RequestedBy}})
}

func (s *Server) cancelErase(w http.ResponseWriter, r *http.Request) {
	if s.custody == nil {
		writeDomainError(w, errCustodyOff)
		return
	}
	if err := s.custody.CancelErase(r.Context(), principalFrom(r)); err != nil {
		s.fail(w, r, err, "Failed to cancel the erasure")
		return
	}
	ok(w, obj{"message": "The organization's erasure is cancelled"})
}
