package storetest

import (
	"testing"
	"time"

	"verdict/internal/domain"
	"verdict/internal/store"
)

func userID(u domain.User) string { return u.ID }

func testUsers(t *testing.T, open Opener) {
	t.Run("CreateGet", func(t *testing.T) {
		f := setup(t, open)
		o := f.org()
		login := base.Add(time.Hour)
		u := &domain.User{
			ID: domain.NewID(), OrganizationID: o.ID, Email: " Alice@Example.COM ", Name: "Alice",
			PasswordHash: "hash", Role: domain.RoleAdmin, Status: domain.UserActive, LastLoginAt: &login, CreatedAt: base,
		}
		must(t, f.s.Users().Create(f.ctx, u))
		if u.Email != "alice@example.com" {
			t.Errorf("Create left e-mail %q, want it lower-cased and trimmed", u.Email)
		}
		equal(t, "Get", f.getUser(o.ID, u.ID), u)

		byEmail, err := f.s.Users().GetByEmail(f.ctx, "ALICE@example.com")
		must(t, err)
		equal(t, "GetByEmail", byEmail, u)
	})

	t.Run("CreateFillsEmptyID", func(t *testing.T) {
		f := setup(t, open)
		o := f.org()
		u := &domain.User{OrganizationID: o.ID, Email: "a@example.com", Role: domain.RoleViewer, Status: domain.UserActive}
		must(t, f.s.Users().Create(f.ctx, u))
		if u.ID == "" {
			t.Fatal("Create left the ID empty")
		}
		f.getUser(o.ID, u.ID)
	})

	t.Run("DuplicateEmailConflicts", func(t *testing.T) {
		f := setup(t, open)
		a, b := f.org(), f.org()
		u := f.user(a.ID, domain.RoleAdmin)
		dup := &domain.User{
			ID: domain.NewID(), OrganizationID: b.ID, Email: "USER" + u.Email[4:], Role: domain.RoleAdmin,
			Status: domain.UserActive, CreatedAt: base,
		}
		wantErr(t, "same e-mail in another organization, other case", f.s.Users().Create(f.ctx, dup), store.ErrConflict)
		sameID := &domain.User{ID: u.ID, OrganizationID: a.ID, Email: "other@example.com", Role: domain.RoleViewer,
			Status: domain.UserActive}
		wantErr(t, "same ID", f.s.Users().Create(f.ctx, sameID), store.ErrConflict)
	})

	t.Run("NotFound", func(t *testing.T) {
		f := setup(t, open)
		o := f.org()
		missing := domain.NewID()
		_, err := f.s.Users().Get(f.ctx, o.ID, missing)
		wantErr(t, "Get", err, store.ErrNotFound)
		_, err = f.s.Users().GetByEmail(f.ctx, "nobody@example.com")
		wantErr(t, "GetByEmail", err, store.ErrNotFound)
		wantErr(t, "UpdateRole", f.s.Users().UpdateRole(f.ctx, o.ID, missing, domain.RoleViewer), store.ErrNotFound)
		wantErr(t, "UpdateStatus", f.s.Users().UpdateStatus(f.ctx, o.ID, missing, domain.UserSuspended), store.ErrNotFound)
		wantErr(t, "UpdateLastLogin", f.s.Users().UpdateLastLogin(f.ctx, o.ID, missing, base), store.ErrNotFound)
		wantErr(t, "MoveToOrganization",
			f.s.Users().MoveToOrganization(f.ctx, o.ID, missing, f.org().ID, domain.RoleViewer), store.ErrNotFound)
		wantErr(t, "Delete", f.s.Users().Delete(f.ctx, o.ID, missing), store.ErrNotFound)
	})

	t.Run("ListOldestFirst", func(t *testing.T) {
		f := setup(t, open)
		o, other := f.org(), f.org()
		var want []string
		for _, minutes := range []int{30, 10, 20} {
			u := &domain.User{
				ID: domain.NewID(), OrganizationID: o.ID, Email: domain.RandomHex(4) + "@example.com",
				Role: domain.RoleDeveloper, Status: domain.UserActive, CreatedAt: base.Add(time.Duration(minutes) * time.Minute),
			}
			must(t, f.s.Users().Create(f.ctx, u))
			want = append(want, u.ID)
		}
		want = []string{want[1], want[2], want[0]}
		f.user(other.ID, domain.RoleAdmin)

		got, err := f.s.Users().List(f.ctx, o.ID)
		must(t, err)
		equal(t, "List", ids(got, userID), want)

		got, err = f.s.Users().List(f.ctx, f.org().ID)
		must(t, err)
		if len(got) != 0 {
			t.Errorf("List of an empty organization: %d users", len(got))
		}
	})

	t.Run("Counts", func(t *testing.T) {
		f := setup(t, open)
		o, other := f.org(), f.org()
		f.user(o.ID, domain.RoleAdmin)
		f.user(o.ID, domain.RoleDeveloper)
		f.user(o.ID, domain.RoleDeveloper)
		suspended := f.user(o.ID, domain.RoleAdmin)
		must(t, f.s.Users().UpdateStatus(f.ctx, o.ID, suspended.ID, domain.UserSuspended))
		f.user(other.ID, domain.RoleAdmin)
		f.user(other.ID, domain.RoleDeveloper)

		active, err := f.s.Users().CountActive(f.ctx, o.ID)
		must(t, err)
		equal(t, "CountActive", active, 3)
		for role, want := range map[domain.Role]int{domain.RoleAdmin: 1, domain.RoleDeveloper: 2, domain.RoleViewer: 0} {
			n, err := f.s.Users().CountActiveByRole(f.ctx, o.ID, role)
			must(t, err)
			equal(t, "CountActiveByRole "+string(role), n, want)
		}
	})

	t.Run("Updates", func(t *testing.T) {
		f := setup(t, open)
		o := f.org()
		u := f.user(o.ID, domain.RoleDeveloper)
		must(t, f.s.Users().UpdateRole(f.ctx, o.ID, u.ID, domain.RoleAdmin))
		must(t, f.s.Users().UpdateStatus(f.ctx, o.ID, u.ID, domain.UserSuspended))
		login := base.Add(48 * time.Hour)
		must(t, f.s.Users().UpdateLastLogin(f.ctx, o.ID, u.ID, login))
		u.Role, u.Status, u.LastLoginAt = domain.RoleAdmin, domain.UserSuspended, &login
		equal(t, "after updates", f.getUser(o.ID, u.ID), u)
	})

	t.Run("TenantIsolation", func(t *testing.T) {
		f := setup(t, open)
		o, other := f.org(), f.org()
		u := f.user(o.ID, domain.RoleAdmin)
		f.apiKey(u)
		before := f.getUser(o.ID, u.ID)

		_, err := f.s.Users().Get(f.ctx, other.ID, u.ID)
		wantErr(t, "Get", err, store.ErrNotFound)
		wantErr(t, "UpdateRole", f.s.Users().UpdateRole(f.ctx, other.ID, u.ID, domain.RoleViewer), store.ErrNotFound)
		wantErr(t, "UpdateStatus", f.s.Users().UpdateStatus(f.ctx, other.ID, u.ID, domain.UserSuspended), store.ErrNotFound)
		wantErr(t, "UpdateLastLogin", f.s.Users().UpdateLastLogin(f.ctx, other.ID, u.ID, base.Add(time.Hour)), store.ErrNotFound)
		wantErr(t, "MoveToOrganization",
			f.s.Users().MoveToOrganization(f.ctx, other.ID, u.ID, other.ID, domain.RoleViewer), store.ErrNotFound)
		wantErr(t, "Delete", f.s.Users().Delete(f.ctx, other.ID, u.ID), store.ErrNotFound)

		equal(t, "user after another organization's writes", f.getUser(o.ID, u.ID), before)
		keys, err := f.s.APIKeys().ListByUser(f.ctx, o.ID, u.ID)
		must(t, err)
		equal(t, "API keys kept", len(keys), 1)
		n, err := f.s.Users().CountActiveByRole(f.ctx, other.ID, domain.RoleAdmin)
		must(t, err)
		equal(t, "admins counted in another organization", n, 0)
	})

	t.Run("MoveToOrganization", func(t *testing.T) {
		f := setup(t, open)
		from, to := f.org(), f.org()
		f.user(from.ID, domain.RoleAdmin)
		u := f.user(from.ID, domain.RoleAdmin)
		k := f.apiKey(u)

		must(t, f.s.Users().MoveToOrganization(f.ctx, from.ID, u.ID, to.ID, domain.RoleViewer))
		_, err := f.s.Users().Get(f.ctx, from.ID, u.ID)
		wantErr(t, "Get in the old organization", err, store.ErrNotFound)
		u.OrganizationID, u.Role = to.ID, domain.RoleViewer
		equal(t, "Get in the new organization", f.getUser(to.ID, u.ID), u)
		_, err = f.s.APIKeys().GetByHash(f.ctx, k.Hash)
		wantErr(t, "API key for the old organization", err, store.ErrNotFound)
	})

	t.Run("DeleteKeepsHistory", func(t *testing.T) {
		f := setup(t, open)
		o := f.org()
		admin := f.user(o.ID, domain.RoleAdmin)
		u := f.user(o.ID, domain.RoleAdmin)
		k := f.apiKey(u)
		inv := f.invitation(u, "invitee@example.com")
		must(t, f.s.Audit().Append(f.ctx, &domain.AuditEntry{
			ID: domain.NewID(), OrganizationID: o.ID, ActorID: u.ID, Action: "user.role_changed",
			TargetType: "user", TargetID: admin.ID, CreatedAt: base,
		}))

		must(t, f.s.Users().Delete(f.ctx, o.ID, u.ID))
		_, err := f.s.Users().Get(f.ctx, o.ID, u.ID)
		wantErr(t, "Get after Delete", err, store.ErrNotFound)
		_, err = f.s.APIKeys().GetByHash(f.ctx, k.Hash)
		wantErr(t, "the deleted user's API key", err, store.ErrNotFound)
		got, err := f.s.Invitations().Get(f.ctx, o.ID, inv.ID)
		must(t, err)
		equal(t, "invitation by the deleted user", got.InvitedBy, u.ID)
		entries, err := f.s.Audit().List(f.ctx, o.ID, 0)
		must(t, err)
		if len(entries) != 1 || entries[0].ActorID != u.ID {
			t.Errorf("audit entries by the deleted user: %+v", entries)
		}

		again := &domain.User{ID: domain.NewID(), OrganizationID: o.ID, Email: u.Email, Role: domain.RoleViewer,
			Status: domain.UserActive}
		must(t, f.s.Users().Create(f.ctx, again))
	})
}
