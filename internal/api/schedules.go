package api

import (
	"net/http"

	"verdict/internal/domain"
	"verdict/internal/schedules"
)

// Schedule is a project's schedule as the API shows it: secret values masked, the next fire
// times (none while paused) and what its fires did.
type Schedule struct {
	ID            string            `json:"id"`
	ProjectID     string            `json:"projectId"`
	Name          string            `json:"name"`
	Cron          string            `json:"cron"`
	Timezone      string            `json:"timezone"`
	Folder        string            `json:"folder"`
	BaseURL       string            `json:"baseUrl"`
	EnvVars       []domain.EnvVar   `json:"envVars"`
	Labels        map[string]string `json:"labels"`
	Enabled       bool              `json:"enabled"`
	NextRuns      []string          `json:"nextRuns"`
	LastFireAt    *string           `json:"lastFireAt"`
	LastTaskID    *string           `json:"lastTaskId"`
	LastError     *string           `json:"lastError"`
	LastRefusedAt *string           `json:"lastRefusedAt"`
	MissedFires   int               `json:"missedFires"`
	LastMissedAt  *string           `json:"lastMissedAt"`
	CreatedBy     string            `json:"createdBy"`
	CreatedAt     string            `json:"createdAt"`
	UpdatedAt     string            `json:"updatedAt"`
}

func scheduleView(v *schedules.View) Schedule {
	runs := make([]string, len(v.NextRuns))
	for i, t := range v.NextRuns {
		runs[i] = ts(t)
	}
	orNil := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	vars := v.EnvVars
	if vars == nil {
		vars = []domain.EnvVar{}
	}
	labels := v.Labels
	if labels == nil {
		labels = map[string]string{}
	}
	return Schedule{ID: v.ID, ProjectID: v.ProjectID, Name: v.Name, Cron: v.Cron, Timezone: v.Timezone, Folder: v.Folder,
		BaseURL: v.BaseURL, EnvVars: vars, Labels: labels, Enabled: v.Enabled, NextRuns: runs,
		LastFireAt: tsPtr(v.LastFireAt), LastTaskID: orNil(v.LastTaskID), LastError: orNil(v.LastError),
		LastRefusedAt: tsPtr(v.LastRefusedAt), MissedFires: v.MissedFires, LastMissedAt: tsPtr(v.LastMissedAt),
		CreatedBy: v.CreatedBy, CreatedAt: ts(v.CreatedAt), UpdatedAt: ts(v.UpdatedAt)}
}

// scheduleRoutes registers a project's schedules: reads for every member, writes for admins
// and developers (the service decides), in the API's bucket like the project's own routes.
func (s *Server) scheduleRoutes() {
	o := routeOpts{access: bearerOrKey, limit: "api"}
	s.handle("GET /api/projects/{id}/schedules", o, s.schedulesOn(s.listSchedules))
	s.handle("POST /api/projects/{id}/schedules", o, s.schedulesOn(s.createSchedule))
	s.handle("GET /api/projects/{id}/schedules/{scheduleId}", o, s.schedulesOn(s.getSchedule))
	s.handle("PATCH /api/projects/{id}/schedules/{scheduleId}", o, s.schedulesOn(s.patchSchedule))
	s.handle("DELETE /api/projects/{id}/schedules/{scheduleId}", o, s.schedulesOn(s.deleteSchedule))
}

var errSchedulesOff = domain.Unavailable("Schedules unavailable", "Schedules are not available on this server")

// schedulesOn answers 503 when the server was built without the schedules service.
func (s *Server) schedulesOn(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.schedules == nil {
			writeDomainError(w, errSchedulesOff)
			return
		}
		h(w, r)
	}
}

// scheduleBody is the fields a body may set.
type scheduleBody struct {
	Name     *string            `json:"name"`
	Cron     *string            `json:"cron"`
	Timezone *string            `json:"timezone"`
	Folder   *string            `json:"folder"`
	EnvVars  *[]domain.EnvVar   `json:"envVars"`
	BaseURL  *string            `json:"baseUrl"`
	Labels   *map[string]string `json:"labels"`
	Enabled  *bool              `json:"enabled"`
}

func (b scheduleBody) input() schedules.Input {
	return schedules.Input{Name: b.Name, Cron: b.Cron, Timezone: b.Timezone, Folder: b.Folder, BaseURL: b.BaseURL,
		EnvVars: b.EnvVars, Labels: b.Labels, Enabled: b.Enabled}
}

func (s *Server) listSchedules(w http.ResponseWriter, r *http.Request) {
	list, err := s.schedules.List(r.Context(), principalFrom(r), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err, "Failed to list schedules")
		return
	}
	out := make([]Schedule, len(list))
	for i := range list {
		out[i] = scheduleView(&list[i])
	}
	ok(w, obj{"data": obj{"schedules": out}})
}

func (s *Server) createSchedule(w http.ResponseWriter, r *http.Request) {
	var body scheduleBody
	if err := decode(w, r, &body); err != nil {
		writeDomainError(w, err)
		return
	}
	v, err := s.schedules.Create(r.Context(), principalFrom(r), r.PathValue("id"), body.input())
	if err != nil {
		s.fail(w, r, err, "Failed to create schedule")
		return
	}
	created(w, obj{"data": obj{"schedule": scheduleView(v)}})
}

func (s *Server) getSchedule(w http.ResponseWriter, r *http.Request) {
	v, err := s.schedules.Get(r.Context(), principalFrom(r), r.PathValue("id"), r.PathValue("scheduleId"))
	if err != nil {
		s.fail(w, r, err, "Failed to fetch schedule")
		return
	}
	ok(w, obj{"data": obj{"schedule": scheduleView(v)}})
}

func (s *Server) patchSchedule(w http.ResponseWriter, r *http.Request) {
	var body scheduleBody
	if err := decode(w, r, &body); err != nil {
		writeDomainError(w, err)
		return
	}
	v, err := s.schedules.Update(r.Context(), principalFrom(r), r.PathValue("id"), r.PathValue("scheduleId"), body.input())
	if err != nil {
		s.fail(w, r, err, "Failed to update schedule")
		return
	}
	ok(w, obj{"data": obj{"schedule": scheduleView(v)}})
}

func (s *Server) deleteSchedule(w http.ResponseWriter, r *http.Request) {
	if err := s.schedules.Delete(r.Context(), principalFrom(r), r.PathValue("id"), r.PathValue("scheduleId")); err != nil {
		s.fail(w, r, err, "Failed to delete schedule")
		return
	}
	ok(w, obj{"message": "Schedule deleted"})
}
