package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"

	"verdict/internal/domain"
)

type orgRepo struct{ s *Store }

const orgColumns = `id, name, slug, plan, ai_analysis_enabled, features, provider_customer_id, billing,
	storage_used_bytes, created_at, allowed_images, ai_default_model, ai_keys, retention_logs_days, retention_runs_days`

// orgSelect is what reads of an organization select: its columns and its scheduled erasure,
// which only ScheduleErase and CancelErase write.
const orgSelect = orgColumns + `, erase_at, erase_requested_by`

func scanOrg(r scanner) (*domain.Organization, error) {
	var o domain.Organization
	var features, billing, images, keys string
	var customerID sql.NullString
	var created int64
	var logsDays, runsDays, eraseAt sql.NullInt64
	if err := r.Scan(&o.ID, &o.Name, &o.Slug, &o.Plan, &o.AIAnalysisEnabled, &features, &customerID, &billing,
		&o.StorageUsedBytes, &created, &images, &o.AIDefaultModel, &keys, &logsDays, &runsDays, &eraseAt,
		&o.EraseRequestedBy); err != nil {
		return nil, err
	}
	o.EraseAt = timePtr(eraseAt)
	o.Retention = domain.RetentionSetting{LogsDays: intPtr(logsDays), RunsDays: intPtr(runsDays)}
	if err := json.Unmarshal([]byte(keys), &o.AIKeys); err != nil {
		return nil, err
	}
	if len(o.AIKeys) == 0 {
		o.AIKeys = nil
	}
	if err := json.Unmarshal([]byte(images), &o.AllowedImages); err != nil {
		return nil, err
	}
	if len(o.AllowedImages) == 0 {
		o.AllowedImages = nil
	}
	if err := json.Unmarshal([]byte(features), &o.Features); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(billing), &o.Billing); err != nil {
		return nil, err
	}
	o.Billing.ProviderCustomerID = customerID.String
	o.CreatedAt = fromMillis(created)
	return &o, nil
}

// billingParams splits billing into the indexed customer ID (NULL when unset, so organizations
// without one never collide) and the JSON of the rest.
func billingParams(b domain.Billing) (customerID any, rest string, err error) {
	if b.ProviderCustomerID != "" {
		customerID = b.ProviderCustomerID
	}
	b.ProviderCustomerID = ""
	j, err := json.Marshal(b)
	return customerID, string(j), err
}

func (r orgRepo) Create(ctx context.Context, o *domain.Organization) error {
	ensureID(&o.ID)
	features, err := json.Marshal(o.Features)
	if err != nil {
		return err
	}
	customerID, billing, err := billingParams(o.Billing)
	if err != nil {
		return err
	}
	images, err := imagesJSON(o.AllowedImages)
	if err != nil {
		return err
	}
	keys, err := keysJSON(o.AIKeys)
	if err != nil {
		return err
	}
	_, err = r.s.exec(ctx, `INSERT INTO organizations (`+orgColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		o.ID, o.Name, o.Slug, o.Plan, o.AIAnalysisEnabled, string(features), customerID, billing,
		o.StorageUsedBytes, millis(o.CreatedAt), images, o.AIDefaultModel, keys, nullInt(o.Retention.LogsDays),
		nullInt(o.Retention.RunsDays))
	return err
}

func (r orgRepo) Get(ctx context.Context, id string) (*domain.Organization, error) {
	return get(ctx, r.s, scanOrg, `SELECT `+orgSelect+` FROM organizations WHERE id = ?`, id)
}

func (r orgRepo) GetByCustomerID(ctx context.Context, providerCustomerID string) (*domain.Organization, error) {
	return get(ctx, r.s, scanOrg, `SELECT `+orgSelect+` FROM organizations WHERE provider_customer_id = ?`,
		providerCustomerID)
}

func (r orgRepo) FindBySlug(ctx context.Context, slug string) ([]domain.Organization, error) {
	return list(ctx, r.s, scanOrg, `SELECT `+orgSelect+` FROM organizations WHERE slug = ? ORDER BY created_at, id`, slug)
}

