package testcases_test

import (
	"context"
	"errors"
	"testing"

	"verdict/internal/domain"
	"verdict/internal/identity"
	"verdict/internal/testcases"
)

// A viewer's change is refused before anything else: the service has no store here, so any
// other step would fail differently.
func TestViewersCannotWrite(t *testing.T) {
	s := testcases.New(testcases.Deps{})
	ctx := context.Background()
	p := &identity.Principal{UserID: "u1", OrgID: "o1", Role: domain.RoleViewer, User: &domain.User{ID: "u1"}}
	title := "t"
	for op, call := range map[string]func() error{
		"Create": func() error {
			_, err := s.Create(ctx, p, testcases.Input{ProjectID: domain.NewID(), Title: &title})
			return err
		},
		"Update": func() error { _, err := s.Update(ctx, p, domain.NewID(), testcases.Input{Title: &title}); return err },
		"Delete": func() error { return s.Delete(ctx, p, domain.NewID()) },
		"Import": func() error { _, err := s.Import(ctx, p, domain.NewID(), []byte("Title\nx\n")); return err },
	} {
		var de *domain.Error
		if err := call(); !errors.As(err, &de) || de.Kind != domain.KindForbidden || de.Code != "Forbidden" ||
			de.Message != "Viewers cannot create, change, import or delete test cases" {
			t.Errorf("%s as a viewer: %v, want 403 Forbidden", op, err)
		}
	}
}
