package billing_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v86/webhook"

	"verdict/internal/billing"
	"verdict/internal/domain"
	"verdict/internal/identity"
	"verdict/internal/mail"
	"verdict/internal/store"
	"verdict/internal/store/sqlstore"
	"verdict/internal/store/sqlstore/sqlitetest"
	"verdict/internal/testenv"
)

// The service's rules on the real store (a temporary SQLite file), without the HTTP layer or
// stripe-mock: the fast tier (go test -short) runs them. The provider's API is a recording
// stand-in here; the end-to-end tests in internal/app drive stripe-mock and both databases.

const (
	secret          = "whsec_plans"
	priceTeam       = "price_team"
	priceEnterprise = "price_enterprise"
)

type fixture struct {
	t        *testing.T
	ctx      context.Context
	st       *sqlstore.Store
	clock    *testenv.Clock
	provider *provider
	alerts   *billing.Alerts
	svc      *billing.Service
	org      *domain.Organization
	admin    *identity.Principal
}

func newFixture(t *testing.T, plan domain.Plan) *fixture {
	t.Helper()
	f := &fixture{t: t, ctx: context.Background(), st: sqlitetest.Open(t), provider: &provider{},
		clock: testenv.NewClock(time.Date(2026, 6, 10, 12, 0, 0, 0, time.UTC))}
	renderer, err := mail.NewRenderer("http://verdict.test")
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.DiscardHandler)
	f.alerts = billing.NewAlerts(billing.AlertsDeps{Renderer: renderer, Clock: f.clock.Now, Log: quiet})
	f.svc = billing.New(billing.Deps{Store: f.st, Provider: f.provider, WebhookSecret: secret, Renderer: renderer,
		Prices:    map[domain.Plan]string{domain.PlanTeam: priceTeam, domain.PlanEnterprise: priceEnterprise},
		PublicURL: "http://verdict.test", Alerts: f.alerts, Clock: f.clock.Now, Log: quiet})
	f.org = sqlitetest.Org(t, f.st, "Plan Co", plan, f.clock.Now())
	f.admin = sqlitetest.As(sqlitetest.Member(t, f.st, f.org, "admin@plan.test", domain.RoleAdmin))
	return f
}

// provider stands in for the payment provider's API and records the calls.
type provider struct {
	mu        sync.Mutex
	customers []string // the organization of each CreateCustomer
	checkouts []billing.CheckoutRequest
	portals   []string
	cancelled []string // the subscription of each CancelSubscription
	fail      error
	customer  string // the ID CreateCustomer answers; "": cus_<org>
}

func (p *provider) CreateCustomer(_ context.Context, orgID, _, _ string) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fail != nil {
		return "", p.fail
	}
	p.customers = append(p.customers, orgID)
	if p.customer != "" {
		return p.customer, nil
	}
	return "cus_" + orgID, nil
}

func (p *provider) CreateCheckout(_ context.Context, c billing.CheckoutRequest) (string, string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fail != nil {
		return "", "", p.fail
	}
	p.checkouts = append(p.checkouts, c)
	return "https://pay.test/c/cs_1", "cs_1", nil
}

func (p *provider) CreatePortal(_ context.Context, customer, returnURL string) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.portals = append(p.portals, customer+" "+returnURL)
	return "https://pay.test/p/" + customer, nil
}

func (p *provider) CancelSubscription(_ context.Context, subscriptionID string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fail != nil {
		return p.fail
	}
	p.cancelled = append(p.cancelled, subscriptionID)
	return nil
}

// event is a provider event as delivered to the webhook.
func event(id, typ string, created time.Time, object map[string]any) []byte {
	b, err := json.Marshal(map[string]any{"id": id, "object": "event", "created": created.Unix(), "type": typ,
		"data": map[string]any{"object": object}})
	if err != nil {
		panic(err)
	}
	return b
}

func subscription(id, customer, price string, start time.Time) map[string]any {
	return map[string]any{"id": id, "object": "subscription", "customer": customer, "status": "active",
		"metadata": map[string]any{}, "items": map[string]any{"object": "list", "data": []any{map[string]any{
			"id": "si_" + id, "price": map[string]any{"id": price},
			"current_period_start": start.Unix(), "current_period_end": start.AddDate(0, 1, 0).Unix()}}}}
}

