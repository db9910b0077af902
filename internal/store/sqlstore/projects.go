package sqlstore

import (
	"context"
	"encoding/json"

	"verdict/internal/domain"
	"verdict/internal/store"
)

// Projects returns the project repository.
func (s *Store) Projects() store.ProjectRepo { return projectRepo{s} }

type projectRepo struct{ s *Store }

const projectColumns = `id, organization_id, name, image, target_urls, default_folder, timeout_seconds,
	report_folders, env_vars, created_at, updated_at`

func scanProject(r scanner) (*domain.Project, error) {
	var p domain.Project
	var targetURLs, reportFolders, envVars string
	var created, updated int64
	if err := r.Scan(&p.ID, &p.OrganizationID, &p.Name, &p.Image, &targetURLs, &p.DefaultFolder, &p.TimeoutSeconds,
		&reportFolders, &envVars, &created, &updated); err != nil {
		return nil, err
	}
	if err := unmarshalJSON(targetURLs, &p.TargetURLs, reportFolders, &p.ReportFolders, envVars, &p.EnvVars); err != nil {
		return nil, err
	}
	p.CreatedAt = fromMillis(created)
	p.UpdatedAt = fromMillis(updated)
	return &p, nil
}

// projectJSON encodes the project's JSON columns: target URLs, report folders, variables.
func projectJSON(p *domain.Project) (targetURLs, reportFolders, envVars string, err error) {
	j, err := marshalJSON(p.TargetURLs, p.ReportFolders, p.EnvVars)
	if err != nil {
		return "", "", "", err
	}
	return j[0], j[1], j[2], nil
}

// Create stores p; ErrConflict when its organization already has a project of that name
// (names compare exactly). Secret variable values are stored as given: the service encrypts them.
func (r projectRepo) Create(ctx context.Context, p *domain.Project) error {
	ensureID(&p.ID)
	targetURLs, reportFolders, envVars, err := projectJSON(p)
	if err != nil {
		return err
	}
	_, err = r.s.exec(ctx, `INSERT INTO projects (`+projectColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		p.ID, p.OrganizationID, p.Name, p.Image, targetURLs, p.DefaultFolder, p.TimeoutSeconds, reportFolders, envVars,
		millis(p.CreatedAt), millis(p.UpdatedAt))
	return err
}

func (r projectRepo) Get(ctx context.Context, orgID, id string) (*domain.Project, error) {
	return get(ctx, r.s, scanProject,
		`SELECT `+projectColumns+` FROM projects WHERE organization_id = ? AND id = ?`, orgID, id)
}

func (r projectRepo) List(ctx context.Context, orgID string) ([]domain.Project, error) {
	return list(ctx, r.s, scanProject,
		`SELECT `+projectColumns+` FROM projects WHERE organization_id = ? ORDER BY created_at, id`, orgID)
}

// Update replaces every field but the creation time of the project p.OrganizationID/p.ID;
// ErrNotFound when there is none, ErrConflict when the new name is taken in the organization.
func (r projectRepo) Update(ctx context.Context, p *domain.Project) error {
	targetURLs, reportFolders, envVars, err := projectJSON(p)
	if err != nil {
		return err
	}
	return r.s.execOne(ctx, `UPDATE projects SET name = ?, image = ?, target_urls = ?, default_folder = ?,
		timeout_seconds = ?, report_folders = ?, env_vars = ?, updated_at = ?
		WHERE organization_id = ? AND id = ?`,
		p.Name, p.Image, targetURLs, p.DefaultFolder, p.TimeoutSeconds, reportFolders, envVars, millis(p.UpdatedAt),
		p.OrganizationID, p.ID)
}

// Delete removes the project; its executions keep their project ID.
func (r projectRepo) Delete(ctx context.Context, orgID, id string) error {
	return r.s.execOne(ctx, `DELETE FROM projects WHERE organization_id = ? AND id = ?`, orgID, id)
}

func (r projectRepo) Count(ctx context.Context, orgID string) (int, error) {
	return r.s.count(ctx, `SELECT COUNT(*) FROM projects WHERE organization_id = ?`, orgID)
}

// marshalJSON encodes each value for a JSON text column. A nil slice or map is stored as null
// and read back as nil, an empty one as []/{}: what the caller stored is what it reads.
func marshalJSON(values ...any) ([]string, error) {
	out := make([]string, len(values))
	for i, v := range values {
		j, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		out[i] = string(j)
	}
	return out, nil
}

// unmarshalJSON decodes pairs of (column text, destination pointer).
func unmarshalJSON(pairs ...any) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		if err := json.Unmarshal([]byte(pairs[i].(string)), pairs[i+1]); err != nil {
			return err
		}
	}
	return nil
}
