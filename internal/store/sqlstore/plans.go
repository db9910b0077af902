package sqlstore

import (
	"context"

	"verdict/internal/domain"
	"verdict/internal/store"
)

func (s *Store) Plans() store.PlanRepo { return planRepo{s} }

type planRepo struct{ s *Store }

const planColumns = `id, organization_id, project_id, framework, design_pattern, test_ids, markdown, provider, model,
	created_by, created_at`

// planListColumns leave the Markdown out: a history lists plans, it does not show them.
const planListColumns = `id, organization_id, project_id, framework, design_pattern, test_ids, '', provider, model,
	created_by, created_at`

func scanPlan(r scanner) (*domain.AutomationPlan, error) {
	var p domain.AutomationPlan
	var ids string
	var created int64
	if err := r.Scan(&p.ID, &p.OrganizationID, &p.ProjectID, &p.Framework, &p.DesignPattern, &ids, &p.Markdown,
		&p.Provider, &p.Model, &p.CreatedBy, &created); err != nil {
		return nil, err
	}
	if err := decodeJSON(ids, &p.TestIDs); err != nil {
		return nil, err
	}
	p.CreatedAt = fromMillis(created)
	return &p, nil
}

func (r planRepo) Create(ctx context.Context, p *domain.AutomationPlan) error {
	ensureID(&p.ID)
	ids := p.TestIDs
	if ids == nil {
		ids = []string{}
	}
	j, err := marshalJSON(ids)
	if err != nil {
		return err
	}
	_, err = r.s.exec(ctx, `INSERT INTO automation_plans (`+planColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		p.ID, p.OrganizationID, p.ProjectID, p.Framework, p.DesignPattern, j[0], p.Markdown, p.Provider, p.Model,
		p.CreatedBy, millis(p.CreatedAt))
	return err
}

func (r planRepo) Get(ctx context.Context, orgID, id string) (*domain.AutomationPlan, error) {
	return get(ctx, r.s, scanPlan, `SELECT `+planColumns+` FROM automation_plans WHERE organization_id = ? AND id = ?`, orgID, id)
}

func (r planRepo) List(ctx context.Context, orgID, projectID string, limit int) ([]domain.AutomationPlan, error) {
	if projectID == "" {
		return list(ctx, r.s, scanPlan, `SELECT `+planListColumns+` FROM automation_plans WHERE organization_id = ?
			ORDER BY created_at DESC, id DESC LIMIT ?`, orgID, limit)
	}
	return list(ctx, r.s, scanPlan, `SELECT `+planListColumns+` FROM automation_plans
		WHERE organization_id = ? AND project_id = ? ORDER BY created_at DESC, id DESC LIMIT ?`, orgID, projectID, limit)
}

func (r planRepo) Delete(ctx context.Context, orgID, id string) error {
	return r.s.execOne(ctx, `DELETE FROM automation_plans WHERE organization_id = ? AND id = ?`, orgID, id)
}
