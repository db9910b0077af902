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

	t.Run("Find", func(t *testing.T) {
		f := setup(t, open)
		o, other := f.org(), f.org()
		admin := f.user(o.ID, domain.RoleAdmin)
		gone := domain.NewID() // an actor no longer a member: its entries stay, without a name
		add := func(orgID, actor, action string, at time.Time) *domain.AuditEntry {
			t.Helper()
			e := &domain.AuditEntry{OrganizationID: orgID, ActorID: actor, Action: action,
				TargetType: "user", TargetID: "t", CreatedAt: at}
			must(t, f.s.Audit().Append(domain.WithClientIP(f.ctx, "203.0.113.7"), e))
			return e
		}
		a1 := add(o.ID, admin.ID, "user.role_changed", base)
		a2 := add(o.ID, gone, "user.deleted", base.Add(time.Minute))
		a3 := add(o.ID, admin.ID, "apikey.created", base.Add(2*time.Minute))
		a4 := add(o.ID, admin.ID, "user_x.odd", base.Add(3*time.Minute)) // "_" is no wildcard
		add(other.ID, admin.ID, "user.role_changed", base.Add(time.Hour))

		find := func(fl domain.AuditFilter) ([]string, int) {
			t.Helper()
			got, total, err := f.s.Audit().Find(f.ctx, o.ID, fl)
			must(t, err)
			return ids(got, auditID), total
		}
		got, total := find(domain.AuditFilter{})
		equal(t, "all", got, []string{a4.ID, a3.ID, a2.ID, a1.ID})
		equal(t, "total", total, 4)
		got, total = find(domain.AuditFilter{Limit: 2, Offset: 1})
		equal(t, "page", got, []string{a3.ID, a2.ID})
		equal(t, "page total", total, 4)
		got, _ = find(domain.AuditFilter{ActorID: admin.ID})
		equal(t, "by actor", got, []string{a4.ID, a3.ID, a1.ID})
		got, _ = find(domain.AuditFilter{Action: "user.*"})
		equal(t, "by action prefix", got, []string{a2.ID, a1.ID})
		got, _ = find(domain.AuditFilter{Action: "user.deleted"})
		equal(t, "by action", got, []string{a2.ID})
		got, total = find(domain.AuditFilter{Since: base.Add(time.Minute), Until: base.Add(3 * time.Minute)})
		equal(t, "by time", got, []string{a3.ID, a2.ID})
		equal(t, "by time total", total, 2)

		entries, _, err := f.s.Audit().Find(f.ctx, o.ID, domain.AuditFilter{Limit: 10})
		must(t, err)
		equal(t, "actor name", entries[1].ActorName, admin.Name)
		equal(t, "deleted actor's name", entries[2].ActorName, "")
		equal(t, "address from the context", entries[0].IP, "203.0.113.7")
	})
}
