package storetest

import (
	"testing"
	"time"

	"verdict/internal/domain"
)

func auditID(e domain.AuditEntry) string { return e.ID }

func testAudit(t *testing.T, open Opener) {
	t.Run("AppendListNewestFirst", func(t *testing.T) {
		f := setup(t, open)
		o, other := f.org(), f.org()
		actor := f.user(o.ID, domain.RoleAdmin)
		entry := func(orgID string, at time.Time) *domain.AuditEntry {
			t.Helper()
			e := &domain.AuditEntry{
				ID: domain.NewID(), OrganizationID: orgID, ActorID: actor.ID, Action: "organization.updated",
				TargetType: "organization", TargetID: orgID,
				Details: map[string]any{"name": "New name", "aiAnalysisEnabled": true}, CreatedAt: at,
			}
			must(t, f.s.Audit().Append(f.ctx, e))
			return e
		}
		old := entry(o.ID, base)
		sameMs1 := entry(o.ID, base.Add(time.Minute))
		sameMs2 := entry(o.ID, base.Add(time.Minute)) // same millisecond: appended later, listed first
		entry(other.ID, base.Add(time.Hour))

		got, err := f.s.Audit().List(f.ctx, o.ID, 0)
		must(t, err)
		equal(t, "List", ids(got, auditID), []string{sameMs2.ID, sameMs1.ID, old.ID})
		equal(t, "entry", got[2], *old)

		got, err = f.s.Audit().List(f.ctx, o.ID, 2)
		must(t, err)
		equal(t, "List with limit", ids(got, auditID), []string{sameMs2.ID, sameMs1.ID})
	})

	t.Run("NoDetails", func(t *testing.T) {
		f := setup(t, open)
		o := f.org()
		e := &domain.AuditEntry{OrganizationID: o.ID, ActorID: domain.NewID(), Action: "user.role_changed",
			TargetType: "user", TargetID: domain.NewID(), CreatedAt: base}
		must(t, f.s.Audit().Append(f.ctx, e))
		if e.ID == "" {
			t.Fatal("Append left the ID empty")
		}
		got, err := f.s.Audit().List(f.ctx, o.ID, 10)
		must(t, err)
		equal(t, "List", got, []domain.AuditEntry{*e})
	})
}
