package sqlstore

import (
	"context"
	"database/sql"
	"time"

	"verdict/internal/domain"
)

type apiKeyRepo struct{ s *Store }

const apiKeyColumns = `id, organization_id, user_id, name, prefix, hash, created_at, last_used_at`

func scanAPIKey(r scanner) (*domain.APIKey, error) {
	var k domain.APIKey
	var created int64
	var lastUsed sql.NullInt64
	if err := r.Scan(&k.ID, &k.OrganizationID, &k.UserID, &k.Name, &k.Prefix, &k.Hash, &created, &lastUsed); err != nil {
		return nil, err
	}
	k.CreatedAt = fromMillis(created)
	k.LastUsedAt = timePtr(lastUsed)
	return &k, nil
}

// Create stores k; its owner must be a user of k.OrganizationID (a foreign key holds it).
func (r apiKeyRepo) Create(ctx context.Context, k *domain.APIKey) error {
	ensureID(&k.ID)
	_, err := r.s.exec(ctx, `INSERT INTO api_keys (`+apiKeyColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		k.ID, k.OrganizationID, k.UserID, k.Name, k.Prefix, k.Hash, millis(k.CreatedAt), nullMillis(k.LastUsedAt))
	return err
}

func (r apiKeyRepo) GetByHash(ctx context.Context, hash string) (*domain.APIKey, error) {
	return get(ctx, r.s, scanAPIKey, `SELECT `+apiKeyColumns+` FROM api_keys WHERE hash = ?`, hash)
}

func (r apiKeyRepo) ListByUser(ctx context.Context, orgID, userID string) ([]domain.APIKey, error) {
	return list(ctx, r.s, scanAPIKey, `SELECT `+apiKeyColumns+` FROM api_keys
		WHERE organization_id = ? AND user_id = ? ORDER BY created_at, id`, orgID, userID)
}

func (r apiKeyRepo) List(ctx context.Context, orgID string) ([]domain.APIKey, error) {
	return list(ctx, r.s, scanAPIKey, `SELECT `+apiKeyColumns+` FROM api_keys
		WHERE organization_id = ? ORDER BY created_at, id`, orgID)
}

func (r apiKeyRepo) Delete(ctx context.Context, orgID, id string) error {
	return r.s.execOne(ctx, `DELETE FROM api_keys WHERE organization_id = ? AND id = ?`, orgID, id)
}

func (r apiKeyRepo) TouchLastUsed(ctx context.Context, orgID, id string, at time.Time) error {
	return r.s.execOne(ctx, `UPDATE api_keys SET last_used_at = ? WHERE organization_id = ? AND id = ?`,
		millis(at), orgID, id)
}
