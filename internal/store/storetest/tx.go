package storetest

import (
	"errors"
	"testing"

	"verdict/internal/domain"
	"verdict/internal/store"
)

func testTx(t *testing.T, open Opener) {
	t.Run("PingDialect", func(t *testing.T) {
		f := setup(t, open)
		must(t, f.s.Ping(f.ctx))
		if d := f.s.Dialect(); d != "sqlite" && d != "postgres" {
			t.Errorf("Dialect() = %q", d)
		}
	})

	t.Run("Commit", func(t *testing.T) {
		f := setup(t, open)
		o := f.org()
		var u *domain.User
		must(t, f.s.InTx(f.ctx, func(tx store.Store) error {
			u = &domain.User{ID: domain.NewID(), OrganizationID: o.ID, Email: "a@example.com", Role: domain.RoleAdmin,
				Status: domain.UserActive, CreatedAt: base}
			if err := tx.Users().Create(f.ctx, u); err != nil {
				return err
			}
			// The transaction sees its own write.
			_, err := tx.Users().Get(f.ctx, o.ID, u.ID)
			return err
		}))
		equal(t, "committed user", f.getUser(o.ID, u.ID), u)
	})

	t.Run("RollbackOnError", func(t *testing.T) {
		f := setup(t, open)
		o := f.org()
		boom := errors.New("boom")
		u := &domain.User{ID: domain.NewID(), OrganizationID: o.ID, Email: "a@example.com", Role: domain.RoleAdmin,
			Status: domain.UserActive, CreatedAt: base}
		err := f.s.InTx(f.ctx, func(tx store.Store) error {
			must(t, tx.Users().Create(f.ctx, u))
			must(t, tx.Organizations().AddStorageUsed(f.ctx, o.ID, 10))
			return boom
		})
		wantErr(t, "InTx", err, boom)
		_, err = f.s.Users().Get(f.ctx, o.ID, u.ID)
		wantErr(t, "user created in the rolled-back transaction", err, store.ErrNotFound)
		got, err := f.s.Organizations().Get(f.ctx, o.ID)
		must(t, err)
		equal(t, "storage after rollback", got.StorageUsedBytes, int64(0))
	})

	t.Run("RollbackOnPanic", func(t *testing.T) {
		f := setup(t, open)
		o := f.org()
		func() {
			defer func() {
				if recover() == nil {
					t.Error("InTx swallowed the panic")
				}
			}()
			_ = f.s.InTx(f.ctx, func(tx store.Store) error {
				must(t, tx.Organizations().AddStorageUsed(f.ctx, o.ID, 10))
				panic("boom")
			})
		}()
		got, err := f.s.Organizations().Get(f.ctx, o.ID)
		must(t, err)
		equal(t, "storage after panic", got.StorageUsedBytes, int64(0))
		must(t, f.s.Organizations().AddStorageUsed(f.ctx, o.ID, 1)) // the store still works
	})

	t.Run("NestedReusesTransaction", func(t *testing.T) {
		f := setup(t, open)
		o := f.org()
		boom := errors.New("boom")
		err := f.s.InTx(f.ctx, func(tx store.Store) error {
			must(t, tx.InTx(f.ctx, func(inner store.Store) error {
				return inner.Organizations().AddStorageUsed(f.ctx, o.ID, 10)
			}))
			got, err := tx.Organizations().Get(f.ctx, o.ID)
			must(t, err)
			equal(t, "outer transaction sees the inner write", got.StorageUsedBytes, int64(10))
			return boom
		})
		wantErr(t, "InTx", err, boom)
		got, err := f.s.Organizations().Get(f.ctx, o.ID)
		must(t, err)
		equal(t, "inner write rolled back with the outer transaction", got.StorageUsedBytes, int64(0))
	})

	t.Run("ConflictInsideTransaction", func(t *testing.T) {
		f := setup(t, open)
		o := f.org()
		u := f.user(o.ID, domain.RoleAdmin)
		err := f.s.InTx(f.ctx, func(tx store.Store) error {
			dup := *u
			dup.ID = domain.NewID()
			return tx.Users().Create(f.ctx, &dup)
		})
		wantErr(t, "InTx", err, store.ErrConflict)
	})
}
