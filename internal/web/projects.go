package web

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"verdict/internal/domain"
	"verdict/internal/executions"
)

// projectView is a project as its form shows it. Secret variables are listed by name only:
// their values (stored sealed) never reach the browser, and an empty field keeps them.
type projectView struct {
	ID, Name, Image, DefaultFolder string
	Timeout                        string // "" for the default
	URLs                           []envURL
	ReportFolders                  string // one a line
	Variables                      string // plain KEY=value lines
	Secrets                        []string
	Masked                         string
	// Repository is where the project's runs report commit statuses (owner/name, a GitLab path).
	Repository string
}

type envURL struct{ Env, URL string }

func viewProject(p *domain.Project) projectView {
	v := projectView{Masked: executions.Masked}
	if p != nil {
		v.ID, v.Name, v.Image, v.DefaultFolder = p.ID, p.Name, p.Image, p.DefaultFolder
		if p.TimeoutSeconds > 0 {
			v.Timeout = strconv.Itoa(p.TimeoutSeconds)
		}
		v.ReportFolders = strings.Join(p.ReportFolders, "\n")
		v.Repository = p.Repository
		var plain []string
		for _, e := range p.EnvVars {
			if e.Secret {
				v.Secrets = append(v.Secrets, e.Key)
			} else {
				plain = append(plain, e.Key+"="+e.Value)
			}
		}
		v.Variables = strings.Join(plain, "\n")
	}
	for _, env := range domain.Environments {
		u := envURL{Env: env}
		if p != nil {
			u.URL = p.TargetURLs[env]
		}
		v.URLs = append(v.URLs, u)
	}
	return v
}

type projectsData struct {
	Projects []projectRow
	New      projectView
}

type projectRow struct {
	ID, Name, Image, DefaultFolder string
	Variables, Secrets             int
}

func (s *Server) projects(w http.ResponseWriter, r *http.Request) {
	list, err := s.executions.ListProjects(r.Context(), stateOf(r).p)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	d := projectsData{New: viewProject(nil)}
	for _, p := range list {
		row := projectRow{ID: p.ID, Name: p.Name, Image: p.Image, DefaultFolder: p.DefaultFolder}
		for _, e := range p.EnvVars {
			if e.Secret {
				row.Secrets++
			} else {
				row.Variables++
			}
		}
		d.Projects = append(d.Projects, row)
	}
	s.render(w, r, http.StatusOK, "projects", "Projects", d)
}

func (s *Server) project(w http.ResponseWriter, r *http.Request) {
	p, err := s.executions.GetProject(r.Context(), stateOf(r).p, r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	d := projectPage{projectView: viewProject(p)}
	if s.gates != nil {
		if rules, err := s.gates.GateRules(r.Context(), stateOf(r).p, p.ID); err == nil {
			d.Gate = viewGateRules(rules)
		} else {
			s.log.Warn("reading a project's gate rules for its page", "project", p.ID, "err", err)
		}
	}
	s.render(w, r, http.StatusOK, "project", "Project "+p.Name, d)
}

// projectPage is a project's page: its form, and its gate rules (nil: not available).
type projectPage struct {
	projectView
	Gate *gateForm
}

// projectInput reads the project form. Secrets: secretKey/secretValue pairs for the stored
// ones (an empty value keeps the stored one, secretRemove drops it) and newSecrets as KEY=value
// lines; the service seals them and validates everything.
func projectInput(r *http.Request) (executions.ProjectInput, error) {
	var in executions.ProjectInput
	name, image, folder := r.PostFormValue("name"), strings.TrimSpace(r.PostFormValue("image")), strings.TrimSpace(r.PostFormValue("defaultFolder"))
	in.Name, in.Image, in.DefaultFolder = &name, &image, &folder
	timeout := 0
	if t := strings.TrimSpace(r.PostFormValue("timeoutSeconds")); t != "" {
		n, err := strconv.Atoi(t)
		if err != nil {
			return in, domain.BadRequest("Validation error", "timeoutSeconds must be a whole number of seconds")
		}
		timeout = n
	}
	in.TimeoutSeconds = &timeout
	repo := strings.TrimSpace(r.PostFormValue("repository"))
	in.Repository = &repo
	urls := map[string]string{}
	for _, env := range domain.Environments {
		urls[env] = strings.TrimSpace(r.PostFormValue("url_" + env))
	}
	in.WithTargetURLs(urls)
	var folders []string
	for _, f := range strings.Split(r.PostFormValue("reportFolders"), "\n") {
		if f = strings.TrimSpace(f); f != "" {
			folders = append(folders, f)
		}
	}
	in.WithReportFolders(folders)
	var vars []domain.EnvVar
	plain, err := orderedVariables(r.PostFormValue("variables"))
	if err != nil {
		return in, err
	}
	vars = append(vars, plain...)
	_ = r.ParseForm()
	keys, values, removed := r.PostForm["secretKey"], r.PostForm["secretValue"], r.PostForm["secretRemove"]
	for i, k := range keys {
		if slices.Contains(removed, k) {
			continue
		}
		v := executions.Masked // keep the stored value
		if i < len(values) && values[i] != "" {
			v = values[i]
		}
		vars = append(vars, domain.EnvVar{Key: k, Value: v, Secret: true})
	}
	secrets, err := orderedVariables(r.PostFormValue("newSecrets"))
	if err != nil {
		return in, err
	}
	for _, v := range secrets {
		v.Secret = true
		vars = append(vars, v)
	}
	in.WithEnvVars(vars)
	return in, nil
}

// orderedVariables reads KEY=value lines in their order.
func orderedVariables(text string) ([]domain.EnvVar, error) {
	m, err := parseVariables(text)
	if err != nil {
		return nil, err
	}
	var out []domain.EnvVar
	for _, line := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		if k, _, ok := strings.Cut(line, "="); ok {
			if k = strings.TrimSpace(k); k != "" {
				if v, ok := m[k]; ok {
					out = append(out, domain.EnvVar{Key: k, Value: v})
					delete(m, k)
				}
			}
		}
	}
	return out, nil
}

func projectPath(id string) string { return "/projects/" + url.PathEscape(id) }

func (s *Server) createProject(w http.ResponseWriter, r *http.Request) {
	in, err := projectInput(r)
	if err == nil {
		var p *domain.Project
		if p, err = s.executions.CreateProject(r.Context(), stateOf(r).p, in); err == nil {
			s.done(w, r, projectPath(p.ID), "Project "+p.Name+" created.")
			return
		}
	}
	s.refused(w, r, "/projects", err)
}

func (s *Server) updateProject(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	in, err := projectInput(r)
	if err == nil {
		if _, err = s.executions.UpdateProject(r.Context(), stateOf(r).p, id, in); err == nil {
			s.done(w, r, projectPath(id), "Project saved.")
			return
		}
	}
	s.refused(w, r, projectPath(id), err)
}
