package executions

import (
	"context"
	"errors"
	"slices"
	"strings"

	"verdict/internal/billing"
	"verdict/internal/crypto/secretbox"
	"verdict/internal/domain"
	"verdict/internal/identity"
	"verdict/internal/store"
)

// ProjectInput is a project's settings as sent; nil fields are left as they are on update.
type ProjectInput struct {
	Name           *string
	Image          *string
	TargetURLs     map[string]string
	DefaultFolder  *string
	TimeoutSeconds *int
	ReportFolders  []string
	EnvVars        []domain.EnvVar
	// Repository is where the project's code lives ("owner/name", a GitLab path); "" clears it.
	Repository *string
	// Shards and Retries are the defaults of the project's runs (shards at least 1, retries
	// 0..domain.MaxRetries); the plan's cap applies when a run is queued.
	Shards, Retries *int
	setURLs         bool
	setFolders      bool
	setEnv          bool
}

// WithTargetURLs, WithReportFolders and WithEnvVars mark the collections as sent (an empty
// list then clears them).
func (in *ProjectInput) WithTargetURLs(m map[string]string) { in.TargetURLs, in.setURLs = m, true }
func (in *ProjectInput) WithReportFolders(f []string)       { in.ReportFolders, in.setFolders = f, true }
func (in *ProjectInput) WithEnvVars(v []domain.EnvVar)      { in.EnvVars, in.setEnv = v, true }

// CreateProject creates a project within the plan's maxProjects.
func (s *Service) CreateProject(ctx context.Context, p *identity.Principal, in ProjectInput) (*domain.Project, error) {
	if !p.CanWrite() {
		return nil, errReadOnly
	}
	if in.Name == nil || strings.TrimSpace(*in.Name) == "" {
		return nil, domain.BadRequest("Missing required fields", "name is required")
	}
	now := s.clock()
	proj := &domain.Project{ID: s.newID(), OrganizationID: p.OrgID, TargetURLs: map[string]string{}, CreatedAt: now, UpdatedAt: now}
	if err := s.applyProjectInput(proj, in, nil); err != nil {
		return nil, err
	}
	err := s.store.InTx(ctx, func(tx store.Store) error {
		if err := tx.Organizations().Lock(ctx, p.OrgID); err != nil {
			return err
		}
		org, err := tx.Organizations().Get(ctx, p.OrgID)
		if err != nil {
			return err
		}
		n, err := tx.Projects().Count(ctx, p.OrgID)
		if err != nil {
			return err
		}
		if !domain.Allows(int64(org.Limits().MaxProjects), int64(n)) {
			return domain.Forbidden("Project limit reached", "The plan's project limit is reached")
		}
		if err := tx.Projects().Create(ctx, proj); err != nil {
			return conflict(err)
		}
		return s.alerts.Check(ctx, tx, org, billing.Usage{Resource: billing.ResourceProjects,
			Used: int64(n + 1), Before: int64(n), Limit: int64(org.Limits().MaxProjects)})
	})
	if err != nil {
		return nil, err
	}
	return proj, nil
}

func conflict(err error) error {
	if errors.Is(err, store.ErrConflict) {
		return domain.Conflict("Project name already in use", "Another project of your organization has this name")
	}
	return err
}

// UpdateProject changes a project's settings.
func (s *Service) UpdateProject(ctx context.Context, p *identity.Principal, id string, in ProjectInput) (*domain.Project, error) {
	if !p.CanWrite() {
		return nil, errReadOnly
	}
	proj, err := s.store.Projects().Get(ctx, p.OrgID, id)
	if err != nil {
		return nil, notFound(err, errProject404)
	}
	old := append([]domain.EnvVar(nil), proj.EnvVars...)
	if err := s.applyProjectInput(proj, in, old); err != nil {
		return nil, err
	}
	proj.UpdatedAt = s.clock()
	if err := conflict(s.store.Projects().Update(ctx, proj)); err != nil {
		return nil, notFound(err, errProject404)
	}
	return proj, nil
}

// GetProject returns a project of the caller's organization.
func (s *Service) GetProject(ctx context.Context, p *identity.Principal, id string) (*domain.Project, error) {
	proj, err := s.store.Projects().Get(ctx, p.OrgID, id)
	return proj, notFound(err, errProject404)
}

// ListProjects lists the organization's projects.
func (s *Service) ListProjects(ctx context.Context, p *identity.Principal) ([]domain.Project, error) {
	return s.store.Projects().List(ctx, p.OrgID)
}

// DeleteProject deletes a project; its runs stay.
func (s *Service) DeleteProject(ctx context.Context, p *identity.Principal, id string) error {
	if !p.CanWrite() {
		return errReadOnly
	}
	return notFound(s.store.Projects().Delete(ctx, p.OrgID, id), errProject404)
}

