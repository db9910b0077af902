package web

import (
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"verdict/internal/domain"
	"verdict/internal/schedules"
)

// A project's schedules on the dashboard (/projects/{id}/schedules): the list with each one's
// next fire times, last fire and last refusal, and for admins and developers the form that adds
// one and the buttons that pause, resume and delete one, each calling the schedules service as
// its API twin does (and taking from the same bucket).

// schedulesPage is the page's data.
type schedulesPage struct {
	ProjectID, ProjectName string
	Schedules              []scheduleRow
}

// scheduleRow is a schedule as its row shows it; times are UTC, as the API gives them.
type scheduleRow struct {
	ID, Name, Cron, Timezone, Folder, BaseURL, Labels string
	Enabled                                           bool
	NextRuns                                          []string
	LastFireAt, LastTaskID, LastError, LastRefusedAt  string
	MissedFires                                       int
	Variables                                         []string // KEY=value, secrets masked
}

func stamp(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04 UTC")
}

func viewSchedule(v *schedules.View) scheduleRow {
	row := scheduleRow{ID: v.ID, Name: v.Name, Cron: v.Cron, Timezone: v.Timezone, Folder: v.Folder, BaseURL: v.BaseURL,
		Enabled: v.Enabled, LastFireAt: stamp(v.LastFireAt), LastTaskID: v.LastTaskID, LastError: v.LastError,
		LastRefusedAt: stamp(v.LastRefusedAt), MissedFires: v.MissedFires}
	for _, t := range v.NextRuns {
		row.NextRuns = append(row.NextRuns, stamp(&t))
	}
	var labels []string
	for _, k := range slices.Sorted(maps.Keys(v.Labels)) {
		labels = append(labels, k+":"+v.Labels[k])
	}
	row.Labels = strings.Join(labels, ", ")
	for _, e := range v.EnvVars {
		row.Variables = append(row.Variables, e.Key+"="+e.Value)
	}
	return row
}

func schedulesPath(projectID string) string { return projectPath(projectID) + "/schedules" }

// schedulesOn answers the 404 page when the server has no schedules service.
func (s *Server) schedulesOn(w http.ResponseWriter, r *http.Request) bool {
	if s.schedules == nil {
		s.errorPage(w, r, http.StatusNotFound, "Page not found", "There is no page at this address.")
		return false
	}
	return true
}

func (s *Server) schedulesPage(w http.ResponseWriter, r *http.Request) {
	if !s.schedulesOn(w, r) {
		return
	}
	p := stateOf(r).p
	proj, err := s.executions.GetProject(r.Context(), p, r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	list, err := s.schedules.List(r.Context(), p, proj.ID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	d := schedulesPage{ProjectID: proj.ID, ProjectName: proj.Name}
	for i := range list {
		d.Schedules = append(d.Schedules, viewSchedule(&list[i]))
	}
	s.render(w, r, http.StatusOK, "schedules", "Schedules of "+proj.Name, d)
}

// scheduleInput reads the form that adds a schedule: labels key:value and variables KEY=value,
// one a line; secret variables in a field of their own.
func scheduleInput(r *http.Request) (schedules.Input, error) {
	name, cron, zone := r.PostFormValue("name"), r.PostFormValue("cron"), strings.TrimSpace(r.PostFormValue("timezone"))
	folder, base := strings.TrimSpace(r.PostFormValue("folder")), strings.TrimSpace(r.PostFormValue("baseUrl"))
	in := schedules.Input{Name: &name, Cron: &cron, Timezone: &zone, Folder: &folder, BaseURL: &base}
	labels := map[string]string{}
	for _, line := range strings.Split(r.PostFormValue("labels"), "\n") {
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			return in, domain.BadRequest("Validation error", "labels: write one key:value a line")
		}
		labels[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	in.Labels = &labels
	vars, err := orderedVariables(r.PostFormValue("variables"))
	if err != nil {
		return in, err
	}
	secrets, err := orderedVariables(r.PostFormValue("secrets"))
	if err != nil {
		return in, err
	}
	for _, v := range secrets {
		v.Secret = true
		vars = append(vars, v)
	}
	in.EnvVars = &vars
	return in, nil
}

func (s *Server) createSchedule(w http.ResponseWriter, r *http.Request) {
	if !s.schedulesOn(w, r) {
		return
	}
	id := r.PathValue("id")
	in, err := scheduleInput(r)
	if err == nil {
		var v *schedules.View
		if v, err = s.schedules.Create(r.Context(), stateOf(r).p, id, in); err == nil {
			s.done(w, r, schedulesPath(id), "Schedule "+v.Name+" created.")
			return
		}
	}
	s.refused(w, r, schedulesPath(id), err)
}

// setSchedule pauses (on false) or resumes (on true) a schedule.
func (s *Server) setSchedule(on bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.schedulesOn(w, r) {
			return
		}
		id := r.PathValue("id")
		v, err := s.schedules.Update(r.Context(), stateOf(r).p, id, r.PathValue("scheduleId"), schedules.Input{Enabled: &on})
		if err != nil {
			s.refused(w, r, schedulesPath(id), err)
			return
		}
		what := "paused"
		if on {
			what = "resumed"
		}
		s.done(w, r, schedulesPath(id), "Schedule "+v.Name+" "+what+".")
	}
}

func (s *Server) deleteSchedule(w http.ResponseWriter, r *http.Request) {
	if !s.schedulesOn(w, r) {
		return
	}
	id := r.PathValue("id")
	if err := s.schedules.Delete(r.Context(), stateOf(r).p, id, r.PathValue("scheduleId")); err != nil {
		s.refused(w, r, schedulesPath(id), err)
		return
	}
	s.done(w, r, schedulesPath(id), "Schedule deleted.")
}