func invoice(id, customer string, amount int64, paidAt time.Time) map[string]any {
	inv := map[string]any{"id": id, "object": "invoice", "customer": customer, "currency": "usd",
		"amount_due": amount, "amount_paid": 0, "attempt_count": 1}
	if !paidAt.IsZero() {
		inv["amount_paid"] = amount
		inv["status_transitions"] = map[string]any{"paid_at": paidAt.Unix()}
	}
	return inv
}

// deliver hands the webhook a body signed now with the endpoint's secret.
func (f *fixture) deliver(body []byte) (*billing.WebhookResult, error) {
	signed := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: secret, Timestamp: time.Now()})
	return f.svc.HandleWebhook(f.ctx, body, signed.Header)
}

// apply delivers an event that must be processed (not a duplicate) and returns the result.
func (f *fixture) apply(body []byte) *billing.WebhookResult {
	f.t.Helper()
	res, err := f.deliver(body)
	if err != nil || res.Duplicate {
		f.t.Fatalf("delivery: %+v %v", res, err)
	}
	return res
}

func (f *fixture) stored() *domain.Organization {
	f.t.Helper()
	o, err := f.st.Organizations().Get(f.ctx, f.org.ID)
	if err != nil {
		f.t.Fatal(err)
	}
	return o
}

func (f *fixture) linkCustomer(customer string) {
	f.t.Helper()
	o := f.stored()
	o.Billing.ProviderCustomerID = customer
	if err := f.st.Organizations().UpdatePlan(f.ctx, o.ID, o.Plan, o.Billing); err != nil {
		f.t.Fatal(err)
	}
}

// subjects are the outbox's subjects containing s, each with its recipients.
func (f *fixture) subjects(s string) []string {
	f.t.Helper()
	var out []string
	for _, m := range sqlitetest.Mails(f.t, f.st) {
		if strings.Contains(m.Subject, s) {
			out = append(out, m.Subject+" → "+strings.Join(m.To, ","))
		}
	}
	return out
}

// A delivery is verified over its raw body before anything is read or recorded.
func TestWebhookVerification(t *testing.T) {
	f := newFixture(t, domain.PlanFree)
	body := event("evt_1", billing.EventPaymentSucceeded, f.clock.Now(), invoice("in_1", "cus_x", 100, f.clock.Now()))
	_, err := f.svc.HandleWebhook(f.ctx, body, "")
	testenv.WantError(t, err, 400, "Missing signature", "The Stripe-Signature header is required")
	for _, c := range []struct {
		header, msg string
	}{
		{"garbage", "The Stripe-Signature header is malformed"},
		{webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: "whsec_other", Timestamp: time.Now()}).Header,
			"No signature matches the body and the signing secret"},
		{webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: secret, Timestamp: time.Now().Add(-6 * time.Minute)}).Header,
			"The signature's timestamp is older than 5 minutes"},
	} {
		_, err := f.svc.HandleWebhook(f.ctx, body, c.header)
		testenv.WantError(t, err, 400, "Invalid signature", c.msg)
	}
	// A body changed after signing fails too.
	signed := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: secret, Timestamp: time.Now()})
	_, err = f.svc.HandleWebhook(f.ctx, []byte(strings.Replace(string(body), "cus_x", "cus_y", 1)), signed.Header)
	testenv.WantError(t, err, 400, "Invalid signature", "No signature matches")
	_, err = f.deliver([]byte(`{"object":"event","type":"x","data":{"object":{}}}`))
	testenv.WantError(t, err, 400, "Invalid payload", "The event has no id or type")
	if _, err := f.st.BillingEvents().Get(f.ctx, "evt_1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a refused delivery was recorded: %v", err)
	}

	off := billing.New(billing.Deps{Store: f.st})
	_, err = off.HandleWebhook(f.ctx, body, signed.Header)
	testenv.WantError(t, err, 503, "Webhook not configured", "STRIPE_WEBHOOK_SECRET is not set")
}

