package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"verdict/internal/domain"
	"verdict/internal/store"
)

// SourceControl returns the source-control repository: hooks, their deliveries, PR comments.
func (s *Store) SourceControl() store.SourceControlRepo { return scmRepo{s} }

type scmRepo struct{ s *Store }

const hookColumns = `id, organization_id, project_id, provider, secret_cipher, branches, events, base_url_template, created_at`

func scanHook(r scanner) (*domain.Hook, error) {
	var h domain.Hook
	var branches, events string
	var created int64
	if err := r.Scan(&h.ID, &h.OrganizationID, &h.ProjectID, &h.Provider, &h.SecretCipher, &branches, &events,
		&h.BaseURLTemplate, &created); err != nil {
		return nil, err
	}
	if err := unmarshalJSON(branches, &h.Branches, events, &h.Events); err != nil {
		return nil, err
	}
	h.CreatedAt = fromMillis(created)
	return &h, nil
}

// CreateHook stores h for its project, only if the project is the organization's (ErrNotFound
// otherwise): one statement, so a project deleted meanwhile leaves no hook behind.
func (r scmRepo) CreateHook(ctx context.Context, h *domain.Hook) error {
	ensureID(&h.ID)
	j, err := marshalJSON(nonNilStrings(h.Branches), nonNilStrings(h.Events))
	if err != nil {
		return err
	}
	return r.s.execOne(ctx, `INSERT INTO scm_hooks (`+hookColumns+`)
		SELECT ?, organization_id, id, ?, ?, ?, ?, ?, CAST(? AS BIGINT) FROM projects WHERE id = ? AND organization_id = ?`,
		h.ID, h.Provider, h.SecretCipher, j[0], j[1], h.BaseURLTemplate, millis(h.CreatedAt), h.ProjectID, h.OrganizationID)
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func (r scmRepo) GetHook(ctx context.Context, orgID, projectID, id string) (*domain.Hook, error) {
	return get(ctx, r.s, scanHook, `SELECT `+hookColumns+` FROM scm_hooks
		WHERE id = ? AND organization_id = ? AND project_id = ?`, id, orgID, projectID)
}

func (r scmRepo) FindHook(ctx context.Context, id string) (*domain.Hook, error) {
	return get(ctx, r.s, scanHook, `SELECT `+hookColumns+` FROM scm_hooks WHERE id = ?`, id)
}

func (r scmRepo) ListHooks(ctx context.Context, orgID, projectID string) ([]domain.Hook, error) {
	return list(ctx, r.s, scanHook, `SELECT `+hookColumns+` FROM scm_hooks
		WHERE organization_id = ? AND project_id = ? ORDER BY created_at, id`, orgID, projectID)
}

func (r scmRepo) DeleteHook(ctx context.Context, orgID, projectID, id string) error {
	return r.s.execOne(ctx, `DELETE FROM scm_hooks WHERE id = ? AND organization_id = ? AND project_id = ?`,
		id, orgID, projectID)
}

// RecordDelivery inserts nothing on a conflict rather than failing, so a duplicate leaves a
// PostgreSQL transaction usable.
func (r scmRepo) RecordDelivery(ctx context.Context, hookID, deliveryID string, at time.Time) error {
	res, err := r.s.exec(ctx, `INSERT INTO scm_hook_deliveries (hook_id, delivery_id, received_at) VALUES (?, ?, ?)
		ON CONFLICT (hook_id, delivery_id) DO NOTHING`, hookID, deliveryID, millis(at))
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		if err == nil {
			err = store.ErrConflict
		}
		return err
	}
	return nil
}

func (r scmRepo) ForgetDelivery(ctx context.Context, hookID, deliveryID string) error {
	_, err := r.s.exec(ctx, `DELETE FROM scm_hook_deliveries WHERE hook_id = ? AND delivery_id = ?`, hookID, deliveryID)
	return err
}

func (r scmRepo) PruneDeliveries(ctx context.Context, before time.Time) (int, error) {
	res, err := r.s.exec(ctx, `DELETE FROM scm_hook_deliveries WHERE received_at < ?`, millis(before))
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

func (r scmRepo) Comment(ctx context.Context, orgID, projectID, provider, repository string, request int64) (string, error) {
	var id string
	q := `SELECT comment_id FROM scm_comments WHERE organization_id = ? AND project_id = ? AND provider = ?
		AND repository = ? AND request = ?`
	err := r.s.on(q).QueryRowContext(ctx, r.s.d.rebind(q), orgID, projectID, provider, repository, request).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", store.ErrNotFound
	}
	return id, r.s.mapErr(err)
}

func (r scmRepo) PutComment(ctx context.Context, orgID, projectID, provider, repository string, request int64, commentID string, at time.Time) error {
	_, err := r.s.exec(ctx, `INSERT INTO scm_comments (organization_id, project_id, provider, repository, request, comment_id, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (organization_id, project_id, provider, repository, request) DO UPDATE SET
			comment_id = excluded.comment_id, updated_at = excluded.updated_at`,
		orgID, projectID, provider, repository, request, commentID, millis(at))
	return err
}
