//go:build integration

package app_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"verdict/internal/domain"
	"verdict/internal/store"
	"verdict/internal/testenv"
)

const (
	webhookSecret   = "whsec_test_0123456789abcdef"
	priceTeam       = "price_team_test"
	priceEnterprise = "price_enterprise_test"
)

// billingEnv configures the payment provider: the API is stripe-mock (behind recorder when
// given, which sees every request the client makes).
func billingEnv(t testing.TB, recorder *providerRecorder) map[string]string {
	base := testenv.StripeMock(t)
	if recorder != nil {
		base = recorder.start(t, base)
	}
	return map[string]string{"STRIPE_SECRET_KEY": "sk_test_verdict", "STRIPE_WEBHOOK_SECRET": webhookSecret,
		"STRIPE_PRICE_TEAM": priceTeam, "STRIPE_PRICE_ENTERPRISE": priceEnterprise, "STRIPE_API_BASE": base}
}

// providerRecorder is a reverse proxy in front of stripe-mock that keeps each request's path
// and form, so tests can check what Verdict asked the provider for.
type providerRecorder struct {
	mu   sync.Mutex
	reqs []providerRequest
}

type providerRequest struct {
	Path string
	Form url.Values
}

func (p *providerRecorder) start(t testing.TB, target string) string {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		form, _ := url.ParseQuery(string(body))
		p.mu.Lock()
		p.reqs = append(p.reqs, providerRequest{Path: r.URL.Path, Form: form})
		p.mu.Unlock()
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func (p *providerRecorder) requests(path string) []providerRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []providerRequest
	for _, r := range p.reqs {
		if r.Path == path {
			out = append(out, r)
		}
	}
	return out
}

// sign makes a Stripe-Signature header the way the provider does: v1 is the hex HMAC-SHA256
// of "<unix time>.<body>" under the endpoint's signing secret.
func sign(body []byte, secret string, at time.Time) string {
	m := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(m, "%d.", at.Unix())
	m.Write(body)
	return fmt.Sprintf("t=%d,v1=%s", at.Unix(), hex.EncodeToString(m.Sum(nil)))
}

// event is a provider event as delivered to a webhook endpoint.
func event(id, typ string, created time.Time, object map[string]any) []byte {
	b, err := json.Marshal(map[string]any{"id": id, "object": "event", "api_version": "2025-09-30.clover",
		"created": created.Unix(), "type": typ, "livemode": false, "pending_webhooks": 1,
		"request": map[string]any{"id": nil, "idempotency_key": nil}, "data": map[string]any{"object": object}})
	if err != nil {
		panic(err)
	}
	return b
}

func subscriptionObject(id, customer, price string, start time.Time) map[string]any {
	return map[string]any{"id": id, "object": "subscription", "customer": customer, "status": "active",
		"metadata": map[string]any{}, "items": map[string]any{"object": "list", "data": []any{map[string]any{
			"id": "si_" + id, "object": "subscription_item", "price": map[string]any{"id": price, "object": "price"},
			"current_period_start": start.Unix(), "current_period_end": start.AddDate(0, 1, 0).Unix()}}}}
}

func invoiceObject(id, customer string, amount int64, paidAt time.Time) map[string]any {
	inv := map[string]any{"id": id, "object": "invoice", "customer": customer, "currency": "usd",
		"amount_due": amount, "amount_paid": 0, "attempt_count": 1}
	if !paidAt.IsZero() {
		inv["amount_paid"] = amount
		inv["status_transitions"] = map[string]any{"paid_at": paidAt.Unix()}
	}
	return inv
}

func (h *harness) webhook(body []byte, signature string) resp {
	h.t.Helper()
	if signature == "" {
		return h.do("POST", "/api/webhooks/stripe", anon, body)
	}
	return h.do("POST", "/api/webhooks/stripe", anon, body, "Stripe-Signature", signature)
}

// deliver sends a correctly signed event and expects it processed (not a duplicate).
func (h *harness) deliver(body []byte) {
	h.t.Helper()
	r := h.webhook(body, sign(body, webhookSecret, time.Now()))
	if r.status != 200 || r.body["received"] != true || r.body["duplicate"] != nil {
		h.t.Fatalf("delivery: %d %s", r.status, r.raw)
	}
}

