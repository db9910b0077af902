package storetest

import (
	"errors"
	"testing"

	"verdict/internal/domain"
	"verdict/internal/store"
)

func testSSO(t *testing.T, open Opener) {
	t.Run("PutGetByDomain", func(t *testing.T) {
		f := setup(t, open)
		o, other := f.org(), f.org()
		if _, err := f.s.SSO().Get(f.ctx, o.ID); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Get before Put: %v", err)
		}
		c := &domain.SSOConfig{OrganizationID: o.ID, Issuer: "https://id.example.com", ClientID: "verdict",
			ClientSecretCipher: "sealed", Domains: []string{"example.com", "example.org"}, DefaultRole: domain.RoleViewer,
			Required: true, UpdatedAt: base}
		must(t, f.s.SSO().Put(f.ctx, c))
		got, err := f.s.SSO().Get(f.ctx, o.ID)
		must(t, err)
		equal(t, "Get", *got, *c)
		got, err = f.s.SSO().ByDomain(f.ctx, "example.org")
		must(t, err)
		equal(t, "ByDomain", got.OrganizationID, o.ID)
		if _, err := f.s.SSO().ByDomain(f.ctx, "example.net"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("ByDomain of an unclaimed domain: %v", err)
		}

		// Another organization cannot claim a domain already claimed; nothing of its change stays.
		err = f.s.SSO().Put(f.ctx, &domain.SSOConfig{OrganizationID: other.ID, Issuer: "https://other", ClientID: "x",
			Domains: []string{"other.com", "example.com"}, DefaultRole: domain.RoleViewer, UpdatedAt: base})
		if !errors.Is(err, store.ErrConflict) {
			t.Fatalf("a domain claimed twice: %v", err)
		}
		if _, err := f.s.SSO().Get(f.ctx, other.ID); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("the refused change was kept: %v", err)
		}
		if _, err := f.s.SSO().ByDomain(f.ctx, "other.com"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("the refused change's domain was kept: %v", err)
		}

		// Replacing releases the domains dropped.
		c.Domains, c.Required = []string{"example.org"}, false
		must(t, f.s.SSO().Put(f.ctx, c))
		if _, err := f.s.SSO().ByDomain(f.ctx, "example.com"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a dropped domain still claimed: %v", err)
		}
		got, err = f.s.SSO().Get(f.ctx, o.ID)
		must(t, err)
		equal(t, "replaced", *got, *c)
	})
}