// Lock reads the row FOR UPDATE on PostgreSQL. On SQLite the transaction already holds the
// database's write lock, so this only checks that the organization exists.
func (r orgRepo) Lock(ctx context.Context, id string) error {
	var got string
	err := r.s.q.QueryRowContext(ctx, r.s.d.rebind(`SELECT id FROM organizations WHERE id = ?`+r.s.d.forUpdate), id).
		Scan(&got)
	return r.s.mapErr(err)
}

func (r orgRepo) UpdateSettings(ctx context.Context, id, name string, aiAnalysisEnabled bool, features domain.Features) error {
	f, err := json.Marshal(features)
	if err != nil {
		return err
	}
	return r.s.execOne(ctx, `UPDATE organizations SET name = ?, ai_analysis_enabled = ?, features = ? WHERE id = ?`,
		name, aiAnalysisEnabled, string(f), id)
}

// SetAllowedImages replaces the organization's image patterns (none: the server's apply alone).
func (r orgRepo) SetAllowedImages(ctx context.Context, id string, patterns []string) error {
	images, err := imagesJSON(patterns)
	if err != nil {
		return err
	}
	return r.s.execOne(ctx, `UPDATE organizations SET allowed_images = ? WHERE id = ?`, images, id)
}

func imagesJSON(patterns []string) (string, error) {
	if patterns == nil {
		patterns = []string{}
	}
	j, err := json.Marshal(patterns)
	return string(j), err
}

func (r orgRepo) UpdatePlan(ctx context.Context, id string, plan domain.Plan, billing domain.Billing) error {
	customerID, rest, err := billingParams(billing)
	if err != nil {
		return err
	}
	return r.s.execOne(ctx, `UPDATE organizations SET plan = ?, provider_customer_id = ?, billing = ? WHERE id = ?`,
		plan, customerID, rest, id)
}

// AddStorageUsed adds delta (negative to release) and never goes below zero, so a release
// counted twice cannot leave the organization with negative usage.
func (r orgRepo) AddStorageUsed(ctx context.Context, id string, delta int64) error {
	return r.s.execOne(ctx, `UPDATE organizations
		SET storage_used_bytes = CASE WHEN storage_used_bytes + ? < 0 THEN 0 ELSE storage_used_bytes + ? END
		WHERE id = ?`, delta, delta, id)
}

func keysJSON(keys map[string]string) (string, error) {
	if keys == nil {
		return "{}", nil
	}
	j, err := json.Marshal(keys)
	return string(j), err
}

// SetAIConfig replaces the organization's default model and its sealed provider keys.
func (r orgRepo) SetAIConfig(ctx context.Context, id, defaultModel string, keys map[string]string) error {
	j, err := keysJSON(keys)
	if err != nil {
		return err
	}
	return r.s.execOne(ctx, `UPDATE organizations SET ai_default_model = ?, ai_keys = ? WHERE id = ?`, defaultModel, j, id)
}

// SetRetention replaces the organization's own retention days (NULL: the plan's).
func (r orgRepo) SetRetention(ctx context.Context, id string, rs domain.RetentionSetting) error {
	return r.s.execOne(ctx, `UPDATE organizations SET retention_logs_days = ?, retention_runs_days = ? WHERE id = ?`,
		nullInt(rs.LogsDays), nullInt(rs.RunsDays), id)
}

// ListAfter reads a page of organizations in the order of their primary key.
func (r orgRepo) ListAfter(ctx context.Context, afterID string, limit int) ([]domain.Organization, error) {
	return list(ctx, r.s, scanOrg, `SELECT `+orgSelect+` FROM organizations WHERE id > ? ORDER BY id LIMIT ?`, afterID, limit)
}

// intPtr is a nullable integer column's value: nil for NULL.
func intPtr(n sql.NullInt64) *int {
	if !n.Valid {
		return nil
	}
	v := int(n.Int64)
	return &v
}
