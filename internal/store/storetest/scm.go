package storetest

import (
	"testing"
	"time"

	"verdict/internal/domain"
	"verdict/internal/store"
)

// testSourceControl covers projects' repository and source-control hooks (the organization's
// own, gone with their project), the deliveries a hook took (once each, inside a transaction
// too, pruned by age) and the pull-request comments kept per project, repository and request.
func testSourceControl(t *testing.T, open Opener) {
	f := setup(t, open)
	o, other := f.org(), f.org()
	p := f.project(o.ID, "Shop")
	p.Repository = "acme/web/shop"
	must(t, f.s.Projects().Update(f.ctx, p))
	got, err := f.s.Projects().Get(f.ctx, o.ID, p.ID)
	must(t, err)
	equal(t, "repository", got.Repository, "acme/web/shop")

	sc := f.s.SourceControl()
	h := &domain.Hook{OrganizationID: o.ID, ProjectID: p.ID, Provider: domain.ProviderGitHub, SecretCipher: "sealed",
		Branches: []string{"main", "release/*"}, Events: []string{"push"}, BaseURLTemplate: "https://pr-{pr}.x", CreatedAt: base}
	must(t, sc.CreateHook(f.ctx, h))
	wantErr(t, "a hook on another organization's project", sc.CreateHook(f.ctx, &domain.Hook{OrganizationID: other.ID,
		ProjectID: p.ID, Provider: domain.ProviderGitHub, SecretCipher: "x", CreatedAt: base}), store.ErrNotFound)
	bare := &domain.Hook{OrganizationID: o.ID, ProjectID: p.ID, Provider: domain.ProviderGitLab, SecretCipher: "s2", CreatedAt: base.Add(time.Second)}
	must(t, sc.CreateHook(f.ctx, bare))

	g, err := sc.GetHook(f.ctx, o.ID, p.ID, h.ID)
	must(t, err)
	equal(t, "GetHook", g, h)
	_, err = sc.GetHook(f.ctx, other.ID, p.ID, h.ID)
	wantErr(t, "GetHook of another organization", err, store.ErrNotFound)
	g, err = sc.FindHook(f.ctx, bare.ID)
	must(t, err)
	equal(t, "FindHook: no globs or events is empty lists", len(g.Branches)+len(g.Events), 0)
	list, err := sc.ListHooks(f.ctx, o.ID, p.ID)
	must(t, err)
	equal(t, "ListHooks", len(list), 2)
	equal(t, "ListHooks order", list[0].ID, h.ID)
	list, err = sc.ListHooks(f.ctx, other.ID, p.ID)
	must(t, err)
	equal(t, "ListHooks of another organization", len(list), 0)

	// Deliveries: once each, and a duplicate inside a transaction leaves it usable.
	must(t, sc.RecordDelivery(f.ctx, h.ID, "d1", base))
	must(t, f.s.InTx(f.ctx, func(tx store.Store) error {
		wantErr(t, "a delivery again", tx.SourceControl().RecordDelivery(f.ctx, h.ID, "d1", base), store.ErrConflict)
		return tx.SourceControl().RecordDelivery(f.ctx, h.ID, "d2", base.Add(48*time.Hour))
	}))
	must(t, sc.RecordDelivery(f.ctx, bare.ID, "d1", base)) // another hook's
	n, err := sc.PruneDeliveries(f.ctx, base.Add(time.Hour))
	must(t, err)
	equal(t, "pruned", n, 2)
	must(t, sc.RecordDelivery(f.ctx, h.ID, "d1", base.Add(72*time.Hour)))
	must(t, sc.ForgetDelivery(f.ctx, h.ID, "d1"))
	must(t, sc.RecordDelivery(f.ctx, h.ID, "d1", base.Add(72*time.Hour)))

	// Comments.
	_, err = sc.Comment(f.ctx, o.ID, p.ID, "github", "acme/shop", 7)
	wantErr(t, "no comment yet", err, store.ErrNotFound)
	must(t, sc.PutComment(f.ctx, o.ID, p.ID, "github", "acme/shop", 7, "101", base))
	must(t, sc.PutComment(f.ctx, o.ID, p.ID, "github", "acme/shop", 7, "102", base.Add(time.Minute)))
	id, err := sc.Comment(f.ctx, o.ID, p.ID, "github", "acme/shop", 7)
	must(t, err)
	equal(t, "the comment replaced", id, "102")
	_, err = sc.Comment(f.ctx, other.ID, p.ID, "github", "acme/shop", 7)
	wantErr(t, "another organization's comment", err, store.ErrNotFound)

	// Deleting: another organization cannot; the project's deletion takes its hooks.
	wantErr(t, "DeleteHook of another organization", sc.DeleteHook(f.ctx, other.ID, p.ID, h.ID), store.ErrNotFound)
	must(t, sc.DeleteHook(f.ctx, o.ID, p.ID, h.ID))
	wantErr(t, "DeleteHook twice", sc.DeleteHook(f.ctx, o.ID, p.ID, h.ID), store.ErrNotFound)
	must(t, f.s.Projects().Delete(f.ctx, o.ID, p.ID))
	_, err = sc.FindHook(f.ctx, bare.ID)
	wantErr(t, "a hook of a deleted project", err, store.ErrNotFound)
}
