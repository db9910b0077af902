package api

import (
	"maps"
	"net/http"
	"slices"

	"verdict/internal/domain"
	"verdict/internal/executions"
)

// projectView shows a project; secret values are masked.
func projectView(p *domain.Project) Project {
	vars := make([]domain.EnvVar, len(p.EnvVars))
	for i, v := range p.EnvVars {
		if v.Secret {
			v.Value = executions.Masked
		}
		vars[i] = v
	}
	urls := p.TargetURLs
	if urls == nil {
		urls = map[string]string{}
	}
	return Project{ID: p.ID, Name: p.Name, Image: p.Image, TargetURLs: urls, DefaultFolder: p.DefaultFolder,
		TimeoutSeconds: p.TimeoutSeconds, ReportFolders: nonNil(p.ReportFolders), EnvVars: vars,
		Repository: p.Repository, CreatedAt: ts(p.CreatedAt), UpdatedAt: ts(p.UpdatedAt), Shards: max(p.Shards, 1),
		Retries: p.Retries}
}

// decodeProject reads a project body; collections that are present (even empty) are applied.
func decodeProject(w http.ResponseWriter, r *http.Request) (executions.ProjectInput, *domain.Error) {
	var in struct {
		Name           *string            `json:"name"`
		Image          *string            `json:"image"`
		TargetURLs     *map[string]string `json:"targetUrls"`
		DefaultFolder  *string            `json:"defaultFolder"`
		TimeoutSeconds *int               `json:"timeoutSeconds"`
		ReportFolders  *[]string          `json:"reportFolders"`
		EnvVars        *[]domain.EnvVar   `json:"envVars"`
		Repository     *string            `json:"repository"`
		Shards         *int               `json:"shards"`
		Retries        *int               `json:"retries"`
	}
	var out executions.ProjectInput
	if err := decode(w, r, &in); err != nil {
		return out, err
	}
	out.Name, out.Image, out.DefaultFolder, out.TimeoutSeconds = in.Name, in.Image, in.DefaultFolder, in.TimeoutSeconds
	out.Repository, out.Shards, out.Retries = in.Repository, in.Shards, in.Retries
	if in.TargetURLs != nil {
		// Its keys are fixed, like a struct's fields: any other one is an unknown field.
		for _, env := range slices.Sorted(maps.Keys(*in.TargetURLs)) {
			if !slices.Contains(domain.Environments, env) {
				return out, errUnknownField("targetUrls." + env)
			}
		}
		out.WithTargetURLs(*in.TargetURLs)
	}
	if in.ReportFolders != nil {
		out.WithReportFolders(*in.ReportFolders)
	}
	if in.EnvVars != nil {
		out.WithEnvVars(*in.EnvVars)
	}
	return out, nil
}

func (s *Server) createProject(w http.ResponseWriter, r *http.Request) {
	in, derr := decodeProject(w, r)
	if derr != nil {
		writeDomainError(w, derr)
		return
	}
	p, err := s.executions.CreateProject(r.Context(), principalFrom(r), in)
	if err != nil {
		s.fail(w, r, err, "Failed to create project")
		return
	}
	created(w, obj{"project": projectView(p)})
}

func (s *Server) listProjects(w http.ResponseWriter, r *http.Request) {
	list, err := s.executions.ListProjects(r.Context(), principalFrom(r))
	if err != nil {
		s.fail(w, r, err, "Failed to list projects")
		return
	}
	out := make([]Project, len(list))
	for i := range list {
		out[i] = projectView(&list[i])
	}
	ok(w, obj{"projects": out})
}

func (s *Server) getProject(w http.ResponseWriter, r *http.Request) {
	p, err := s.executions.GetProject(r.Context(), principalFrom(r), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err, "Failed to fetch project")
		return
	}
	ok(w, obj{"project": projectView(p)})
}

func (s *Server) patchProject(w http.ResponseWriter, r *http.Request) {
	in, derr := decodeProject(w, r)
	if derr != nil {
		writeDomainError(w, derr)
		return
	}
	p, err := s.executions.UpdateProject(r.Context(), principalFrom(r), r.PathValue("id"), in)
	if err != nil {
		s.fail(w, r, err, "Failed to update project")
		return
	}
	ok(w, obj{"project": projectView(p)})
}

func (s *Server) deleteProject(w http.ResponseWriter, r *http.Request) {
	if err := s.executions.DeleteProject(r.Context(), principalFrom(r), r.PathValue("id")); err != nil {
		s.fail(w, r, err, "Failed to delete project")
		return
	}
	ok(w, obj{"message": "Project deleted"})
}