// Subscription events move the organization between plans, each event once, never rolled back
// by an older one; payments set the billing status and mail the admins; a canceled
// subscription returns the organization to the free plan.
func TestPlanChangesByEvents(t *testing.T) {
	f := newFixture(t, domain.PlanFree)
	sqlitetest.Member(t, f.st, f.org, "dev@plan.test", domain.RoleDeveloper)
	f.linkCustomer("cus_1")
	t0 := f.clock.Now().Add(-time.Hour).Truncate(time.Second)

	created := event("evt_created", billing.EventSubscriptionCreated, t0, subscription("sub_1", "cus_1", priceTeam, t0))
	if res := f.apply(created); res.Ignored || res.Failed {
		t.Fatalf("created: %+v", res)
	}
	o := f.stored()
	if o.Plan != domain.PlanTeam || o.Billing.ProviderSubscriptionID == nil || *o.Billing.ProviderSubscriptionID != "sub_1" ||
		o.Billing.Status != domain.BillingActive || o.Billing.CurrentPeriodStart == nil || !o.Billing.CurrentPeriodStart.Equal(t0) {
		t.Fatalf("after created: %s %+v", o.Plan, o.Billing)
	}
	// The same event again is a duplicate and changes nothing.
	if res, err := f.deliver(created); err != nil || !res.Duplicate {
		t.Fatalf("redelivery: %+v %v", res, err)
	}
	if e, err := f.st.BillingEvents().Get(f.ctx, "evt_created"); err != nil || e.Status != store.EventSuccess || e.OrganizationID != f.org.ID {
		t.Fatalf("log entry: %+v %v", e, err)
	}

	f.apply(event("evt_up", billing.EventSubscriptionUpdated, t0.Add(2*time.Minute), subscription("sub_1", "cus_1", priceEnterprise, t0)))
	if o := f.stored(); o.Plan != domain.PlanEnterprise {
		t.Fatalf("after the upgrade: %s", o.Plan)
	}
	// An older update delivered late is recorded without effect.
	if res := f.apply(event("evt_old", billing.EventSubscriptionUpdated, t0.Add(time.Minute), subscription("sub_1", "cus_1", priceTeam, t0))); !res.Ignored {
		t.Fatalf("older update: %+v", res)
	}
	// So is one about another subscription of the customer.
	if res := f.apply(event("evt_other", billing.EventSubscriptionUpdated, t0.Add(3*time.Minute), subscription("sub_2", "cus_1", priceTeam, t0))); !res.Ignored {
		t.Fatalf("another subscription: %+v", res)
	}
	if o := f.stored(); o.Plan != domain.PlanEnterprise {
		t.Fatalf("a late or foreign event moved the plan to %s", o.Plan)
	}
	// A price that is no plan's is an error in the log, acknowledged, and changes nothing.
	res := f.apply(event("evt_price", billing.EventSubscriptionUpdated, t0.Add(4*time.Minute), subscription("sub_1", "cus_1", "price_unknown", t0)))
	if !res.Failed {
		t.Fatalf("unknown price: %+v", res)
	}
	if e, _ := f.st.BillingEvents().Get(f.ctx, "evt_price"); e.Status != store.EventError || !strings.Contains(e.Error, `price "price_unknown" is not a configured plan price`) {
		t.Fatalf("log entry: %+v", e)
	}
	// Checkout writes the plan into the subscription's metadata: it names the plan when the
	// price is not configured (any more).
	meta := subscription("sub_1", "cus_1", "price_old_team", t0)
	meta["metadata"] = map[string]any{"plan": "team"}
	f.apply(event("evt_meta", billing.EventSubscriptionUpdated, t0.Add(5*time.Minute), meta))
	if o := f.stored(); o.Plan != domain.PlanTeam {
		t.Fatalf("plan from metadata: %s", o.Plan)
	}

	// A failed payment: past due, a mail to the admins (not the developer); a later success
	// makes it active again with a receipt; the failure delivered after it changes nothing.
	f.apply(event("evt_fail", billing.EventPaymentFailed, t0.Add(10*time.Minute), invoice("in_1", "cus_1", 9900, time.Time{})))
	if o := f.stored(); o.Billing.Status != domain.BillingPastDue || o.Billing.LastPaymentAttempt == nil {
		t.Fatalf("after the failure: %+v", o.Billing)
	}
	if got := f.subjects("failed"); !slices.Equal(got, []string{"Action needed: payment of 99.00 USD for Plan Co failed → admin@plan.test"}) {
		t.Fatalf("failure mails %q", got)
	}
	paid := t0.Add(20 * time.Minute)
	f.apply(event("evt_paid", billing.EventPaymentSucceeded, paid, invoice("in_2", "cus_1", 9900, paid)))
	o = f.stored()
	if o.Billing.Status != domain.BillingActive || o.Billing.LastPaymentAmount == nil || *o.Billing.LastPaymentAmount != 99 ||
		!o.Billing.LastPaymentDate.Equal(paid) {
		t.Fatalf("after the payment: %+v", o.Billing)
	}
	f.apply(event("evt_fail_late", billing.EventPaymentFailed, t0.Add(15*time.Minute), invoice("in_1", "cus_1", 9900, time.Time{})))
	if o := f.stored(); o.Billing.Status != domain.BillingActive {
		t.Fatalf("a late failure notice set %s", o.Billing.Status)
	}
	if got := f.subjects("received"); len(got) != 1 || got[0] != "Payment of 99.00 USD received for Plan Co → admin@plan.test" {
		t.Fatalf("receipts %q", got)
	}

	// Canceled: back to free, without subscription or period.
	f.apply(event("evt_del", billing.EventSubscriptionDeleted, t0.Add(30*time.Minute), subscription("sub_1", "cus_1", priceTeam, t0)))
	o = f.stored()
	if o.Plan != domain.PlanFree || o.Billing.ProviderSubscriptionID != nil || o.Billing.Status != domain.BillingCanceled ||
		o.Billing.CurrentPeriodStart != nil || o.Billing.ProviderCustomerID != "cus_1" {
		t.Fatalf("after the cancel: %s %+v", o.Plan, o.Billing)
	}
	if got := f.subjects("was canceled"); len(got) != 1 {
		t.Fatalf("cancel mails %q", got)
	}

	// Events of unknown customers and of unhandled types are logged, not applied.
	if res := f.apply(event("evt_nobody", billing.EventPaymentSucceeded, t0, invoice("in_9", "cus_nobody", 100, t0))); !res.Failed {
		t.Fatalf("unknown customer: %+v", res)
	}
	if e, _ := f.st.BillingEvents().Get(f.ctx, "evt_nobody"); e.Error != "Organization not found for customer cus_nobody" || e.OrganizationID != "" {
		t.Fatalf("log entry: %+v", e)
	}
	if res := f.apply(event("evt_refund", "charge.refunded", t0, map[string]any{"id": "ch_1", "object": "charge"})); !res.Ignored {
		t.Fatalf("unhandled type: %+v", res)
	}

	// The webhook log is the admin's, newest first, their organization's only.
	events, err := f.svc.Events(f.ctx, f.admin, 50)
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 10 || events[0].EventID != "evt_del" {
		var ids []string
		for _, e := range events {
			ids = append(ids, e.EventID)
		}
		t.Fatalf("events %v", ids)
	}
	for _, limit := range []int{0, billing.MaxEventsListed + 1} {
		_, err := f.svc.Events(f.ctx, f.admin, limit)
		testenv.WantError(t, err, 400, "Validation error", "limit must be between 1 and 200")
	}
	other := sqlitetest.Org(t, f.st, "Other Co", domain.PlanTeam, f.clock.Now())
	if events, err := f.svc.Events(f.ctx, sqlitetest.As(sqlitetest.Member(t, f.st, other, "a@other.test", domain.RoleAdmin)), 50); err != nil || len(events) != 0 {
		t.Fatalf("another organization's log: %d %v", len(events), err)
	}
}

