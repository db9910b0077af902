package billing_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v86/webhook"

	"verdict/internal/billing"
	"verdict/internal/domain"
	"verdict/internal/mail"
	"verdict/internal/store"
	"verdict/internal/store/sqlstore"
	"verdict/internal/testenv"
)

// failingStore makes the organization's update fail while fail is set, as a crash between
// recording the event and applying it would.
type failingStore struct {
	store.Store
	fail *atomic.Bool
}

func (s failingStore) Organizations() store.OrganizationRepo {
	return failingOrgs{s.Store.Organizations(), s.fail}
}

func (s failingStore) InTx(ctx context.Context, fn func(tx store.Store) error) error {
	return s.Store.InTx(ctx, func(tx store.Store) error { return fn(failingStore{tx, s.fail}) })
}

type failingOrgs struct {
	store.OrganizationRepo
	fail *atomic.Bool
}

var errCrash = errors.New("crash")

func (o failingOrgs) UpdatePlan(ctx context.Context, id string, plan domain.Plan, b domain.Billing) error {
	if o.fail.Load() {
		return errCrash
	}
	return o.OrganizationRepo.UpdatePlan(ctx, id, plan, b)
}

// A failure while an event is applied rolls back its log entry with it: the provider's retry
// then applies the event, once, and a further retry is a duplicate.
func TestWebhookFailureLeavesNothingSoTheRetryApplies(t *testing.T) {
	ctx := context.Background()
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			url := ""
			if dialect == "postgres" {
				url = testenv.PostgresDB(t)
			}
			st, err := sqlstore.Open(ctx, url, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if err := st.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			clock := testenv.NewClock(time.Date(2026, 3, 10, 9, 0, 0, 0, time.UTC))
			org := &domain.Organization{ID: domain.NewID(), Name: "Crash Co", Slug: "crash-co", Plan: domain.PlanFree,
				Billing: domain.Billing{ProviderCustomerID: "cus_crash"}, CreatedAt: clock.Now()}
			if err := st.Organizations().Create(ctx, org); err != nil {
				t.Fatal(err)
			}
			renderer, err := mail.NewRenderer("http://verdict.test")
			if err != nil {
				t.Fatal(err)
			}
			var fail atomic.Bool
			svc := &billing.Service{Store: failingStore{st, &fail}, WebhookSecret: "whsec_1", Renderer: renderer,
				Prices: map[domain.Plan]string{domain.PlanTeam: "price_team"}, Clock: clock.Now,
				Log: slog.New(slog.NewTextHandler(io.Discard, nil))}

			payload, _ := json.Marshal(map[string]any{"id": "evt_1", "object": "event", "type": "customer.subscription.created",
				"created": clock.Now().Unix(), "data": map[string]any{"object": map[string]any{"id": "sub_1", "object": "subscription",
					"customer": "cus_crash", "items": map[string]any{"data": []any{map[string]any{"price": map[string]any{"id": "price_team"}}}}}}})
			deliver := func() (*billing.WebhookResult, error) {
				signed := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: payload, Secret: "whsec_1", Timestamp: time.Now()})
				return svc.HandleWebhook(ctx, payload, signed.Header)
			}

			fail.Store(true)
			if _, err := deliver(); !errors.Is(err, errCrash) {
				t.Fatalf("delivery during the failure: %v", err)
			}
			if _, err := st.BillingEvents().Get(ctx, "evt_1"); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("the failed delivery left a log entry: %v", err)
			}
			fail.Store(false)
			if res, err := deliver(); err != nil || res.Duplicate {
				t.Fatalf("retry: %+v %v", res, err)
			}
			got, err := st.Organizations().Get(ctx, org.ID)
			if err != nil || got.Plan != domain.PlanTeam || got.Billing.ProviderSubscriptionID == nil {
				t.Fatalf("after the retry: %+v %v", got, err)
			}
			if res, err := deliver(); err != nil || !res.Duplicate {
				t.Fatalf("second retry: %+v %v", res, err)
			}
		})
	}
}