// applyProjectInput validates in and applies it to proj, sealing new secrets. A secret sent
// back as the mask keeps its stored value, so a client can round-trip a project it read.
func (s *Service) applyProjectInput(proj *domain.Project, in ProjectInput, old []domain.EnvVar) error {
	if in.Name != nil {
		n := strings.TrimSpace(*in.Name)
		if !domain.ValidName(n) {
			return domain.BadRequest("Validation error", "name must have 1 to 100 visible characters, without control, invisible or text-direction characters")
		}
		proj.Name = n
	}
	if in.Image != nil {
		if len(*in.Image) > maxFieldLen {
			return domain.BadRequest("Validation error", "image is too long")
		}
		proj.Image = strings.TrimSpace(*in.Image)
		if proj.Image != "" && !domain.ValidImage(proj.Image) {
			return domain.BadRequest("Validation error", "image "+quote(proj.Image)+" is not a valid image reference (e.g. registry.example.com/team/suite:1.2)")
		}
	}
	if in.DefaultFolder != nil {
		if err := validateFolder(*in.DefaultFolder); err != nil {
			return err
		}
		proj.DefaultFolder = *in.DefaultFolder
	}
	if in.TimeoutSeconds != nil {
		if *in.TimeoutSeconds < 0 || *in.TimeoutSeconds > maxTimeoutSeconds {
			return domain.BadRequest("Validation error", "timeoutSeconds must be between 1 and 86400")
		}
		proj.TimeoutSeconds = *in.TimeoutSeconds
	}
	if in.Shards != nil {
		if err := checkShards(*in.Shards, 0); err != nil {
			return err
		}
		proj.Shards = *in.Shards
	}
	if in.Retries != nil {
		if err := checkRetries(*in.Retries); err != nil {
			return err
		}
		proj.Retries = *in.Retries
	}
	if in.Repository != nil {
		r := strings.TrimSpace(*in.Repository)
		if r != "" && !domain.ValidRepository(r) {
			return domain.BadRequest("Validation error",
				"repository must be owner/name (GitHub) or a GitLab project path such as group/sub/name: segments of A-Z, a-z, 0-9, '.', '_' and '-', at most 255 characters")
		}
		proj.Repository = r
	}
	if in.setURLs {
		urls, err := targetURLs(in.TargetURLs)
		if err != nil {
			return err
		}
		proj.TargetURLs = urls
	}
	if in.setFolders {
		folders, err := reportFolders(in.ReportFolders)
		if err != nil {
			return err
		}
		proj.ReportFolders = folders
	}
	if in.setEnv {
		vars, err := s.envVars(in.EnvVars, old)
		if err != nil {
			return err
		}
		proj.EnvVars = vars
	}
	return nil
}

// targetURLs checks a project's target URLs by environment; an empty one is left out.
func targetURLs(in map[string]string) (map[string]string, error) {
	urls := map[string]string{}
	for env, u := range in {
		if !validEnvironment(env) {
			return nil, domain.BadRequest("Validation error", "targetUrls keys must be development, staging or production")
		}
		if u != "" && !validURL(u) {
			return nil, domain.BadRequest("Validation error", "targetUrls."+env+" must be an http(s) URL")
		}
		if u != "" {
			urls[env] = u
		}
	}
	return urls, nil
}

// reportFolders checks and cleans a project's report folders.
func reportFolders(in []string) ([]string, error) {
	if len(in) > 20 {
		return nil, domain.BadRequest("Validation error", "at most 20 report folders")
	}
	var folders []string
	for _, f := range in {
		clean, err := validateReportFolder(f)
		if err != nil {
			return nil, err
		}
		folders = append(folders, clean)
	}
	return folders, nil
}

// envVars checks a project's variables and seals new secrets (SealSecrets).
func (s *Service) envVars(in []domain.EnvVar, old []domain.EnvVar) ([]domain.EnvVar, error) {
	if len(in) > maxEnvVars {
		return nil, domain.BadRequest("Validation error", "at most 100 envVars")
	}
	seen := map[string]bool{}
	var vars []domain.EnvVar
	for _, v := range in {
		if err := validateEnv(v.Key, v.Value); err != nil {
			return nil, err
		}
		if seen[v.Key] {
			return nil, domain.BadRequest("Validation error", "environment variable "+v.Key+" is given twice")
		}
		seen[v.Key] = true
		vars = append(vars, v)
	}
	return SealSecrets(s.box, vars, old)
}

// SealSecrets seals the secret values of vars, a project's or a schedule's new variables; a
// secret sent as Masked keeps its stored value from old, the variables it replaces.
func SealSecrets(box *secretbox.Box, vars, old []domain.EnvVar) ([]domain.EnvVar, error) {
	out := slices.Clone(vars) // nil stays nil, as the variables were stored before
	for i := range out {
		v := &out[i]
		if !v.Secret {
			continue
		}
		if v.Value != Masked {
			sealed, err := box.Seal([]byte(v.Value))
			if err != nil {
				return nil, err
			}
			v.Value = sealed
			continue
		}
		kept := false
		for _, o := range old {
			if o.Key == v.Key && o.Secret {
				v.Value, kept = o.Value, true
			}
		}
		if !kept {
			return nil, domain.BadRequest("Validation error", "secret "+v.Key+" has no stored value to keep; send its value")
		}
	}
	return out, nil
}

// Masked is how a secret's value is shown.
const Masked = "********"