func (h *harness) org(id string) *domain.Organization {
	h.t.Helper()
	o, err := h.app.Store.Organizations().Get(context.Background(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	return o
}

// linkCustomer gives an organization a provider customer, as its first checkout would.
func (h *harness) linkCustomer(orgID, customer string) {
	h.t.Helper()
	o := h.org(orgID)
	o.Billing.ProviderCustomerID = customer
	if err := h.app.Store.Organizations().UpdatePlan(context.Background(), orgID, o.Plan, o.Billing); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) eventLog(id string) *store.BillingEvent {
	h.t.Helper()
	e, err := h.app.Store.BillingEvents().Get(context.Background(), id)
	if err != nil {
		h.t.Fatalf("webhook log entry %s: %v", id, err)
	}
	return e
}

// mailsAbout counts outbox mails whose subject contains s.
func mailsAbout(mails []store.Mail, s string) []store.Mail {
	var out []store.Mail
	for _, m := range mails {
		if strings.Contains(m.Subject, s) {
			out = append(out, m)
		}
	}
	return out
}

func TestBillingNotConfigured(t *testing.T) {
	h := newHarness(t, harnessOpts{dialect: "sqlite"})
	admin := h.signup("ada@example.com", "Plain Co")
	expect(t, h.do("POST", "/api/billing/checkout", bearer(admin.token), map[string]any{"planId": "team"}), 503, "Billing not configured")
	expect(t, h.do("POST", "/api/billing/portal", bearer(admin.token), nil), 503, "Billing not configured")
	expect(t, h.do("GET", "/api/billing/subscription", bearer(admin.token), nil), 503, "Billing not configured")
	expect(t, h.do("GET", "/api/billing/events", bearer(admin.token), nil), 503, "Billing not configured")
	body := event("evt_1", "invoice.payment_succeeded", time.Now(), invoiceObject("in_1", "cus_x", 9900, time.Now()))
	expect(t, h.webhook(body, sign(body, webhookSecret, time.Now())), 503, "Webhook not configured")
	r := h.do("GET", "/api/webhooks/test", anon, nil)
	if r.status != 200 || r.str("status") != "ok" || r.str("message") == "" || r.body["providerConfigured"] != false || r.body["webhookSecretConfigured"] != false {
		t.Fatalf("webhooks/test: %d %s", r.status, r.raw)
	}
}

func TestCheckoutAgainstStripeMock(t *testing.T) {
	for _, d := range []string{"sqlite", "postgres"} {
		t.Run(d, func(t *testing.T) {
			rec := &providerRecorder{}
			h := newHarness(t, harnessOpts{dialect: d, env: billingEnv(t, rec)})
			admin := h.signup("ada@example.com", "Checkout Co")
			dev := h.join(admin, "dev@example.com", "developer")
			key := apiKey(h.do("POST", "/api/auth/api-keys", bearer(admin.token), map[string]any{"name": "ci"}).str("apiKey"))

			r := h.do("GET", "/api/webhooks/test", anon, nil)
			if r.body["providerConfigured"] != true || r.body["webhookSecretConfigured"] != true {
				t.Fatalf("webhooks/test: %s", r.raw)
			}
			expect(t, h.do("POST", "/api/billing/checkout", bearer(dev.token), map[string]any{"planId": "team"}), 403, "Forbidden")
			expect(t, h.do("POST", "/api/billing/checkout", key, map[string]any{"planId": "team"}), 403, "API key not allowed")
			expect(t, h.do("POST", "/api/billing/checkout", bearer(admin.token), map[string]any{}), 400, "Missing required fields")
			expect(t, h.do("POST", "/api/billing/checkout", bearer(admin.token), map[string]any{"priceId": "price_other"}), 400, "Invalid price")
			expect(t, h.do("POST", "/api/billing/checkout", bearer(admin.token), map[string]any{"planId": "free"}), 400, "Invalid plan")
			expect(t, h.do("POST", "/api/billing/checkout", bearer(admin.token), map[string]any{"priceId": 5}), 400, "Validation error")
			expect(t, h.do("POST", "/api/billing/portal", bearer(admin.token), nil), 400, "No billing account")
			if n := len(rec.requests("/v1/customers")); n != 0 {
				t.Fatalf("refused checkouts created %d customers", n)
			}

			r = h.do("POST", "/api/billing/checkout", bearer(admin.token), map[string]any{"planId": "team"})
			expect(t, r, 200, "")
			if !strings.HasPrefix(r.str("checkoutUrl"), "https://") || !strings.HasPrefix(r.str("sessionId"), "cs_") {
				t.Fatalf("checkout: %s", r.raw)
			}
			customer := h.org(admin.orgID).Billing.ProviderCustomerID
			if !strings.HasPrefix(customer, "cus_") {
				t.Fatalf("customer not stored: %q", customer)
			}
			custs := rec.requests("/v1/customers")
			if len(custs) != 1 || custs[0].Form.Get("name") != "Checkout Co" || custs[0].Form.Get("email") != "ada@example.com" ||
				custs[0].Form.Get("metadata[organizationId]") != admin.orgID {
				t.Fatalf("customer request: %+v", custs)
			}
			sessions := rec.requests("/v1/checkout/sessions")
			if len(sessions) != 1 {
				t.Fatalf("checkout session requests: %+v", sessions)
			}
			f := sessions[0].Form
			for k, want := range map[string]string{
				"mode": "subscription", "customer": customer, "client_reference_id": admin.orgID,
				"line_items[0][price]": priceTeam, "line_items[0][quantity]": "1",
				"success_url":                       "http://verdict.test/settings/billing?checkout=success&session_id={CHECKOUT_SESSION_ID}",
				"cancel_url":                        "http://verdict.test/settings/billing?checkout=canceled",
				"subscription_data[metadata][plan]": "team",
				"subscription_data[metadata][organizationId]": admin.orgID,
			} {
				if got := f.Get(k); got != want {
					t.Errorf("checkout session %s = %q, want %q", k, got, want)
				}
			}

			// The second checkout (by price) reuses the customer.
			r = h.do("POST", "/api/billing/checkout", bearer(admin.token), map[string]any{"priceId": priceEnterprise})
			expect(t, r, 200, "")
			if n := len(rec.requests("/v1/customers")); n != 1 || h.org(admin.orgID).Billing.ProviderCustomerID != customer {
				t.Fatalf("second checkout made another customer (%d requests)", n)
			}
			if got := rec.requests("/v1/checkout/sessions")[1].Form.Get("line_items[0][price]"); got != priceEnterprise {
				t.Fatalf("second checkout price %q", got)
			}

			r = h.do("POST", "/api/billing/portal", bearer(admin.token), nil)
			expect(t, r, 200, "")
			if !strings.HasPrefix(r.str("portalUrl"), "https://") {
				t.Fatalf("portal: %s", r.raw)
			}
			portal := rec.requests("/v1/billing_portal/sessions")
			if len(portal) != 1 || portal[0].Form.Get("customer") != customer || portal[0].Form.Get("return_url") != "http://verdict.test/settings/billing" {
				t.Fatalf("portal request: %+v", portal)
			}
			expect(t, h.do("POST", "/api/billing/portal", bearer(dev.token), nil), 403, "Forbidden")

			r = h.do("GET", "/api/billing/subscription", key, nil)
			expect(t, r, 200, "")
			if r.str("subscription", "plan") != "free" || r.get("subscription", "status") != nil || r.get("subscription", "hasBillingAccount") != true ||
				r.get("subscription", "limits", "maxTestRuns") != float64(100) {
				t.Fatalf("subscription: %s", r.raw)
			}

			// Once subscribed, a new checkout is refused: plan changes go through the portal.
			h.deliver(event("evt_sub", "customer.subscription.created", h.clock.Now(), subscriptionObject("sub_1", customer, priceTeam, h.clock.Now())))
			expect(t, h.do("POST", "/api/billing/checkout", bearer(admin.token), map[string]any{"planId": "enterprise"}), 409, "Subscription exists")
		})
	}
}

func TestWebhookSignatures(t *testing.T) {
	h := newHarness(t, harnessOpts{dialect: "sqlite", env: billingEnv(t, nil)})
	admin := h.signup("ada@example.com", "Sig Co")
	h.linkCustomer(admin.orgID, "cus_sig")
	body := event("evt_sig", "invoice.payment_succeeded", h.clock.Now(), invoiceObject("in_1", "cus_sig", 9900, h.clock.Now()))
	now := time.Now()

	tampered := []byte(strings.Replace(string(body), "9900", "1", 1))
	for name, c := range map[string]struct {
		body []byte
		sig  string
		err  string
	}{
		"missing header":    {body, "", "Missing signature"},
		"tampered body":     {tampered, sign(body, webhookSecret, now), "Invalid signature"},
		"wrong secret":      {body, sign(body, "whsec_wrong", now), "Invalid signature"},
		"stale timestamp":   {body, sign(body, webhookSecret, now.Add(-6*time.Minute)), "Invalid signature"},
		"malformed header":  {body, "garbage", "Invalid signature"},
		"signature only v0": {body, strings.Replace(sign(body, webhookSecret, now), "v1=", "v0=", 1), "Invalid signature"},
		"not an event":      {[]byte(`{"object":"customer","id":"cus_sig"}`), sign([]byte(`{"object":"customer","id":"cus_sig"}`), webhookSecret, now), "Invalid payload"},
		"not JSON":          {[]byte(`not json`), sign([]byte(`not json`), webhookSecret, now), "Invalid payload"},
	} {
		t.Run(name, func(t *testing.T) {
			expect(t, h.webhook(c.body, c.sig), 400, c.err)
		})
	}
	if _, err := h.app.Store.BillingEvents().Get(context.Background(), "evt_sig"); err != store.ErrNotFound {
		t.Fatalf("a refused delivery was logged: %v", err)
	}
	if h.org(admin.orgID).Billing.LastPaymentDate != nil {
		t.Fatal("a refused delivery took effect")
	}
	// Within the tolerance, an older signature is accepted; the event then counts once.
	h.deliver(body)
	r := h.webhook(body, sign(body, webhookSecret, now.Add(-4*time.Minute)))
	if r.status != 200 || r.body["received"] != true || r.body["duplicate"] != true {
		t.Fatalf("redelivery: %d %s", r.status, r.raw)
	}
}

func TestWebhookEffects(t *testing.T) {
	forEachDBWith(t, harnessOpts{env: billingEnv(t, nil)}, func(t *testing.T, h *harness) {
		ctx := context.Background()
		admin := h.signup("ada@example.com", "Effects Co")
		admin2 := h.join(admin, "bob@example.com", "admin")
		developer := h.join(admin, "dev@example.com", "developer")
		h.linkCustomer(admin.orgID, "cus_fx")
		t0 := h.clock.Now()
		periodStart := time.Date(2026, 3, 5, 0, 0, 0, 0, time.UTC)

		// created: active, team, subscription and period stored.
		created := event("evt_created", "customer.subscription.created", t0, subscriptionObject("sub_1", "cus_fx", priceTeam, periodStart))
		h.deliver(created)
		o := h.org(admin.orgID)
		if o.Plan != domain.PlanTeam || o.Billing.Status != domain.BillingActive || o.Billing.ProviderSubscriptionID == nil ||
			*o.Billing.ProviderSubscriptionID != "sub_1" || !o.Billing.CurrentPeriodStart.Equal(periodStart) {
			t.Fatalf("after created: plan %s billing %+v", o.Plan, o.Billing)
		}
		org := h.do("GET", "/api/organization", bearer(admin.token), nil)
		if org.str("organization", "plan") != "team" || org.get("organization", "limits", "maxUsers") != float64(20) {
			t.Fatalf("organization after created: %s", org.raw)
		}
		e := h.eventLog("evt_created")
		if e.Status != store.EventSuccess || e.Error != "" || e.OrganizationID != admin.orgID || e.EventType != "customer.subscription.created" ||
			string(e.Payload) != string(created) || !e.CreatedAt.Equal(t0.Truncate(time.Second)) {
			t.Fatalf("log entry: %+v", e)
		}
		// The subscription's period is the billing period now.
		u := h.do("GET", "/api/organization/usage", bearer(admin.token), nil)
		if u.str("usage", "currentPeriod", "startDate") != "2026-03-05T00:00:00.000Z" || u.get("usage", "testRuns", "limit") != float64(1000) {
			t.Fatalf("usage: %s", u.raw)
		}

		// A duplicate changes nothing and is said to be one.
		r := h.webhook(created, sign(created, webhookSecret, time.Now()))
		if r.status != 200 || r.body["duplicate"] != true {
			t.Fatalf("duplicate: %s", r.raw)
		}

		// updated (newer): plan and limits follow the price; the status does not move.
		h.deliver(event("evt_up1", "customer.subscription.updated", t0.Add(time.Minute), subscriptionObject("sub_1", "cus_fx", priceEnterprise, periodStart)))
		if o = h.org(admin.orgID); o.Plan != domain.PlanEnterprise || o.Billing.Status != domain.BillingActive {
			t.Fatalf("after updated: %s %+v", o.Plan, o.Billing)
		}
		// An older updated, delivered late, does not roll the plan back.
		h.deliver(event("evt_up0", "customer.subscription.updated", t0.Add(30*time.Second), subscriptionObject("sub_1", "cus_fx", priceTeam, periodStart)))
		if o = h.org(admin.orgID); o.Plan != domain.PlanEnterprise {
			t.Fatalf("a stale update rolled the plan back to %s", o.Plan)
		}
		if e := h.eventLog("evt_up0"); e.Status != store.EventSuccess || e.OrganizationID != admin.orgID {
			t.Fatalf("stale event's entry: %+v", e)
		}
		// An update of a price that is no plan is an error entry and no change.
		h.deliver(event("evt_up2", "customer.subscription.updated", t0.Add(2*time.Minute), subscriptionObject("sub_1", "cus_fx", "price_unknown", periodStart)))
		if e := h.eventLog("evt_up2"); e.Status != store.EventError || !strings.Contains(e.Error, "price_unknown") {
			t.Fatalf("unknown price entry: %+v", e)
		}
		if o = h.org(admin.orgID); o.Plan != domain.PlanEnterprise {
			t.Fatalf("unknown price changed the plan to %s", o.Plan)
		}

		// payment failed: past_due, attempt recorded, admins told.
		failedAt := t0.Add(3 * time.Minute)
		h.deliver(event("evt_fail", "invoice.payment_failed", failedAt, invoiceObject("in_1", "cus_fx", 49900, time.Time{})))
		if o = h.org(admin.orgID); o.Billing.Status != domain.BillingPastDue || o.Billing.LastPaymentAttempt == nil ||
			!o.Billing.LastPaymentAttempt.Equal(failedAt.Truncate(time.Second)) || o.Billing.LastPaymentDate != nil {
			t.Fatalf("after payment failed: %+v", o.Billing)
		}
		// payment succeeded: active again, date and amount.
		paidAt := t0.Add(4 * time.Minute)
		h.deliver(event("evt_paid", "invoice.payment_succeeded", paidAt, invoiceObject("in_1", "cus_fx", 49900, paidAt)))
		if o = h.org(admin.orgID); o.Billing.Status != domain.BillingActive || o.Billing.LastPaymentDate == nil ||
			!o.Billing.LastPaymentDate.Equal(paidAt.Truncate(time.Second)) || o.Billing.LastPaymentAmount == nil || *o.Billing.LastPaymentAmount != 499 {
			t.Fatalf("after payment succeeded: %+v", o.Billing)
		}
		// A failure notice older than the success does not make the organization past_due.
		h.deliver(event("evt_fail_old", "invoice.payment_failed", t0.Add(150*time.Second), invoiceObject("in_0", "cus_fx", 49900, time.Time{})))
		if o = h.org(admin.orgID); o.Billing.Status != domain.BillingActive || !o.Billing.LastPaymentAttempt.Equal(failedAt.Truncate(time.Second)) {
			t.Fatalf("stale failure: %+v", o.Billing)
		}
		sub := h.do("GET", "/api/billing/subscription", bearer(admin.token), nil)
		if sub.str("subscription", "plan") != "enterprise" || sub.str("subscription", "status") != "active" ||
			sub.get("subscription", "lastPaymentAmount") != float64(499) || sub.str("subscription", "providerSubscriptionId") != "sub_1" ||
			sub.str("subscription", "lastPaymentDate") == "" || sub.str("subscription", "lastPaymentAttempt") == "" {
			t.Fatalf("subscription: %s", sub.raw)
		}

		// deleted of another subscription does not cancel the current one.
		h.deliver(event("evt_del_other", "customer.subscription.deleted", t0.Add(5*time.Minute), subscriptionObject("sub_old", "cus_fx", priceTeam, periodStart)))
		if o = h.org(admin.orgID); o.Plan != domain.PlanEnterprise {
			t.Fatalf("deleting another subscription changed the plan to %s", o.Plan)
		}
		// deleted: free plan, no subscription, canceled, free limits.
		h.deliver(event("evt_del", "customer.subscription.deleted", t0.Add(6*time.Minute), subscriptionObject("sub_1", "cus_fx", priceEnterprise, periodStart)))
		if o = h.org(admin.orgID); o.Plan != domain.PlanFree || o.Billing.ProviderSubscriptionID != nil || o.Billing.Status != domain.BillingCanceled ||
			o.Billing.CurrentPeriodStart != nil || o.Billing.ProviderCustomerID != "cus_fx" {
			t.Fatalf("after deleted: %s %+v", o.Plan, o.Billing)
		}
		// A late created for the same subscription does not bring it back.
		h.deliver(event("evt_created_late", "customer.subscription.created", t0.Add(10*time.Second), subscriptionObject("sub_1", "cus_fx", priceTeam, periodStart)))
		if o = h.org(admin.orgID); o.Plan != domain.PlanFree {
			t.Fatalf("late created resurrected the plan %s", o.Plan)
		}

		// Unknown customer: error entry, still 200.
		h.deliver(event("evt_nobody", "invoice.payment_succeeded", t0, invoiceObject("in_9", "cus_nobody", 9900, t0)))
		if e := h.eventLog("evt_nobody"); e.Status != store.EventError || e.Error != "Organization not found for customer cus_nobody" || e.OrganizationID != "" {
			t.Fatalf("unknown customer entry: %+v", e)
		}
		// An event type without an effect is logged and acknowledged.
		h.deliver(event("evt_other", "customer.created", t0, map[string]any{"id": "cus_fx", "object": "customer"}))
		if e := h.eventLog("evt_other"); e.Status != store.EventSuccess || e.EventType != "customer.created" {
			t.Fatalf("unhandled entry: %+v", e)
		}
		log, err := h.app.Store.BillingEvents().List(ctx, admin.orgID, 0)
		if err != nil || len(log) != 10 {
			t.Fatalf("webhook log of the organization: %d entries, %v", len(log), err)
		}
		// Admins read it, newest first, without payloads; others may not.
		ev := h.do("GET", "/api/billing/events?limit=3", bearer(admin.token), nil)
		expect(t, ev, 200, "")
		events, _ := ev.get("events").([]any)
		if len(events) != 3 || strings.Contains(ev.raw, "payload") {
			t.Fatalf("events: %s", ev.raw)
		}
		first := events[0].(map[string]any)
		if first["eventId"] != "evt_del" || first["status"] != "success" || first["processedAt"] == nil {
			t.Fatalf("newest event: %v", first)
		}
		if all := h.do("GET", "/api/billing/events", bearer(admin.token), nil); len(all.get("events").([]any)) != 10 {
			t.Fatalf("all events: %s", all.raw)
		}
		for _, e := range h.do("GET", "/api/billing/events?limit=200", bearer(admin.token), nil).get("events").([]any) {
			if m := e.(map[string]any); m["eventId"] == "evt_up2" && (m["status"] != "error" || !strings.Contains(fmt.Sprint(m["error"]), "price_unknown")) {
				t.Fatalf("error entry: %v", m)
			}
		}
		dev := h.signup("solo@example.com", "Solo Co")
		if r := h.do("GET", "/api/billing/events", bearer(dev.token), nil); r.status != 200 || len(r.get("events").([]any)) != 0 {
			t.Fatalf("another organization sees events: %s", r.raw)
		}
		expect(t, h.do("GET", "/api/billing/events?limit=0", bearer(admin.token), nil), 400, "Validation error")
		expect(t, h.do("GET", "/api/billing/events", bearer(developer.token), nil), 403, "Forbidden")
		key := h.do("POST", "/api/auth/api-keys", bearer(admin.token), map[string]any{"name": "ci"}).str("apiKey")
		expect(t, h.do("GET", "/api/billing/events", apiKey(key), nil), 403, "API key not allowed")
		expect(t, h.do("GET", "/api/billing/events?limit=x", bearer(admin.token), nil), 400, "Validation error")

		// E-mails: to both admins, never to the developer.
		mails := h.outbox()
		for subject, n := range map[string]int{"Action needed: payment": 1, "Payment of 499.00 USD received": 1, "was canceled": 1} {
			found := mailsAbout(mails, subject)
			if len(found) != n {
				t.Errorf("%d mails about %q, want %d (all: %d)", len(found), subject, n, len(mails))
				continue
			}
			if to := strings.Join(slices.Sorted(slices.Values(found[0].To)), ","); to != admin.email+","+admin2.email {
				t.Errorf("mail %q to %s", found[0].Subject, to)
			}
		}
	})
}

// forEachDBWith runs fn on SQLite and on PostgreSQL with the options o.
func forEachDBWith(t *testing.T, o harnessOpts, fn func(t *testing.T, h *harness)) {
	for _, d := range []string{"sqlite", "postgres"} {
		t.Run(d, func(t *testing.T) {
			o := o
			o.dialect = d
			fn(t, newHarness(t, o))
		})
	}
}

func TestWebhookConcurrentDuplicates(t *testing.T) {
	forEachDBWith(t, harnessOpts{env: billingEnv(t, nil)}, func(t *testing.T, h *harness) {
		admin := h.signup("ada@example.com", "Race Co")
		h.linkCustomer(admin.orgID, "cus_race")
		paid := h.clock.Now()
		body := event("evt_race", "invoice.payment_succeeded", paid, invoiceObject("in_r", "cus_race", 9900, paid))
		const n = 8
		var wg sync.WaitGroup
		results := make([]resp, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i] = h.webhook(body, sign(body, webhookSecret, time.Now()))
			}()
		}
		wg.Wait()
		processed := 0
		for _, r := range results {
			if r.status != 200 || r.body["received"] != true {
				t.Fatalf("delivery: %d %s", r.status, r.raw)
			}
			if r.body["duplicate"] == nil {
				processed++
			}
		}
		if processed != 1 {
			t.Fatalf("%d of %d concurrent deliveries processed, want 1", processed, n)
		}
		if got := len(mailsAbout(h.outbox(), "Payment of 99.00 USD received")); got != 1 {
			t.Fatalf("%d receipts, want 1", got)
		}
	})
}

