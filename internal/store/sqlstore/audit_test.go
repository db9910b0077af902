package sqlstore

import (
	"context"
	"strings"
	"testing"

	"verdict/internal/domain"
)

// TestAuditAppendOnly: the database itself refuses to change an audit entry, whatever code
// asks it to.
func TestAuditAppendOnly(t *testing.T) {
	for name, open := range map[string]func(testing.TB) *Store{"sqlite": testSQLite, "postgres": testPostgres} {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			ctx := context.Background()
			o := &domain.Organization{ID: domain.NewID(), Name: "Acme", Slug: "acme-" + domain.NewID()[:6], Plan: domain.PlanFree}
			if err := s.Organizations().Create(ctx, o); err != nil {
				t.Fatal(err)
			}
			e := &domain.AuditEntry{OrganizationID: o.ID, ActorID: "u", Action: "user.deleted", TargetType: "user", TargetID: "t"}
			if err := s.Audit().Append(ctx, e); err != nil {
				t.Fatal(err)
			}
			_, err := s.exec(ctx, `UPDATE audit_log SET action = 'nothing' WHERE id = ?`, e.ID)
			if err == nil || !strings.Contains(err.Error(), "append-only") {
				t.Fatalf("UPDATE of an audit entry: err = %v, want the append-only refusal", err)
			}
		})
	}
}
