package history

import (
	"context"
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