func TestDowngradeRefusesNewUseUntilItFits(t *testing.T) {
	forEachDBWith(t, harnessOpts{env: billingEnv(t, nil)}, func(t *testing.T, h *harness) {
		admin := h.signup("ada@example.com", "Shrink Co")
		h.linkCustomer(admin.orgID, "cus_shrink")
		t0 := h.clock.Now()
		h.deliver(event("evt_c", "customer.subscription.created", t0, subscriptionObject("sub_s", "cus_shrink", priceEnterprise, t0)))
		for i := range 3 {
			expect(t, h.do("POST", "/api/projects", bearer(admin.token), map[string]any{"name": fmt.Sprintf("P%d", i), "image": "img"}), 201, "")
		}
		var members []account
		for _, email := range []string{"a@example.com", "b@example.com", "c@example.com"} {
			members = append(members, h.join(admin, email, "developer"))
		}
		for range 101 {
			h.queue(bearer(admin.token), map[string]any{"image": "img"})
		}
		if got := mailsAbout(h.outbox(), "usage"); len(got) != 0 {
			t.Fatalf("unlimited plan sent usage alerts: %v", got[0].Subject)
		}

		// Canceled: back to free, where 4 users, 3 projects and 101 runs do not fit.
		h.deliver(event("evt_d", "customer.subscription.deleted", t0.Add(time.Minute), subscriptionObject("sub_s", "cus_shrink", priceEnterprise, t0)))
		projects := h.do("GET", "/api/projects", bearer(admin.token), nil)
		users := h.do("GET", "/api/users", bearer(admin.token), nil)
		if n := len(projects.get("projects").([]any)); n != 3 {
			t.Fatalf("projects after downgrade: %d (%s)", n, projects.raw)
		}
		if n := len(users.get("users").([]any)); n != 4 {
			t.Fatalf("users after downgrade: %d", n)
		}
		expect(t, h.do("POST", "/api/projects", bearer(admin.token), map[string]any{"name": "P9", "image": "img"}), 403, "Project limit reached")
		expect(t, h.do("POST", "/api/invitations", bearer(admin.token), map[string]any{"email": "d@example.com", "role": "viewer"}), 403, "User limit reached")
		// Suspending makes room for no one new; bringing a member back needs a free seat.
		status := func(u account, s string) resp {
			return h.do("PATCH", "/api/users/"+u.id+"/status", bearer(admin.token), map[string]any{"status": s})
		}
		expect(t, status(members[0], "suspended"), 200, "")
		expect(t, status(members[1], "suspended"), 200, "")
		expect(t, status(members[0], "active"), 200, "") // 3 of 3
		expect(t, status(members[1], "active"), 403, "User limit reached")
		r := h.do("POST", "/api/executions", bearer(admin.token), map[string]any{"image": "img"})
		expect(t, r, 403, "Test run limit exceeded")
		if r.get("usage", "used") != float64(101) || r.get("usage", "limit") != float64(100) {
			t.Fatalf("limit body: %s", r.raw)
		}
		u := h.do("GET", "/api/organization/usage", bearer(admin.token), nil)
		alerts := map[string]string{}
		for _, a := range u.get("alerts").([]any) {
			m := a.(map[string]any)
			alerts[m["resource"].(string)] = m["type"].(string)
		}
		want := map[string]string{"testRuns": "critical", "users": "critical", "projects": "critical"}
		for k, v := range want {
			if alerts[k] != v {
				t.Fatalf("alerts %v, want %v (%s)", alerts, want, u.raw)
			}
		}
		if u.get("usage", "projects", "used") != float64(3) || u.get("usage", "projects", "limit") != float64(1) {
			t.Fatalf("usage projects: %s", u.raw)
		}
		// The plan change raised the alerts it called for: one 100 % mail per resource.
		mails := h.outbox()
		for _, res := range []string{"test runs", "users", "projects"} {
			if got := mailsAbout(mails, "100% of its "+res+" limit"); len(got) != 1 {
				t.Errorf("%d mails for %s at 100%%, want 1", len(got), res)
			}
		}
		// Usage that fits again is allowed again: deleting projects down to the limit.
		for _, p := range projects.get("projects").([]any)[1:] {
			expect(t, h.do("DELETE", "/api/projects/"+p.(map[string]any)["id"].(string), bearer(admin.token), nil), 200, "")
		}
		expect(t, h.do("POST", "/api/projects", bearer(admin.token), map[string]any{"name": "P10", "image": "img"}), 403, "Project limit reached")
		expect(t, h.do("DELETE", "/api/projects/"+projects.get("projects").([]any)[0].(map[string]any)["id"].(string), bearer(admin.token), nil), 200, "")
		expect(t, h.do("POST", "/api/projects", bearer(admin.token), map[string]any{"name": "P10", "image": "img"}), 201, "")
	})
}

