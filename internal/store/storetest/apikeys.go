package storetest

import (
	"testing"
	"time"

	"verdict/internal/domain"
	"verdict/internal/store"
)

func apiKeyID(k domain.APIKey) string { return k.ID }

func testAPIKeys(t *testing.T, open Opener) {
	t.Run("CreateGetByHash", func(t *testing.T) {
		f := setup(t, open)
		o := f.org()
		k := f.apiKey(f.user(o.ID, domain.RoleDeveloper))
		got, err := f.s.APIKeys().GetByHash(f.ctx, k.Hash)
		must(t, err)
		equal(t, "GetByHash", got, k)
		_, err = f.s.APIKeys().GetByHash(f.ctx, domain.RandomHex(32))
		wantErr(t, "unknown hash", err, store.ErrNotFound)
	})

	t.Run("DuplicateHashConflicts", func(t *testing.T) {
		f := setup(t, open)
		k := f.apiKey(f.user(f.org().ID, domain.RoleDeveloper))
		other := f.user(f.org().ID, domain.RoleDeveloper)
		dup := *k
		dup.ID, dup.OrganizationID, dup.UserID = domain.NewID(), other.OrganizationID, other.ID
		wantErr(t, "same hash", f.s.APIKeys().Create(f.ctx, &dup), store.ErrConflict)
	})

	t.Run("OwnerMustBelongToOrganization", func(t *testing.T) {
		f := setup(t, open)
		a, b := f.org(), f.org()
		u := f.user(a.ID, domain.RoleDeveloper)
		k := &domain.APIKey{ID: domain.NewID(), OrganizationID: b.ID, UserID: u.ID, Name: "k", Prefix: "pk_live_abcd",
			Hash: domain.RandomHex(32), CreatedAt: base}
		if err := f.s.APIKeys().Create(f.ctx, k); err == nil {
			t.Fatal("created a key for a user of another organization")
		}
	})

	t.Run("Lists", func(t *testing.T) {
		f := setup(t, open)
		o, other := f.org(), f.org()
		alice, bob := f.user(o.ID, domain.RoleDeveloper), f.user(o.ID, domain.RoleAdmin)
		k1, k2, k3 := f.apiKey(alice), f.apiKey(bob), f.apiKey(alice)
		f.apiKey(f.user(other.ID, domain.RoleAdmin))

		got, err := f.s.APIKeys().ListByUser(f.ctx, o.ID, alice.ID)
		must(t, err)
		equal(t, "ListByUser", ids(got, apiKeyID), []string{k1.ID, k3.ID})
		equal(t, "listed key", got[0], *k1)
		got, err = f.s.APIKeys().List(f.ctx, o.ID)
		must(t, err)
		equal(t, "List", ids(got, apiKeyID), []string{k1.ID, k2.ID, k3.ID})
		got, err = f.s.APIKeys().ListByUser(f.ctx, other.ID, alice.ID)
		must(t, err)
		equal(t, "ListByUser in another organization", len(got), 0)
	})

	t.Run("DeleteAndTouch", func(t *testing.T) {
		f := setup(t, open)
		o := f.org()
		k := f.apiKey(f.user(o.ID, domain.RoleDeveloper))
		used := base.Add(time.Hour)
		must(t, f.s.APIKeys().TouchLastUsed(f.ctx, o.ID, k.ID, used))
		got, err := f.s.APIKeys().GetByHash(f.ctx, k.Hash)
		must(t, err)
		k.LastUsedAt = &used
		equal(t, "after TouchLastUsed", got, k)

		must(t, f.s.APIKeys().Delete(f.ctx, o.ID, k.ID))
		_, err = f.s.APIKeys().GetByHash(f.ctx, k.Hash)
		wantErr(t, "GetByHash after Delete", err, store.ErrNotFound)
		wantErr(t, "Delete again", f.s.APIKeys().Delete(f.ctx, o.ID, k.ID), store.ErrNotFound)
		wantErr(t, "TouchLastUsed after Delete", f.s.APIKeys().TouchLastUsed(f.ctx, o.ID, k.ID, used), store.ErrNotFound)
	})

	t.Run("TenantIsolation", func(t *testing.T) {
		f := setup(t, open)
		o, other := f.org(), f.org()
		k := f.apiKey(f.user(o.ID, domain.RoleDeveloper))
		wantErr(t, "Delete", f.s.APIKeys().Delete(f.ctx, other.ID, k.ID), store.ErrNotFound)
		wantErr(t, "TouchLastUsed", f.s.APIKeys().TouchLastUsed(f.ctx, other.ID, k.ID, base.Add(time.Hour)),
			store.ErrNotFound)
		list, err := f.s.APIKeys().List(f.ctx, other.ID)
		must(t, err)
		equal(t, "List of another organization", len(list), 0)
		got, err := f.s.APIKeys().GetByHash(f.ctx, k.Hash)
		must(t, err)
		equal(t, "key after another organization's writes", got, k)
	})
}
