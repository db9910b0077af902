package storetest

import (
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"verdict/internal/domain"
	"verdict/internal/store"
)

func testOrganizations(t *testing.T, open Opener) {
	t.Run("CreateGet", func(t *testing.T) {
		f := setup(t, open)
		o := &domain.Organization{
			ID: domain.NewID(), Name: "Acme", Slug: "acme", Plan: domain.PlanTeam, AIAnalysisEnabled: true,
			Features: domain.Features{AIFeatures: domain.AIFeatures{AutomationPlanner: true}},
			Billing: domain.Billing{
				ProviderCustomerID: "cus_123", ProviderSubscriptionID: ptr("sub_456"), Status: domain.BillingPastDue,
				LastPaymentDate: ptr(base.Add(-time.Hour)), LastPaymentAmount: ptr(49.5),
				LastPaymentAttempt: ptr(base), CurrentPeriodStart: ptr(base.AddDate(0, -1, 0)),
				CurrentPeriodEnd: ptr(base.AddDate(0, 0, 3)), EventAt: ptr(base.Add(time.Second)),
			},
			StorageUsedBytes: 1 << 40, CreatedAt: base,
		}
		must(t, f.s.Organizations().Create(f.ctx, o))
		got, err := f.s.Organizations().Get(f.ctx, o.ID)
		must(t, err)
		equal(t, "Get", got, o)
		got, err = f.s.Organizations().GetByCustomerID(f.ctx, "cus_123")
		must(t, err)
		equal(t, "GetByCustomerID", got, o)

		plain := f.org()
		got, err = f.s.Organizations().Get(f.ctx, plain.ID)
		must(t, err)
		equal(t, "Get without billing or features", got, plain)
	})

	t.Run("NotFound", func(t *testing.T) {
		f := setup(t, open)
		f.org() // has no customer ID: must not match the empty one
		missing := domain.NewID()
		_, err := f.s.Organizations().Get(f.ctx, missing)
		wantErr(t, "Get", err, store.ErrNotFound)
		_, err = f.s.Organizations().GetByCustomerID(f.ctx, "cus_unknown")
		wantErr(t, "GetByCustomerID", err, store.ErrNotFound)
		_, err = f.s.Organizations().GetByCustomerID(f.ctx, "")
		wantErr(t, "GetByCustomerID empty", err, store.ErrNotFound)
		wantErr(t, "Lock", f.s.Organizations().Lock(f.ctx, missing), store.ErrNotFound)
		wantErr(t, "UpdateSettings", f.s.Organizations().UpdateSettings(f.ctx, missing, "X", true, domain.Features{}),
			store.ErrNotFound)
		wantErr(t, "UpdatePlan", f.s.Organizations().UpdatePlan(f.ctx, missing, domain.PlanTeam, domain.Billing{}),
			store.ErrNotFound)
		wantErr(t, "AddStorageUsed", f.s.Organizations().AddStorageUsed(f.ctx, missing, 1), store.ErrNotFound)
		wantErr(t, "SetAllowedImages", f.s.Organizations().SetAllowedImages(f.ctx, missing, []string{"x"}), store.ErrNotFound)
	})

	t.Run("AllowedImages", func(t *testing.T) {
		f := setup(t, open)
		o, other := f.org(), f.org()
		must(t, f.s.Organizations().SetAllowedImages(f.ctx, o.ID, []string{"registry.example.com/qa/*", "debian"}))
		o.AllowedImages = []string{"registry.example.com/qa/*", "debian"}
		got, err := f.s.Organizations().Get(f.ctx, o.ID)
		must(t, err)
		equal(t, "after SetAllowedImages", got, o)
		got, err = f.s.Organizations().Get(f.ctx, other.ID)
		must(t, err)
		equal(t, "another organization", got, other)
		must(t, f.s.Organizations().SetAllowedImages(f.ctx, o.ID, nil))
		got, err = f.s.Organizations().Get(f.ctx, o.ID)
		must(t, err)
		if got.AllowedImages != nil {
			t.Errorf("patterns not cleared: %q", got.AllowedImages)
		}
	})

	t.Run("Conflicts", func(t *testing.T) {
		f := setup(t, open)
		a, b := f.org(), f.org()
		wantErr(t, "same ID", f.s.Organizations().Create(f.ctx, &domain.Organization{ID: a.ID, Name: "X", Slug: "x",
			Plan: domain.PlanFree}), store.ErrConflict)
		must(t, f.s.Organizations().UpdatePlan(f.ctx, a.ID, domain.PlanTeam, domain.Billing{ProviderCustomerID: "cus_1"}))
		wantErr(t, "customer ID taken", f.s.Organizations().UpdatePlan(f.ctx, b.ID, domain.PlanTeam,
			domain.Billing{ProviderCustomerID: "cus_1"}), store.ErrConflict)
		wantErr(t, "customer ID taken at creation", f.s.Organizations().Create(f.ctx, &domain.Organization{
			ID: domain.NewID(), Name: "Y", Slug: "y", Plan: domain.PlanTeam,
			Billing: domain.Billing{ProviderCustomerID: "cus_1"}}), store.ErrConflict)
		got, err := f.s.Organizations().Get(f.ctx, b.ID)
		must(t, err)
		equal(t, "organization refused a taken customer ID", got, b)
	})

	t.Run("UpdateSettings", func(t *testing.T) {
		f := setup(t, open)
		o := f.org()
		features := domain.Features{AIFeatures: domain.AIFeatures{AutomationPlanner: true}}
		must(t, f.s.Organizations().UpdateSettings(f.ctx, o.ID, "Renamed", true, features))
		o.Name, o.AIAnalysisEnabled, o.Features = "Renamed", true, features
		got, err := f.s.Organizations().Get(f.ctx, o.ID)
		must(t, err)
		equal(t, "after UpdateSettings", got, o)
		must(t, f.s.Organizations().UpdateSettings(f.ctx, o.ID, "Renamed", false, domain.Features{}))
		got, err = f.s.Organizations().Get(f.ctx, o.ID)
		must(t, err)
		if got.AIAnalysisEnabled || got.Features.AIFeatures.AutomationPlanner {
			t.Errorf("flags not cleared: %+v", got)
		}
	})

	t.Run("UpdatePlan", func(t *testing.T) {
		f := setup(t, open)
		o := f.org()
		billing := domain.Billing{ProviderCustomerID: "cus_9", ProviderSubscriptionID: ptr("sub_9"),
			Status: domain.BillingActive, CurrentPeriodStart: ptr(base), CurrentPeriodEnd: ptr(base.AddDate(0, 1, 0))}
		must(t, f.s.Organizations().UpdatePlan(f.ctx, o.ID, domain.PlanEnterprise, billing))
		o.Plan, o.Billing = domain.PlanEnterprise, billing
		got, err := f.s.Organizations().GetByCustomerID(f.ctx, "cus_9")
		must(t, err)
		equal(t, "after UpdatePlan", got, o)

		canceled := domain.Billing{ProviderCustomerID: "cus_9", Status: domain.BillingCanceled}
		must(t, f.s.Organizations().UpdatePlan(f.ctx, o.ID, domain.PlanFree, canceled))
		got, err = f.s.Organizations().Get(f.ctx, o.ID)
		must(t, err)
		o.Plan, o.Billing = domain.PlanFree, canceled
		equal(t, "after cancellation", got, o)
	})

	t.Run("FindBySlug", func(t *testing.T) {
		f := setup(t, open)
		a, _ := f.org(), f.org()
		twin := &domain.Organization{ID: domain.NewID(), Name: "Twin", Slug: a.Slug, Plan: domain.PlanTeam,
			CreatedAt: a.CreatedAt.Add(time.Hour)}
		must(t, f.s.Organizations().Create(f.ctx, twin))
		got, err := f.s.Organizations().FindBySlug(f.ctx, a.Slug)
		must(t, err)
		if len(got) != 2 || got[0].ID != a.ID || got[1].ID != twin.ID {
			t.Fatalf("FindBySlug(%q) = %+v, want %s then %s", a.Slug, got, a.ID, twin.ID)
		}
		none, err := f.s.Organizations().FindBySlug(f.ctx, "no-such-slug")
		must(t, err)
		if len(none) != 0 {
			t.Fatalf("FindBySlug of an unknown slug: %+v", none)
		}
	})

	t.Run("AddStorageUsed", func(t *testing.T) {
		f := setup(t, open)
		o, other := f.org(), f.org()
		storage := func(id string) int64 {
			t.Helper()
			got, err := f.s.Organizations().Get(f.ctx, id)
			must(t, err)
			return got.StorageUsedBytes
		}
		must(t, f.s.Organizations().AddStorageUsed(f.ctx, o.ID, 100))
		must(t, f.s.Organizations().AddStorageUsed(f.ctx, o.ID, -30))
		equal(t, "100 - 30", storage(o.ID), int64(70))
		must(t, f.s.Organizations().AddStorageUsed(f.ctx, o.ID, -1000))
		equal(t, "released more than used", storage(o.ID), int64(0))
		equal(t, "other organization", storage(other.ID), int64(0))
	})

	t.Run("LockSerialisesCheckThenWrite", func(t *testing.T) {
		// Two admins each demote themselves unless they are the last admin. Without the lock
		// both could count two admins and leave none.
		f := setup(t, open)
		o := f.org()
		admins := []*domain.User{f.user(o.ID, domain.RoleAdmin), f.user(o.ID, domain.RoleAdmin)}
		start := make(chan struct{})
		errs := make([]error, len(admins))
		var wg sync.WaitGroup
		for i, a := range admins {
			wg.Go(func() {
				<-start
				errs[i] = f.s.InTx(f.ctx, func(tx store.Store) error {
					if err := tx.Organizations().Lock(f.ctx, o.ID); err != nil {
						return err
					}
					n, err := tx.Users().CountActiveByRole(f.ctx, o.ID, domain.RoleAdmin)
					if err != nil {
						return err
					}
					if n <= 1 {
						return store.ErrGuard
					}
					time.Sleep(50 * time.Millisecond) // let the other transaction try to read now
					return tx.Users().UpdateRole(f.ctx, o.ID, a.ID, domain.RoleDeveloper)
				})
			})
		}
		close(start)
		wg.Wait()
		won, guarded := 0, 0
		for _, err := range errs {
			switch {
			case err == nil:
				won++
			case errors.Is(err, store.ErrGuard):
				guarded++
			default:
				t.Errorf("transaction failed: %v", err)
			}
		}
		if won != 1 || guarded != 1 {
			t.Errorf("%d transactions demoted, %d were refused; want exactly one of each", won, guarded)
		}
		n, err := f.s.Users().CountActiveByRole(f.ctx, o.ID, domain.RoleAdmin)
		must(t, err)
		equal(t, "admins left", n, 1)
	})

	t.Run("ConcurrentReadModifyWrite", func(t *testing.T) {
		// Transactions that read then write never fail for lock contention, and under Lock
		// none loses another's update.
		f := setup(t, open)
		o := f.org()
		must(t, f.s.Organizations().UpdateSettings(f.ctx, o.ID, "0", false, domain.Features{}))
		const workers, rounds = 4, 10
		var wg sync.WaitGroup
		errs := make(chan error, workers*rounds)
		for range workers {
			wg.Go(func() {
				for range rounds {
					errs <- f.s.InTx(f.ctx, func(tx store.Store) error {
						if err := tx.Organizations().Lock(f.ctx, o.ID); err != nil {
							return err
						}
						cur, err := tx.Organizations().Get(f.ctx, o.ID)
						if err != nil {
							return err
						}
						n, err := strconv.Atoi(cur.Name)
						if err != nil {
							return err
						}
						return tx.Organizations().UpdateSettings(f.ctx, o.ID, strconv.Itoa(n+1), false, domain.Features{})
					})
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Errorf("transaction failed: %v", err)
			}
		}
		got, err := f.s.Organizations().Get(f.ctx, o.ID)
		must(t, err)
		equal(t, "counter", got.Name, strconv.Itoa(workers*rounds))
	})
}