func TestUsageAlertThresholds(t *testing.T) {
	h := newHarness(t, harnessOpts{dialect: "sqlite"})
	admin := h.signup("ada@example.com", "Alert Co")
	dev := h.join(admin, "dev@example.com", "developer") // 2 of 3 users: 66 %
	runAlerts := func() []string {
		var out []string
		for _, m := range mailsAbout(h.outbox(), "test runs limit") {
			out = append(out, m.Subject)
		}
		return out
	}
	for i := 1; i <= 100; i++ {
		h.queue(bearer(dev.token), map[string]any{"image": "img"})
		switch i {
		case 49, 50, 79, 80, 89, 90, 99, 100:
			want := map[int]int{49: 0, 50: 1, 79: 1, 80: 2, 89: 2, 90: 3, 99: 3, 100: 4}[i]
			if got := runAlerts(); len(got) != want {
				t.Fatalf("after %d runs: %d alerts %q, want %d", i, len(got), got, want)
			}
		}
	}
	got := runAlerts()
	for i, p := range []string{"50%", "80%", "90%", "100%"} {
		if !strings.Contains(got[i], "Alert Co has used "+p) {
			t.Fatalf("alerts %q", got)
		}
	}
	// Recipients: the admin only.
	for _, m := range mailsAbout(h.outbox(), "limit") {
		if strings.Join(m.To, ",") != admin.email {
			t.Fatalf("alert %q to %v", m.Subject, m.To)
		}
	}
	users := mailsAbout(h.outbox(), "users limit")
	if len(users) != 1 || !strings.Contains(users[0].Subject, "66%") && !strings.Contains(users[0].Subject, "50%") {
		t.Fatalf("user alerts: %v", users)
	}
	h.join(admin, "dev2@example.com", "viewer") // 3 of 3
	if got := mailsAbout(h.outbox(), "100% of its users limit"); len(got) != 1 {
		t.Fatalf("users at 100%%: %d mails", len(got))
	}
	expect(t, h.do("POST", "/api/projects", bearer(admin.token), map[string]any{"name": "Only", "image": "img"}), 201, "")
	if got := mailsAbout(h.outbox(), "100% of its projects limit"); len(got) != 1 {
		t.Fatalf("projects at 100%%: %d mails", len(got))
	}

	// A new billing period raises the run alerts again.
	h.clock.Advance(31 * 24 * time.Hour)
	login := h.do("POST", "/api/auth/login", anon, map[string]any{"email": dev.email, "password": password})
	expect(t, login, 200, "")
	for range 50 {
		h.queue(bearer(login.str("token")), map[string]any{"image": "img"})
	}
	if got := runAlerts(); len(got) != 5 || !strings.Contains(got[4], "50%") {
		t.Fatalf("alerts after a new period: %q", got)
	}
}

// Two replicas on one PostgreSQL database see the same organization cross thresholds at the
// same time: each alert still goes out once.
func TestUsageAlertsOnceAcrossReplicas(t *testing.T) {
	dbURL := testenv.PostgresDB(t)
	a := newHarness(t, harnessOpts{dialect: "postgres", databaseURL: dbURL})
	b := newHarness(t, harnessOpts{dialect: "postgres", databaseURL: dbURL})
	admin := a.signup("ada@example.com", "Replica Co")
	var wg sync.WaitGroup
	for _, h := range []*harness{a, b} {
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 25 {
					r := h.do("POST", "/api/executions", bearer(admin.token), map[string]any{"image": "img"})
					if r.status != 201 {
						t.Errorf("queue: %d %s", r.status, r.raw)
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	// 100 runs from two replicas: each of the four alerts exactly once.
	mails := a.outbox()
	for _, p := range []string{"50%", "80%", "90%", "100%"} {
		if got := mailsAbout(mails, "used "+p+" of its test runs limit"); len(got) != 1 {
			t.Errorf("%d mails at %s, want 1", len(got), p)
		}
	}
	expect(t, b.do("POST", "/api/executions", bearer(admin.token), map[string]any{"image": "img"}), 403, "Test run limit exceeded")
}