// Concurrent deliveries of one event apply it once.
func TestWebhookConcurrentDuplicates(t *testing.T) {
	f := newFixture(t, domain.PlanTeam)
	f.linkCustomer("cus_c")
	body := event("evt_once", billing.EventPaymentSucceeded, f.clock.Now(), invoice("in_1", "cus_c", 4200, f.clock.Now()))
	const n = 8
	var wg sync.WaitGroup
	results := make(chan *billing.WebhookResult, n)
	for range n {
		wg.Go(func() {
			res, err := f.deliver(body)
			if err != nil {
				t.Error(err)
				return
			}
			results <- res
		})
	}
	wg.Wait()
	close(results)
	applied := 0
	for r := range results {
		if !r.Duplicate {
			applied++
		}
	}
	if applied != 1 {
		t.Fatalf("%d of %d deliveries applied, want 1", applied, n)
	}
	if got := f.subjects("received"); len(got) != 1 {
		t.Fatalf("receipts %q", got)
	}
}

// A plan change raises the alerts its new limits call for, once: a downgrade past every
// limit mails one 100 % alert per resource to the admins.
func TestDowngradeRaisesAlerts(t *testing.T) {
	f := newFixture(t, domain.PlanEnterprise)
	f.linkCustomer("cus_d")
	t0 := f.clock.Now().Add(-time.Hour).Truncate(time.Second)
	f.apply(event("evt_c", billing.EventSubscriptionCreated, t0, subscription("sub_d", "cus_d", priceEnterprise, t0)))
	for i := range 3 {
		sqlitetest.Member(t, f.st, f.org, fmt.Sprintf("m%d@plan.test", i), domain.RoleDeveloper)
		if err := f.st.Projects().Create(f.ctx, &domain.Project{ID: domain.NewID(), OrganizationID: f.org.ID, Name: fmt.Sprintf("P%d", i),
			CreatedAt: f.clock.Now(), UpdatedAt: f.clock.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 101 {
		if err := f.st.Executions().Create(f.ctx, &domain.Execution{ID: domain.NewID(), OrganizationID: f.org.ID, TaskID: fmt.Sprintf("r%d", i),
			Image: "img", Status: domain.ExecPending, QueuedAt: f.clock.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	if got := f.subjects("limit"); len(got) != 0 {
		t.Fatalf("alerts on an unlimited plan: %q", got)
	}
	f.apply(event("evt_d", billing.EventSubscriptionDeleted, t0.Add(time.Minute), subscription("sub_d", "cus_d", priceEnterprise, t0)))
	for _, res := range []string{"test runs", "users", "projects"} {
		if got := f.subjects("100% of its " + res + " limit"); !slices.Equal(got, []string{"Plan Co has used 100% of its " + res + " limit → admin@plan.test"}) {
			t.Errorf("%s alerts %q", res, got)
		}
	}
	if got := f.subjects("storage"); len(got) != 0 {
		t.Errorf("storage alerts %q", got)
	}
	// A further event that leaves the plan as it is raises nothing again.
	f.apply(event("evt_p", billing.EventPaymentSucceeded, t0.Add(2*time.Minute), invoice("in_1", "cus_d", 100, t0.Add(2*time.Minute))))
	if got := f.subjects("limit"); len(got) != 3 {
		t.Fatalf("alerts after another event: %q", got)
	}
}

// Each threshold (50, 80, 90, 100 %) of a resource is raised once per billing period, and
// only the highest newly reached one is mailed, to the active admins; a refusal raises 100 %.
func TestUsageAlertThresholds(t *testing.T) {
	f := newFixture(t, domain.PlanFree)
	sqlitetest.Member(t, f.st, f.org, "dev@plan.test", domain.RoleDeveloper)
	suspended := sqlitetest.Member(t, f.st, f.org, "gone@plan.test", domain.RoleAdmin)
	if err := f.st.Users().UpdateStatus(f.ctx, f.org.ID, suspended.ID, domain.UserSuspended); err != nil {
		t.Fatal(err)
	}
	check := func(u billing.Usage) {
		t.Helper()
		if err := f.st.InTx(f.ctx, func(tx store.Store) error { return f.alerts.Check(f.ctx, tx, f.org, u) }); err != nil {
			t.Fatal(err)
		}
	}
	runs := func() []string { return f.subjects("test runs limit") }
	for used := int64(1); used <= 100; used++ {
		check(billing.Usage{Resource: billing.ResourceTestRuns, Used: used, Before: used - 1, Limit: 100})
		want := map[int64]int{49: 0, 50: 1, 79: 1, 80: 2, 89: 2, 90: 3, 99: 3, 100: 4}
		if n, ok := want[used]; ok && len(runs()) != n {
			t.Fatalf("after %d runs: %q, want %d alerts", used, runs(), n)
		}
	}
	for _, p := range []string{"50%", "80%", "90%", "100%"} {
		if want := "Plan Co has used " + p + " of its test runs limit → admin@plan.test"; !slices.Contains(runs(), want) {
			t.Fatalf("alerts %q, want one %q", runs(), want)
		}
	}
	// Counting again in the same period raises nothing.
	check(billing.Usage{Resource: billing.ResourceTestRuns, Used: 100, Limit: 100})
	check(billing.Usage{Resource: billing.ResourceTestRuns, Used: 100, Limit: 100, Refused: true, Note: "dropped"})
	if len(runs()) != 4 {
		t.Fatalf("alerts raised twice: %q", runs())
	}
	// A jump mails the highest threshold it reached, and the ones below are spent with it.
	check(billing.Usage{Resource: billing.ResourceProjects, Used: 95, Before: 10, Limit: 100})
	check(billing.Usage{Resource: billing.ResourceProjects, Used: 96, Before: 0, Limit: 100})
	if got := f.subjects("projects limit"); len(got) != 1 || !strings.Contains(got[0], "used 90%") {
		t.Fatalf("project alerts %q", got)
	}
	// A refusal raises the 100 % alert whatever the count says.
	check(billing.Usage{Resource: billing.ResourceStorage, Used: 10, Limit: 1 << 30, Refused: true, Note: "reports dropped"})
	if got := f.subjects("storage limit"); len(got) != 1 || !strings.Contains(got[0], "used 100%") {
		t.Fatalf("storage alerts %q", got)
	}
	// Unlimited resources raise nothing.
	check(billing.Usage{Resource: billing.ResourceUsers, Used: 1000, Limit: domain.Unlimited})
	if got := f.subjects("users limit"); len(got) != 0 {
		t.Fatalf("unlimited users alerted: %q", got)
	}
	// The next billing period raises them again.
	f.clock.Advance(30 * 24 * time.Hour)
	check(billing.Usage{Resource: billing.ResourceTestRuns, Used: 50, Before: 49, Limit: 100})
	if got := f.subjects("used 50% of its test runs limit"); len(got) != 2 {
		t.Fatalf("alerts in the next period: %q", runs())
	}
}

// Checkout: a configured plan's price, the organization's customer made once and kept, never
// over a live subscription; the portal needs a customer; the provider's failures are a 502.
func TestCheckoutAndPortal(t *testing.T) {
	f := newFixture(t, domain.PlanFree)
	for _, c := range []struct {
		price, plan string
		status      int
		code, msg   string
	}{
		{"", "", 400, "Missing required fields", "priceId or planId is required"},
		{"price_nope", "", 400, "Invalid price", "priceId is not one of this server's plan prices"},
		{"", "free", 400, "Invalid plan", "planId must be team or enterprise"},
		{"", "gold", 400, "Invalid plan", ""},
	} {
		_, err := f.svc.StartCheckout(f.ctx, f.admin, c.price, c.plan)
		testenv.WantError(t, err, c.status, c.code, c.msg)
	}
	if len(f.provider.customers) != 0 {
		t.Fatal("a refused checkout created a customer")
	}

	co, err := f.svc.StartCheckout(f.ctx, f.admin, "", "team")
	if err != nil || co.URL != "https://pay.test/c/cs_1" || co.SessionID != "cs_1" {
		t.Fatalf("checkout: %+v %v", co, err)
	}
	req := f.provider.checkouts[0]
	if req.CustomerID != "cus_"+f.org.ID || req.PriceID != priceTeam || req.Plan != domain.PlanTeam || req.OrganizationID != f.org.ID ||
		req.SuccessURL != "http://verdict.test/settings/billing?checkout=success&session_id={CHECKOUT_SESSION_ID}" ||
		req.CancelURL != "http://verdict.test/settings/billing?checkout=canceled" {
		t.Fatalf("checkout request %+v", req)
	}
	if got := f.stored().Billing.ProviderCustomerID; got != "cus_"+f.org.ID {
		t.Fatalf("stored customer %q", got)
	}
	// The second checkout reuses the customer.
	if _, err := f.svc.StartCheckout(f.ctx, f.admin, priceEnterprise, ""); err != nil {
		t.Fatal(err)
	}
	if len(f.provider.customers) != 1 || f.provider.checkouts[1].Plan != domain.PlanEnterprise {
		t.Fatalf("customers %v, checkouts %+v", f.provider.customers, f.provider.checkouts)
	}

	// A live subscription is changed in the portal, not by a second checkout.
	f.apply(event("evt_c", billing.EventSubscriptionCreated, f.clock.Now(), subscription("sub_1", "cus_"+f.org.ID, priceTeam, f.clock.Now())))
	_, err = f.svc.StartCheckout(f.ctx, f.admin, "", "enterprise")
	testenv.WantError(t, err, 409, "Subscription exists", "change or cancel it in the customer portal")
	url, err := f.svc.OpenPortal(f.ctx, f.admin)
	if err != nil || url != "https://pay.test/p/cus_"+f.org.ID || f.provider.portals[0] != "cus_"+f.org.ID+" http://verdict.test/settings/billing" {
		t.Fatalf("portal: %q %v %v", url, err, f.provider.portals)
	}
	sub, err := f.svc.Subscription(f.ctx, sqlitetest.As(sqlitetest.Member(t, f.st, f.org, "v@plan.test", domain.RoleViewer)))
	if err != nil || sub.Plan != domain.PlanTeam || sub.Limits.MaxUsers != 20 || !sub.PeriodStart.Equal(f.clock.Now().Truncate(time.Second)) {
		t.Fatalf("subscription: %+v %v", sub, err)
	}

	// Without a customer there is no portal; a plan without a price cannot be bought.
	g := newFixture(t, domain.PlanFree)
	_, err = g.svc.OpenPortal(g.ctx, g.admin)
	testenv.WantError(t, err, 400, "No billing account", "start a checkout first")
	noPrice := billing.New(billing.Deps{Store: g.st, Provider: g.provider, Prices: map[domain.Plan]string{domain.PlanTeam: priceTeam}})
	_, err = noPrice.StartCheckout(g.ctx, g.admin, "", "enterprise")
	testenv.WantError(t, err, 503, "Plan not available", "STRIPE_PRICE_ENTERPRISE")
	// The provider's failure is a 502 that tells nothing of it, and stores no customer.
	g.provider.fail = errors.New("card network down")
	_, err = g.svc.StartCheckout(g.ctx, g.admin, "", "team")
	if de := testenv.WantError(t, err, 502, "Payment provider error", "try again later"); strings.Contains(de.Message, "card network") {
		t.Fatalf("the provider's error leaked: %s", de.Message)
	}
	if got := g.stored().Billing.ProviderCustomerID; got != "" {
		t.Fatalf("customer stored after a failure: %q", got)
	}
	// A customer ID another organization holds is never linked to a second one.
	other := sqlitetest.Org(t, f.st, "Other Co", domain.PlanFree, f.clock.Now())
	f.provider.customer = "cus_" + f.org.ID
	_, err = f.svc.StartCheckout(f.ctx, sqlitetest.As(sqlitetest.Member(t, f.st, other, "a@other.test", domain.RoleAdmin)), "", "team")
	testenv.WantError(t, err, 502, "Payment provider error", "")
	if got, _ := f.st.Organizations().Get(f.ctx, other.ID); got.Billing.ProviderCustomerID != "" {
		t.Fatalf("another organization's customer was linked: %q", got.Billing.ProviderCustomerID)
	}

	// Without a provider every route but the webhook answers 503.
	off := billing.New(billing.Deps{Store: g.st})
	_, err = off.StartCheckout(g.ctx, g.admin, "", "team")
	testenv.WantError(t, err, 503, "Billing not configured", "STRIPE_SECRET_KEY is not set")
	_, err = off.OpenPortal(g.ctx, g.admin)
	testenv.WantError(t, err, 503, "Billing not configured", "")
	_, err = off.Events(g.ctx, g.admin, 10)
	testenv.WantError(t, err, 503, "Billing not configured", "")
}
