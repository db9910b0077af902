package identity

import (
	"context"
	"errors"
	"testing"

	"verdict/internal/domain"
)

// Every admin-only operation refuses another role first, with the API's admin-only 403, before
// it reads its input or the store (this service has none: a lookup would panic).
func TestAdminOnlyOperationsRefuseFirst(t *testing.T) {
	s := New(Deps{})
	ctx := context.Background()
	for _, role := range []domain.Role{domain.RoleDeveloper, domain.RoleViewer} {
		p := &Principal{UserID: "u1", OrgID: "o1", Role: role, User: &domain.User{ID: "u1", Role: role}}
		name := "x"
		ops := map[string]func() error{
			"ChangeRole": func() error { _, err := s.ChangeRole(ctx, p, "u2", "nobody"); return err },
			"SetStatus":  func() error { _, err := s.SetStatus(ctx, p, "u2", "gone"); return err },
			"DeleteUser": func() error { return s.DeleteUser(ctx, p, "u2") },
			"UpdateOrganization": func() error {
				_, err := s.UpdateOrganization(ctx, p, OrganizationPatch{Name: &name})
				return err
			},
			"Invite":           func() error { _, err := s.Invite(ctx, p, "not an e-mail", "nobody"); return err },
			"ListInvitations":  func() error { _, err := s.ListInvitations(ctx, p); return err },
			"RevokeInvitation": func() error { return s.RevokeInvitation(ctx, p, "not an ID") },
		}
		for op, call := range ops {
			var de *domain.Error
			if err := call(); !errors.As(err, &de) || de.Kind != domain.KindForbidden || de.Code != "Forbidden" || de.Message != "This action needs the admin role" {
				t.Errorf("%s as %s: %v, want 403 Forbidden: This action needs the admin role", op, role, err)
			}
		}
	}
}
