package web

import (
	"cmp"
	"encoding/base64"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"verdict/internal/domain"
	"verdict/internal/executions"
)

// flash is the outcome of an action, shown once on the page the action redirects to. It travels
// in a short-lived cookie rather than the URL, so a link cannot make a page say anything.
type flash struct {
	Error bool
	Text  string
}

const flashCookie = "verdict_flash"

func (s *Server) setFlash(w http.ResponseWriter, f flash) {
	kind := "ok"
	if f.Error {
		kind = "error"
	}
	http.SetCookie(w, &http.Cookie{Name: flashCookie, Value: base64.RawURLEncoding.EncodeToString([]byte(kind + ":" + f.Text)),
		Path: "/", MaxAge: 60, HttpOnly: true, Secure: s.secure, SameSite: http.SameSiteLaxMode})
}

// takeFlash reads the flash cookie of r, if any, and clears it.
func takeFlash(w http.ResponseWriter, r *http.Request, secure bool) *flash {
	c, err := r.Cookie(flashCookie)
	if err != nil {
		return nil
	}
	http.SetCookie(w, &http.Cookie{Name: flashCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, Secure: secure,
		SameSite: http.SameSiteLaxMode})
	raw, err := base64.RawURLEncoding.DecodeString(c.Value)
	kind, text, ok := strings.Cut(string(raw), ":")
	if err != nil || !ok || text == "" {
		return nil
	}
	return &flash{Error: kind == "error", Text: strings.ToValidUTF8(text, "\uFFFD")}
}

// done redirects to path after an action, with its outcome.
func (s *Server) done(w http.ResponseWriter, r *http.Request, path, text string) {
	s.setFlash(w, flash{Text: text})
	redirect(w, r, path)
}

// refused explains a service's refusal of an action: a 403 or 404 (a viewer's forged form, a
// run of another organization) is an error page with that status; any other refusal (a
// validation error, a run already finished) goes back to path with the service's words.
func (s *Server) refused(w http.ResponseWriter, r *http.Request, path string, err error) {
	var de *domain.Error
	if !errors.As(err, &de) || de.Kind == domain.KindForbidden || de.Kind == domain.KindNotFound {
		s.fail(w, r, err)
		return
	}
	s.setFlash(w, flash{Error: true, Text: de.Code + ": " + de.Message})
	redirect(w, r, path)
}

func runPath(taskID string) string { return "/runs/" + url.PathEscape(taskID) }

// parseVariables reads KEY=value lines; blank lines are skipped. The service validates the
// names and values.
func parseVariables(text string) (map[string]string, error) {
	vars := map[string]string{}
	for i, line := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, domain.BadRequest("Validation error", "variables: line "+strconv.Itoa(i+1)+" is not KEY=value")
		}
		if _, dup := vars[k]; dup {
			return nil, domain.BadRequest("Validation error", "variables: "+k+" is given twice")
		}
		vars[k] = v
	}
	return vars, nil
}

// queueRun queues a run from the form on /runs.
func (s *Server) queueRun(w http.ResponseWriter, r *http.Request) {
	vars, err := parseVariables(r.PostFormValue("variables"))
	if err != nil {
		s.refused(w, r, "/runs", err)
		return
	}
	in := executions.QueueInput{ProjectID: r.PostFormValue("project"), Environment: r.PostFormValue("environment"),
		Folder: strings.TrimSpace(r.PostFormValue("folder")), Image: strings.TrimSpace(r.PostFormValue("image"))}
	if len(vars) > 0 {
		in.EnvVars = vars
	}
	e, err := s.executions.Queue(r.Context(), stateOf(r).p, in)
	if err != nil {
		s.refused(w, r, "/runs", err)
		return
	}
	s.done(w, r, runPath(e.TaskID), "Run "+e.TaskID+" queued.")
}

func (s *Server) cancelRun(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("taskId")
	if _, err := s.executions.Cancel(r.Context(), stateOf(r).p, id); err != nil {
		s.refused(w, r, runPath(id), err)
		return
	}
	s.done(w, r, runPath(id), "Cancellation requested.")
}

// rerun queues the run's image, command, environment, folder and project again. Its own
// variables are not carried over (they are stored sealed for its container only); the
// project's apply again.
func (s *Server) rerun(w http.ResponseWriter, r *http.Request) {
	st, id := stateOf(r), r.PathValue("taskId")
	old, err := s.executions.Get(r.Context(), st.p, id)
	if err != nil {
		s.refused(w, r, runPath(id), err)
		return
	}
	e, err := s.executions.Queue(r.Context(), st.p, executions.QueueInput{Image: old.Image, Command: old.Command,
		Environment: old.Environment, Folder: old.Folder, ProjectID: old.ProjectID, Labels: old.Labels})
	if err != nil {
		s.refused(w, r, runPath(id), err)
		return
	}
	s.done(w, r, runPath(e.TaskID), "Run "+e.TaskID+" queued again from "+id+".")
}

func (s *Server) deleteRun(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("taskId")
	if err := s.executions.Delete(r.Context(), stateOf(r).p, id); err != nil {
		s.refused(w, r, runPath(id), err)
		return
	}
	s.done(w, r, "/runs", "Run "+id+" deleted.")
}

// folders answers the queue form's folder suggestions for the chosen project or image: the
// folders under the image's /app/tests as <option>s of the form's <datalist>, and what was
// found (or why nothing was) in the form's status line, swapped out of band. It takes from the
// bucket of GET /api/tests-structure, as it may make the engine pull the image; a refusal is a
// 429 with the same parts, which the page's htmx is configured to swap in.
func (s *Server) folders(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	status := http.StatusOK
	var ts *executions.TestsStructure
	err := s.limited(w, r, "api")
	if err != nil {
		status = http.StatusTooManyRequests
	} else {
		ts, err = s.executions.TestsStructure(r.Context(), stateOf(r).p, strings.TrimSpace(q.Get("image")), q.Get("project"))
	}
	note := ""
	switch {
	case err != nil:
		var de *domain.Error
		if !errors.As(err, &de) {
			s.log.Error("listing an image's test folders", "err", err)
			note = "The folders could not be listed."
		} else {
			note = de.Code + ": " + de.Message
		}
	case len(ts.Folders) == 0:
		note = cmp.Or(ts.Note, "No test folders found") + "; runs use the whole suite."
	default:
		note = strconv.Itoa(len(ts.Folders)) + " folders in " + ts.Image + ": pick one in the Folder field."
	}
	var folders []string
	if ts != nil {
		folders = ts.Folders
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if err := folderOptions.Execute(w, struct {
		Folders []string
		Note    string
	}{folders, note}); err != nil {
		s.log.Error("rendering folder options", "err", err)
	}
}

var folderOptions = template.Must(template.New("folders").Parse(
	`{{range .Folders}}<option value="{{.}}"></option>{{end}}<span id="q-folder-note" role="status" hx-swap-oob="true">{{.Note}}</span>`))
