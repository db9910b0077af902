package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"

	"verdict/internal/domain"
	"verdict/internal/identity"
)

// Retention's routes: the organization's retention (GET for every member, PATCH for admins)
// and pinning a run (admins and developers, like cancel).

// RetentionDays is a pair of retention values; a nil one is null (no setting, no maximum).
type RetentionDays struct {
	LogsDays *int `json:"logsDays"`
	RunsDays *int `json:"runsDays"`
}

// Retention is the answer of the retention routes: what the organization keeps (logsDays,
// runsDays), its own setting, its plan's values and the server's maxima.
type Retention struct {
	LogsDays int           `json:"logsDays"`
	RunsDays int           `json:"runsDays"`
	Plan     domain.Plan   `json:"plan"`
	Setting  RetentionDays `json:"setting"`
	Defaults RetentionDays `json:"defaults"`
	Max      RetentionDays `json:"max"`
}

// daysOrNull is n as a JSON value, null for 0 (no maximum).
func daysOrNull(n int) *int {
	if n <= 0 {
		return nil
	}
	return &n
}

func retentionView(r *identity.RetentionSettings) Retention {
	return Retention{LogsDays: r.Effective.LogsDays, RunsDays: r.Effective.RunsDays, Plan: r.Plan,
		Setting:  RetentionDays{LogsDays: r.Setting.LogsDays, RunsDays: r.Setting.RunsDays},
		Defaults: RetentionDays{LogsDays: daysOrNull(r.Defaults.LogsDays), RunsDays: daysOrNull(r.Defaults.RunsDays)},
		Max:      RetentionDays{LogsDays: daysOrNull(r.Max.LogsDays), RunsDays: daysOrNull(r.Max.RunsDays)}}
}

func (s *Server) getRetention(w http.ResponseWriter, r *http.Request) {
	ret, err := s.identity.Retention(r.Context(), principalFrom(r))
	if err != nil {
		s.fail(w, r, err, "Failed to fetch retention")
		return
	}
	ok(w, obj{"data": retentionView(ret)})
}

// patchRetention takes {logsDays?, runsDays?}: a field left out stays as it is, null goes back
// to the plan's value, a number of days must be whole.
func (s *Server) patchRetention(w http.ResponseWriter, r *http.Request) {
	var in struct {
		LogsDays json.RawMessage `json:"logsDays"`
		RunsDays json.RawMessage `json:"runsDays"`
	}
	if err := decode(w, r, &in); err != nil {
		writeDomainError(w, err)
		return
	}
	if in.LogsDays == nil && in.RunsDays == nil {
		writeDomainError(w, domain.BadRequest("Missing required fields", "Send logsDays and/or runsDays (days, or null for the plan's value)"))
		return
	}
	var patch identity.RetentionPatch
	for _, f := range []struct {
		name string
		raw  json.RawMessage
		dst  *identity.RetentionChange
	}{{"logsDays", in.LogsDays, &patch.LogsDays}, {"runsDays", in.RunsDays, &patch.RunsDays}} {
		c, err := retentionChange(f.name, f.raw)
		if err != nil {
			writeDomainError(w, err)
			return
		}
		*f.dst = c
	}
	ret, err := s.identity.UpdateRetention(r.Context(), principalFrom(r), patch)
	if err != nil {
		s.fail(w, r, err, "Failed to update retention")
		return
	}
	ok(w, obj{"message": "Retention updated", "data": retentionView(ret)})
}

// retentionChange reads one field of the PATCH body: absent (nil), null, or a whole number.
func retentionChange(name string, raw json.RawMessage) (identity.RetentionChange, *domain.Error) {
	if raw == nil {
		return identity.RetentionChange{}, nil
	}
	if bytes.Equal(raw, []byte("null")) {
		return identity.RetentionChange{Set: true}, nil
	}
	n, err := strconv.ParseInt(string(raw), 10, 32)
	if err != nil {
		return identity.RetentionChange{}, domain.BadRequest("Validation error",
			name+" must be a whole number of days, or null for the plan's value")
	}
	days := int(n)
	return identity.RetentionChange{Set: true, Days: &days}, nil
}

func (s *Server) pinExecution(w http.ResponseWriter, r *http.Request) {
	pinned := r.Method == http.MethodPut
	e, err := s.executions.Pin(r.Context(), principalFrom(r), r.PathValue("taskId"), pinned)
	if err != nil {
		s.fail(w, r, err, "Failed to pin execution")
		return
	}
	message := "Execution unpinned"
	if pinned {
		message = "Execution pinned"
	}
	s.recordIndexes(r.Context(), e)
	ok(w, obj{"message": message, "execution": s.views.Execution(e, s.clock())})
}
