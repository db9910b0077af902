package identity

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"verdict/internal/domain"
	"verdict/internal/store"
)

var errOrgNotFound = domain.NotFound("Organization not found", "The organization no longer exists")

// Organization returns the caller's organization and its active member count.
func (s *Service) Organization(ctx context.Context, p *Principal) (*domain.Organization, int, error) {
	org, err := s.store.Organizations().Get(ctx, p.OrgID)
	if err != nil {
		return nil, 0, notFound(err, errOrgNotFound)
	}
	n, err := s.store.Users().CountActive(ctx, p.OrgID)
	if err != nil {
		return nil, 0, err
	}
	return org, n, nil
}

// OrganizationPatch is a partial settings change; nil fields stay as they are.
type OrganizationPatch struct {
	Name              *string
	AIAnalysisEnabled *bool
	AutomationPlanner *bool
	// AllowedImages replaces the organization's image patterns; an empty list removes them.
	AllowedImages *[]string
}

// UpdateOrganization applies a settings change (admin only) and writes it to the audit log.
func (s *Service) UpdateOrganization(ctx context.Context, p *Principal, patch OrganizationPatch) (*domain.Organization, error) {
	if err := p.RequireAdmin(); err != nil {
		return nil, err
	}
	if patch.Name != nil {
		n := strings.TrimSpace(*patch.Name)
		if !domain.ValidOrganizationName(n) {
			return nil, domain.BadRequest("Invalid organization name", "name must have 2 to 100 visible characters, without control, invisible or text-direction characters")
		}
		patch.Name = &n
	}
	if patch.AllowedImages != nil {
		if len(*patch.AllowedImages) > domain.MaxImagePatterns {
			return nil, domain.BadRequest("Validation error", fmt.Sprintf("allowedImages holds at most %d patterns", domain.MaxImagePatterns))
		}
		for _, p := range *patch.AllowedImages {
			if !domain.ValidImagePattern(p) {
				return nil, domain.BadRequest("Validation error", fmt.Sprintf("allowedImages: %q is not an image pattern (an image reference in which * stands for any characters)", p))
			}
		}
	}
	var org *domain.Organization
	err := s.store.InTx(ctx, func(tx store.Store) error {
		if err := tx.Organizations().Lock(ctx, p.OrgID); err != nil {
			return err
		}
		o, err := tx.Organizations().Get(ctx, p.OrgID)
		if err != nil {
			return notFound(err, errOrgNotFound)
		}
		changes := map[string]any{}
		if patch.Name != nil && *patch.Name != o.Name {
			changes["name"] = map[string]any{"from": o.Name, "to": *patch.Name}
			o.Name = *patch.Name
		}
		if patch.AIAnalysisEnabled != nil && *patch.AIAnalysisEnabled != o.AIAnalysisEnabled {
			changes["aiAnalysisEnabled"] = map[string]any{"from": o.AIAnalysisEnabled, "to": *patch.AIAnalysisEnabled}
			o.AIAnalysisEnabled = *patch.AIAnalysisEnabled
		}
		if patch.AutomationPlanner != nil && *patch.AutomationPlanner != o.Features.AIFeatures.AutomationPlanner {
			changes["features.aiFeatures.automationPlanner"] = map[string]any{"from": o.Features.AIFeatures.AutomationPlanner, "to": *patch.AutomationPlanner}
			o.Features.AIFeatures.AutomationPlanner = *patch.AutomationPlanner
		}
		if patch.AllowedImages != nil && !slices.Equal(*patch.AllowedImages, o.AllowedImages) {
			changes["allowedImages"] = map[string]any{"from": o.AllowedImages, "to": *patch.AllowedImages}
			o.AllowedImages = slices.Clone(*patch.AllowedImages)
			if len(o.AllowedImages) == 0 {
				o.AllowedImages = nil
			}
			if err := tx.Organizations().SetAllowedImages(ctx, o.ID, o.AllowedImages); err != nil {
				return err
			}
		}
		org = o
		if len(changes) == 0 {
			return nil
		}
		if err := tx.Organizations().UpdateSettings(ctx, o.ID, o.Name, o.AIAnalysisEnabled, o.Features); err != nil {
			return err
		}
		return s.audit(ctx, tx, p, "organization.updated", "organization", o.ID, changes)
	})
	return org, err
}

// Usage is the answer of GET /api/organization/usage.
type Usage struct {
	PeriodStart, PeriodEnd time.Time
	RunsUsed               int
	Limits                 domain.Limits
	ActiveUsers            int
	Projects               int
	StorageUsed            int64
	Alerts                 []domain.UsageAlert
}

// Usage reports the organization's consumption in the current billing period: the
// subscription's period when known, else the calendar month.
func (s *Service) Usage(ctx context.Context, p *Principal) (*Usage, error) {
	org, users, err := s.Organization(ctx, p)
	if err != nil {
		return nil, err
	}
	start, end := domain.BillingPeriod(org, s.clock())
	runs, err := s.runs.CountRunsSince(ctx, org.ID, start)
	if err != nil {
		return nil, err
	}
	projects, err := s.store.Projects().Count(ctx, org.ID)
	if err != nil {
		return nil, err
	}
	l := org.Limits()
	u := &Usage{PeriodStart: start, PeriodEnd: end, RunsUsed: runs, Limits: l, ActiveUsers: users, Projects: projects,
		StorageUsed: org.StorageUsedBytes}
	for _, a := range []*domain.UsageAlert{
		domain.AlertFor("testRuns", int64(runs), int64(l.MaxTestRuns)),
		domain.AlertFor("users", int64(users), int64(l.MaxUsers)),
		domain.AlertFor("projects", int64(projects), int64(l.MaxProjects)),
		domain.AlertFor("storage", org.StorageUsedBytes, l.MaxStorageBytes),
	} {
		if a != nil {
			u.Alerts = append(u.Alerts, *a)
		}
	}
	return u, nil
}
