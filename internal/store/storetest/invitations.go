package storetest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"verdict/internal/domain"
	"verdict/internal/store"
)

func invitationID(i domain.Invitation) string { return i.ID }

func testInvitations(t *testing.T, open Opener) {
	t.Run("CreateGet", func(t *testing.T) {
		f := setup(t, open)
		o := f.org()
		admin := f.user(o.ID, domain.RoleAdmin)
		inv := f.invitation(admin, " New.Person@Example.com")
		if inv.Email != "new.person@example.com" {
			t.Errorf("Create left e-mail %q, want it lower-cased and trimmed", inv.Email)
		}
		got, err := f.s.Invitations().Get(f.ctx, o.ID, inv.ID)
		must(t, err)
		equal(t, "Get", got, inv)
		got, err = f.s.Invitations().GetByTokenHash(f.ctx, inv.TokenHash)
		must(t, err)
		equal(t, "GetByTokenHash", got, inv)
	})

	t.Run("NotFound", func(t *testing.T) {
		f := setup(t, open)
		o := f.org()
		_, err := f.s.Invitations().Get(f.ctx, o.ID, domain.NewID())
		wantErr(t, "Get", err, store.ErrNotFound)
		_, err = f.s.Invitations().GetByTokenHash(f.ctx, domain.RandomHex(32))
		wantErr(t, "GetByTokenHash", err, store.ErrNotFound)
		_, err = f.s.Invitations().FindPending(f.ctx, o.ID, "nobody@example.com")
		wantErr(t, "FindPending", err, store.ErrNotFound)
		wantErr(t, "SetStatus", f.s.Invitations().SetStatus(f.ctx, o.ID, domain.NewID(), domain.InvitationPending,
			domain.InvitationRevoked, base), store.ErrNotFound)
	})

	t.Run("DuplicateTokenHashConflicts", func(t *testing.T) {
		f := setup(t, open)
		a, b := f.org(), f.org()
		inv := f.invitation(f.user(a.ID, domain.RoleAdmin), "x@example.com")
		dup := *inv
		dup.ID, dup.OrganizationID = domain.NewID(), b.ID
		wantErr(t, "same token hash", f.s.Invitations().Create(f.ctx, &dup), store.ErrConflict)
	})

	t.Run("FindPending", func(t *testing.T) {
		f := setup(t, open)
		o, other := f.org(), f.org()
		admin := f.user(o.ID, domain.RoleAdmin)
		accepted := f.invitation(admin, "x@example.com")
		must(t, f.s.Invitations().SetStatus(f.ctx, o.ID, accepted.ID, domain.InvitationPending,
			domain.InvitationAccepted, base))
		f.invitation(f.user(other.ID, domain.RoleAdmin), "y@example.com")

		_, err := f.s.Invitations().FindPending(f.ctx, o.ID, "x@example.com")
		wantErr(t, "only an accepted invitation", err, store.ErrNotFound)
		_, err = f.s.Invitations().FindPending(f.ctx, o.ID, "y@example.com")
		wantErr(t, "another organization's pending invitation", err, store.ErrNotFound)

		pending := f.invitation(admin, "x@example.com")
		got, err := f.s.Invitations().FindPending(f.ctx, o.ID, "X@Example.com")
		must(t, err)
		equal(t, "FindPending", got, pending)
	})

	t.Run("ListNewestFirst", func(t *testing.T) {
		f := setup(t, open)
		o, other := f.org(), f.org()
		admin := f.user(o.ID, domain.RoleAdmin)
		first := f.invitation(admin, "a@example.com")
		second := f.invitation(admin, "b@example.com")
		must(t, f.s.Invitations().SetStatus(f.ctx, o.ID, second.ID, domain.InvitationPending,
			domain.InvitationRevoked, base))
		third := f.invitation(admin, "c@example.com")
		f.invitation(f.user(other.ID, domain.RoleAdmin), "d@example.com")

		got, err := f.s.Invitations().List(f.ctx, o.ID)
		must(t, err)
		equal(t, "List", ids(got, invitationID), []string{third.ID, second.ID, first.ID})
		equal(t, "revoked status", got[1].Status, domain.InvitationRevoked)
	})

	t.Run("CountPendingUnexpired", func(t *testing.T) {
		f := setup(t, open)
		o, other := f.org(), f.org()
		admin := f.user(o.ID, domain.RoleAdmin)
		early := f.invitation(admin, "a@example.com")
		late := f.invitation(admin, "b@example.com")
		revoked := f.invitation(admin, "c@example.com")
		must(t, f.s.Invitations().SetStatus(f.ctx, o.ID, revoked.ID, domain.InvitationPending,
			domain.InvitationRevoked, base))
		f.invitation(f.user(other.ID, domain.RoleAdmin), "d@example.com")

		for _, c := range []struct {
			name string
			at   time.Time
			want int
		}{
			{"before any expiry", early.ExpiresAt.Add(-time.Millisecond), 2},
			{"at the first expiry", early.ExpiresAt, 1},
			{"at the last expiry", late.ExpiresAt, 0},
		} {
			n, err := f.s.Invitations().CountPendingUnexpired(f.ctx, o.ID, c.at)
			must(t, err)
			equal(t, c.name, n, c.want)
		}
	})

	t.Run("SetStatusConsumesOnce", func(t *testing.T) {
		f := setup(t, open)
		o := f.org()
		inv := f.invitation(f.user(o.ID, domain.RoleAdmin), "x@example.com")
		at := base.Add(time.Hour)
		must(t, f.s.Invitations().SetStatus(f.ctx, o.ID, inv.ID, domain.InvitationPending, domain.InvitationAccepted, at))
		wantErr(t, "accept again", f.s.Invitations().SetStatus(f.ctx, o.ID, inv.ID, domain.InvitationPending,
			domain.InvitationAccepted, at.Add(time.Hour)), store.ErrNotFound)
		wantErr(t, "revoke after accept", f.s.Invitations().SetStatus(f.ctx, o.ID, inv.ID, domain.InvitationPending,
			domain.InvitationRevoked, at.Add(time.Hour)), store.ErrNotFound)
		got, err := f.s.Invitations().Get(f.ctx, o.ID, inv.ID)
		must(t, err)
		inv.Status, inv.AcceptedAt = domain.InvitationAccepted, &at
		equal(t, "accepted invitation", got, inv)

		revoked := f.invitation(f.user(o.ID, domain.RoleAdmin), "y@example.com")
		must(t, f.s.Invitations().SetStatus(f.ctx, o.ID, revoked.ID, domain.InvitationPending, domain.InvitationRevoked, at))
		wantErr(t, "accept after revoke", f.s.Invitations().SetStatus(f.ctx, o.ID, revoked.ID, domain.InvitationPending,
			domain.InvitationAccepted, at), store.ErrNotFound)
		got, err = f.s.Invitations().Get(f.ctx, o.ID, revoked.ID)
		must(t, err)
		if got.Status != domain.InvitationRevoked || got.AcceptedAt != nil {
			t.Errorf("revoked invitation: %+v", got)
		}
	})

	t.Run("SetStatusConcurrentAcceptsOnce", func(t *testing.T) {
		f := setup(t, open)
		o := f.org()
		inv := f.invitation(f.user(o.ID, domain.RoleAdmin), "x@example.com")
		const n = 6
		errs := make([]error, n)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				<-start
				errs[i] = f.s.Invitations().SetStatus(f.ctx, o.ID, inv.ID, domain.InvitationPending,
					domain.InvitationAccepted, base)
			})
		}
		close(start)
		wg.Wait()
		won := 0
		for _, err := range errs {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, store.ErrNotFound):
				t.Errorf("SetStatus: %v", err)
			}
		}
		equal(t, "accepts that succeeded", won, 1)
	})

	t.Run("TenantIsolation", func(t *testing.T) {
		f := setup(t, open)
		o, other := f.org(), f.org()
		inv := f.invitation(f.user(o.ID, domain.RoleAdmin), "x@example.com")
		_, err := f.s.Invitations().Get(f.ctx, other.ID, inv.ID)
		wantErr(t, "Get", err, store.ErrNotFound)
		wantErr(t, "SetStatus", f.s.Invitations().SetStatus(f.ctx, other.ID, inv.ID, domain.InvitationPending,
			domain.InvitationRevoked, base), store.ErrNotFound)
		list, err := f.s.Invitations().List(f.ctx, other.ID)
		must(t, err)
		equal(t, "List of another organization", len(list), 0)
		n, err := f.s.Invitations().CountPendingUnexpired(f.ctx, other.ID, base)
		must(t, err)
		equal(t, "CountPendingUnexpired of another organization", n, 0)
		got, err := f.s.Invitations().Get(f.ctx, o.ID, inv.ID)
		must(t, err)
		equal(t, "invitation after another organization's write", got, inv)
	})
}
