package billing_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
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
			svc := billing.New(billing.Deps{Store: failingStore{st, &fail}, WebhookSecret: "whsec_1", Renderer: renderer,
				Prices: map[domain.Plan]string{domain.PlanTeam: "price_team"}, Clock: clock.Now,
				Log: slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))})

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

// A failed payment is logged as a warning for manual review, and an event for an unknown
// customer as an error naming the customer.
func TestWebhookLogsForOperators(t *testing.T) {
	ctx := context.Background()
	st, err := sqlstore.Open(ctx, "", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	org := &domain.Organization{ID: domain.NewID(), Name: "Log Co", Slug: "log-co", Plan: domain.PlanTeam,
		Billing: domain.Billing{ProviderCustomerID: "cus_log"}, CreatedAt: now}
	if err := st.Organizations().Create(ctx, org); err != nil {
		t.Fatal(err)
	}
	renderer, err := mail.NewRenderer("http://verdict.test")
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	svc := billing.New(billing.Deps{Store: st, WebhookSecret: "whsec_1", Renderer: renderer, Clock: func() time.Time { return now },
		Log: slog.New(slog.NewTextHandler(&logs, nil))})
	deliver := func(id, customer string) {
		t.Helper()
		payload, _ := json.Marshal(map[string]any{"id": id, "object": "event", "type": "invoice.payment_failed",
			"created": now.Unix(), "data": map[string]any{"object": map[string]any{"id": "in_1", "object": "invoice",
				"customer": customer, "amount_due": 9900, "currency": "usd", "attempt_count": 2}}})
		signed := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: payload, Secret: "whsec_1", Timestamp: now})
		if _, err := svc.HandleWebhook(ctx, payload, signed.Header); err != nil {
			t.Fatal(err)
		}
	}
	deliver("evt_failed", "cus_log")
	deliver("evt_nobody", "cus_nobody")
	var warn, notFound bool
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "level=WARN") && strings.Contains(line, "manual review") &&
			strings.Contains(line, "org="+org.ID) && strings.Contains(line, "invoice=in_1") {
			warn = true
		}
		if strings.Contains(line, "level=ERROR") && strings.Contains(line, "Organization not found for customer cus_nobody") &&
			strings.Contains(line, "event=evt_nobody") {
			notFound = true
		}
	}
	if !warn || !notFound {
		t.Fatalf("warning logged %v, not-found error logged %v; log:\n%s", warn, notFound, logs.String())
	}
	if strings.Contains(logs.String(), "whsec_1") {
		t.Fatal("the signing secret was logged")
	}
}
