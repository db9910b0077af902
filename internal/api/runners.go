package api

import (
	"net/http"
	"time"
)

// listRunners is GET /api/runners for an organization's admin (the service decides): the
// remote runners heard from in the last minute, each runner's busy count being the
// organization's own runs on it. Nothing secret is shown.
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
	writeRunners(w, runners)
}

// listAllRunners is GET /api/runners for the runners' operator (the runner secret as bearer
// token): every runner as it reports itself, its busy count all organizations' runs.
func (s *Server) listAllRunners(w http.ResponseWriter, r *http.Request) {
	runners, err := s.runners.ListAllRunners(r.Context())
	if err != nil {
		s.fail(w, r, err, "Failed to list runners")
		return
	}
	writeRunners(w, runners)
}

func writeRunners(w http.ResponseWriter, runners []RunnerInfo) {
	out := make([]obj, 0, len(runners))
	for _, rn := range runners {
		out = append(out, obj{"id": rn.ID, "name": rn.Name, "backend": rn.Backend, "slots": rn.Slots, "busy": rn.Busy,
			"lastSeenAt": rn.LastSeenAt.UTC().Format(time.RFC3339)})
	}
	ok(w, obj{"data": obj{"runners": out}})
}
