package api

import (
	"net/http"
	"time"
)

// listRunners is GET /api/runners: the remote runners this replica heard from in the last
// minute (admins only; the service decides). Nothing secret is shown.
func (s *Server) listRunners(w http.ResponseWriter, r *http.Request) {
	p := principalFrom(r)
	var runners []RunnerInfo
	if s.runners == nil {
		if err := p.RequireAdmin(); err != nil {
			s.fail(w, r, err, "Failed to list runners")
			return
		}
	} else {
		var err error
		if runners, err = s.runners.ListRunners(r.Context(), p); err != nil {
			s.fail(w, r, err, "Failed to list runners")
			return
		}
	}
	out := make([]obj, 0, len(runners))
	for _, rn := range runners {
		out = append(out, obj{"id": rn.ID, "name": rn.Name, "backend": rn.Backend, "slots": rn.Slots, "busy": rn.Busy,
			"lastSeenAt": rn.LastSeenAt.UTC().Format(time.RFC3339)})
	}
	ok(w, obj{"data": obj{"runners": out}})
}
