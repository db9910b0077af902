package billing_test

import (
	"context"
	"errors"
	"testing"

	"verdict/internal/billing"
	"verdict/internal/domain"
	"verdict/internal/httpkind"
	"verdict/internal/identity"
)

// The admin-only operations refuse another role before anything else, even on a server
// without a payment provider (which would otherwise answer 503); the subscription is for every
// role.
func TestAdminOnlyOperationsRefuseFirst(t *testing.T) {
	s := billing.New(billing.Deps{})
	ctx := context.Background()
	p := &identity.Principal{UserID: "u1", OrgID: "o1", Role: domain.RoleDeveloper, User: &domain.User{ID: "u1", Email: "dev@example.com"}}
	status := func(err error) (int, string) {
		var de *domain.Error
		if !errors.As(err, &de) {
			return 0, ""
		}
		return httpkind.Status(de.Kind), de.Message
	}
	for op, call := range map[string]func() error{
		"StartCheckout": func() error { _, err := s.StartCheckout(ctx, p, "", "team"); return err },
		"OpenPortal":    func() error { _, err := s.OpenPortal(ctx, p); return err },
		"Events":        func() error { _, err := s.Events(ctx, p, 50); return err },
	} {
		if code, msg := status(call()); code != 403 || msg != "This action needs the admin role" {
			t.Errorf("%s as a developer: %d %q, want 403 This action needs the admin role", op, code, msg)
		}
	}
	if _, err := s.Subscription(ctx, p); err == nil {
		t.Fatal("Subscription without a payment provider answered")
	} else if code, _ := status(err); code != 503 {
		t.Errorf("Subscription as a developer: %v, want the 503 of a server without a payment provider", err)
	}
}
