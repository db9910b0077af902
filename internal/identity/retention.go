package identity

import (
	"context"

	"verdict/internal/domain"
	"verdict/internal/store"
)

// RetentionSettings are an organization's retention as GET /api/organization/retention
// answers it.
type RetentionSettings struct {
	Plan domain.Plan
	// Effective is what the organization keeps (domain.EffectiveRetention).
	Effective domain.Retention
	// Setting is the organization's own values; nil: the plan's.
	Setting domain.RetentionSetting
	// Defaults are the plan's values; Max the server's maxima (0: none).
	Defaults domain.Retention
	Max      domain.Retention
}

// RetentionChange is a change of one retention value: Set says the field was sent; Days nil
// (when set) goes back to the plan's value.
type RetentionChange struct {
	Set  bool
	Days *int
}

// RetentionPatch changes the organization's retention; fields not set stay as they are.
type RetentionPatch struct {
	LogsDays, RunsDays RetentionChange
}

func (s *Service) retentionOf(org *domain.Organization) *RetentionSettings {
	return &RetentionSettings{Plan: org.Plan, Effective: domain.EffectiveRetention(org.Plan, org.Retention, s.retentionMax),
		Setting: org.Retention, Defaults: domain.RetentionFor(org.Plan), Max: s.retentionMax}
}

// Retention is the caller's organization's retention; every member may read it.
func (s *Service) Retention(ctx context.Context, p *Principal) (*RetentionSettings, error) {
	org, err := s.store.Organizations().Get(ctx, p.OrgID)
	if err != nil {
		return nil, notFound(err, errOrgNotFound)
	}
	return s.retentionOf(org), nil
}

// UpdateRetention changes the organization's retention (admin only) within its bounds
// (domain.CheckRetention) and writes the change to the audit log. The retention job applies it
// at its next pass.
func (s *Service) UpdateRetention(ctx context.Context, p *Principal, patch RetentionPatch) (*RetentionSettings, error) {
	if err := p.RequireAdmin(); err != nil {
		return nil, err
	}
	var out *RetentionSettings
	err := s.store.InTx(ctx, func(tx store.Store) error {
		if err := tx.Organizations().Lock(ctx, p.OrgID); err != nil {
			return notFound(err, errOrgNotFound)
		}
		org, err := tx.Organizations().Get(ctx, p.OrgID)
		if err != nil {
			return notFound(err, errOrgNotFound)
		}
		next := org.Retention
		if patch.LogsDays.Set {
			next.LogsDays = patch.LogsDays.Days
		}
		if patch.RunsDays.Set {
			next.RunsDays = patch.RunsDays.Days
		}
		if err := domain.CheckRetention(org.Plan, next, s.retentionMax); err != nil {
			return err
		}
		changes := map[string]any{}
		for _, c := range []struct {
			name     string
			from, to *int
		}{{"logsDays", org.Retention.LogsDays, next.LogsDays}, {"runsDays", org.Retention.RunsDays, next.RunsDays}} {
			if !sameDays(c.from, c.to) {
				changes[c.name] = map[string]any{"from": c.from, "to": c.to}
			}
		}
		org.Retention = next
		out = s.retentionOf(org)
		if len(changes) == 0 {
			return nil
		}
		if err := tx.Organizations().SetRetention(ctx, org.ID, next); err != nil {
			return err
		}
		return s.audit(ctx, tx, p, "organization.retention_updated", "organization", org.ID, changes)
	})
	return out, err
}

func sameDays(a, b *int) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
