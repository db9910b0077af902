package history

import (
	"context"
	"errors"
	"fmt"
	"time"

	"verdict/internal/domain"
	"verdict/internal/identity"
	"verdict/internal/store"
)

// Quarantine quarantines the organization's test until the given time with a reason
// (admins and developers): its failures stop failing runs of its project until then. The
// change is audit-logged. It returns the test as it is now.
func (s *Service) Quarantine(ctx context.Context, p *identity.Principal, testID, reason string, until time.Time) (*domain.TrackedTest, error) {
	if !p.CanWrite() {
		return nil, errReadOnly
	}
	now := s.clock()
	reason, err := domain.ValidateQuarantine(reason, until, now)
	if err != nil {
		return nil, err
	}
	q := &domain.Quarantine{Reason: reason, Until: until.UTC().Truncate(time.Millisecond), By: p.UserID, CreatedAt: now}
	return s.setQuarantine(ctx, p.OrgID, p.UserID, testID, q, "test.quarantined", map[string]any{
		"reason": reason, "until": q.Until.Format(time.RFC3339)})
}

// Unquarantine lifts the test's quarantine (admins and developers); audit-logged.
func (s *Service) Unquarantine(ctx context.Context, p *identity.Principal, testID string) (*domain.TrackedTest, error) {
	if !p.CanWrite() {
		return nil, errReadOnly
	}
	return s.setQuarantine(ctx, p.OrgID, p.UserID, testID, nil, "test.unquarantined", nil)
}

func (s *Service) setQuarantine(ctx context.Context, orgID, actor, testID string, q *domain.Quarantine,
	action string, details map[string]any) (*domain.TrackedTest, error) {
	var t *domain.TrackedTest
	err := s.store.InTx(ctx, func(tx store.Store) error {
		var err error
		if t, err = tx.Tests().Get(ctx, orgID, testID); err != nil {
			return notFound(err, errTest404)
		}
		if err := tx.Tests().SetQuarantine(ctx, orgID, testID, q); err != nil {
			return notFound(err, errTest404)
		}
		if details == nil {
			details = map[string]any{}
		}
		details["suite"], details["name"] = t.Suite, t.Name
		return tx.Audit().Append(ctx, &domain.AuditEntry{ID: s.newID(), OrganizationID: orgID, ActorID: actor,
			Action: action, TargetType: "test", TargetID: testID, Details: details, CreatedAt: s.clock()})
	})
	if err != nil {
		return nil, err
	}
	t.Quarantine = q
	return t, nil
}

// Automatic quarantine: a project may quarantine its tests itself once their flake rate
// reaches a threshold (off by default).
const (
	// AutoQuarantineDays is how long an automatic quarantine lasts.
	AutoQuarantineDays = 14
	// autoActor is the audit log's actor of automatic quarantines.
	autoActor = "verdict"
)

// AutoQuarantine is the project's automatic quarantine rule: the flake rate (0..1] from
// which its flaky tests are quarantined; nil: off. Every member may read it.
func (s *Service) AutoQuarantine(ctx context.Context, p *identity.Principal, projectID string) (*float64, error) {
	rate, err := s.store.Tests().AutoQuarantineRate(ctx, p.OrgID, projectID)
	return rate, notFound(err, errProject404)
}

// SetAutoQuarantine sets the project's rule (nil: off); admins and developers. Audit-logged.
func (s *Service) SetAutoQuarantine(ctx context.Context, p *identity.Principal, projectID string, rate *float64) error {
	if !p.CanWrite() {
		return errReadOnly
	}
	if rate != nil && (*rate <= 0 || *rate > 1) {
		return domain.BadRequest("Validation error", "flakeRate must be above 0 and at most 1, or null to turn the rule off")
	}
	return s.store.InTx(ctx, func(tx store.Store) error {
		if err := tx.Tests().SetAutoQuarantineRate(ctx, p.OrgID, projectID, rate); err != nil {
			return notFound(err, errProject404)
		}
		details := map[string]any{"flakeRate": nil}
		if rate != nil {
			details["flakeRate"] = *rate
		}
		return tx.Audit().Append(ctx, &domain.AuditEntry{ID: s.newID(), OrganizationID: p.OrgID, ActorID: p.UserID,
			Action: "project.auto_quarantine_changed", TargetType: "project", TargetID: projectID, Details: details, CreatedAt: s.clock()})
	})
}

// autoQuarantine applies the run's project's rule after its results were recorded: each
// flaky test of the project whose flake rate reached the threshold, and that is not under a
// quarantine, is quarantined for AutoQuarantineDays, audit-logged with "verdict" as actor.
func (s *Service) autoQuarantine(ctx context.Context, run *domain.Execution) error {
	rate, err := s.store.Tests().AutoQuarantineRate(ctx, run.OrganizationID, run.ProjectID)
	if err != nil || rate == nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil // the project was deleted
		}
		return err
	}
	now := s.clock()
	flaky, _, err := s.store.Tests().List(ctx, run.OrganizationID, store.TestFilter{ProjectID: run.ProjectID, Flaky: true,
		Now: now, Limit: MaxListLimit})
	if err != nil {
		return err
	}
	for _, t := range flaky {
		r := domain.Rates(t.Recent)
		if r.FlakeRate < *rate || t.Quarantine.Active(now) {
			continue
		}
		reason := fmt.Sprintf("Automatic: flake rate %d%% over its %d newest results reached the project's rule (%d%%)",
			int(r.FlakeRate*100+0.5), len(t.Recent), int(*rate*100+0.5))
		q := &domain.Quarantine{Reason: reason, Until: now.AddDate(0, 0, AutoQuarantineDays), By: autoActor, CreatedAt: now}
		if _, err := s.setQuarantine(ctx, run.OrganizationID, autoActor, t.ID, q, "test.quarantined",
			map[string]any{"reason": reason, "until": q.Until.Format(time.RFC3339), "automatic": true}); err != nil {
			return err
		}
	}
	return nil
}
