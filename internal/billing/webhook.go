package billing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/stripe/stripe-go/v86"
	"github.com/stripe/stripe-go/v86/webhook"

	"verdict/internal/domain"
	"verdict/internal/mail"
	"verdict/internal/store"
)

// SignatureTolerance is how old a signature's timestamp (t= in Stripe-Signature) may be.
const SignatureTolerance = 5 * time.Minute

// Event types with an effect; any other type is recorded without effect.
const (
	EventSubscriptionCreated = "customer.subscription.created"
	EventSubscriptionUpdated = "customer.subscription.updated"
	EventSubscriptionDeleted = "customer.subscription.deleted"
	EventPaymentSucceeded    = "invoice.payment_succeeded"
	EventPaymentFailed       = "invoice.payment_failed"
)

var (
	errNoWebhookSecret = domain.Unavailable("Webhook not configured",
		"This server has no webhook signing secret (STRIPE_WEBHOOK_SECRET is not set)")
	errNoSignature = domain.BadRequest("Missing signature", "The Stripe-Signature header is required")
	errDuplicate   = errors.New("billing: event already processed")
)

// WebhookResult says what became of a delivered event.
type WebhookResult struct {
	Duplicate bool // the event was processed before; nothing was done again
	// Recorded without effect (an event type without one, no matching organization), or
	// Failed: recorded with an error in the event log, not applied (not retried either).
	Ignored, Failed bool
}

// HandleWebhook verifies a delivery's signature over its raw body and applies the event once
// (by its event ID). The event's log entry is recorded first in the transaction that applies it:
// a redelivery, even a concurrent one, finds the entry and changes nothing, and a crash before
// the commit leaves neither, so the provider's retry applies it then.
func (s *Service) HandleWebhook(ctx context.Context, payload []byte, signature string) (*WebhookResult, error) {
	if !s.WebhookConfigured() {
		return nil, errNoWebhookSecret
	}
	if signature == "" {
		return nil, errNoSignature
	}
	ev, err := webhook.ConstructEventWithOptions(payload, signature, s.webhookSecret,
		webhook.ConstructEventOptions{Tolerance: SignatureTolerance, IgnoreAPIVersionMismatch: true})
	if err != nil {
		return nil, signatureError(err)
	}
	if ev.ID == "" || ev.Type == "" {
		return nil, domain.BadRequest("Invalid payload", "The event has no id or type")
	}
	if _, err := s.store.BillingEvents().Get(ctx, ev.ID); err == nil {
		return &WebhookResult{Duplicate: true}, nil // the common redelivery, answered without a transaction
	} else if !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	var o outcome
	err = s.store.InTx(ctx, func(tx store.Store) error {
		entry := &store.BillingEvent{EventID: ev.ID, EventType: string(ev.Type), Status: store.EventSuccess,
			Payload: payload, CreatedAt: time.Unix(ev.Created, 0).UTC(), ProcessedAt: s.clock()}
		if err := tx.BillingEvents().Record(ctx, entry); errors.Is(err, store.ErrConflict) {
			return errDuplicate
		} else if err != nil {
			return err
		}
		o = s.apply(ctx, tx, &ev)
		if o.fail != nil {
			return o.fail
		}
		status := store.EventSuccess
		if o.errText != "" {
			status = store.EventError
		}
		return tx.BillingEvents().SetOutcome(ctx, ev.ID, o.orgID, status, o.errText)
	})
	if errors.Is(err, errDuplicate) {
		return &WebhookResult{Duplicate: true}, nil
	}
	if err != nil {
		return nil, err // nothing was recorded: the provider retries the delivery
	}
	log := s.log.With("event", ev.ID, "type", ev.Type, "org", o.orgID)
	switch {
	case o.errText != "":
		log.Error("billing event not applied", "error", o.errText)
	case o.note != "":
		log.Info("billing event recorded without effect", "reason", o.note)
	default:
		log.Info("billing event applied")
	}
	return &WebhookResult{Failed: o.errText != "", Ignored: o.errText == "" && o.note != ""}, nil
}

// signatureError explains a failed verification (always 400).
func signatureError(err error) *domain.Error {
	switch {
	case errors.Is(err, webhook.ErrTooOld):
		return domain.BadRequest("Invalid signature", "The signature's timestamp is older than 5 minutes")
	case errors.Is(err, webhook.ErrNotSigned), errors.Is(err, webhook.ErrInvalidHeader):
		return domain.BadRequest("Invalid signature", "The Stripe-Signature header is malformed")
	case errors.Is(err, webhook.ErrNoValidSignature):
		return domain.BadRequest("Invalid signature", "No signature matches the body and the signing secret")
	}
	return domain.BadRequest("Invalid payload", "The signed body is not a provider event")
}

// outcome is what applying an event did: its organization, an error for the log entry (the
// event is acknowledged all the same: a retry would not change it), a note when it had no
// effect, or fail for a failure that must roll back so the provider retries.
type outcome struct {
	orgID, errText, note string
	fail                 error
}

func (s *Service) apply(ctx context.Context, tx store.Store, ev *stripe.Event) outcome {
	var customer string
	var sub stripe.Subscription
	var inv stripe.Invoice
	if ev.Data == nil {
		return outcome{errText: "the event has no data"}
	}
	switch ev.Type {
	case EventSubscriptionCreated, EventSubscriptionUpdated, EventSubscriptionDeleted:
		if err := json.Unmarshal(ev.Data.Raw, &sub); err != nil {
			return outcome{errText: "the event's subscription could not be read: " + err.Error()}
		}
		if sub.Customer != nil {
			customer = sub.Customer.ID
		}
	case EventPaymentSucceeded, EventPaymentFailed:
		if err := json.Unmarshal(ev.Data.Raw, &inv); err != nil {
			return outcome{errText: "the event's invoice could not be read: " + err.Error()}
		}
		if inv.Customer != nil {
			customer = inv.Customer.ID
		}
	default:
		return outcome{note: "event type not handled"}
	}
	if customer == "" {
		return outcome{errText: "the event names no customer"}
	}
	found, err := tx.Organizations().GetByCustomerID(ctx, customer)
	if errors.Is(err, store.ErrNotFound) {
		return outcome{errText: "Organization not found for customer " + customer}
	} else if err != nil {
		return outcome{fail: err}
	}
	o := outcome{orgID: found.ID}
	if err := tx.Organizations().Lock(ctx, found.ID); err != nil {
		return outcome{fail: err}
	}
	org, err := tx.Organizations().Get(ctx, found.ID) // as it is now that it is locked
	if err != nil {
		return outcome{fail: err}
	}
	c := change{s: s, ctx: ctx, tx: tx, org: org, at: time.Unix(ev.Created, 0).UTC(), plan: org.Plan, b: org.Billing}
	switch ev.Type {
	case EventSubscriptionCreated, EventSubscriptionUpdated, EventSubscriptionDeleted:
		o.errText, o.note = c.subscription(ev.Type, &sub)
	case EventPaymentSucceeded:
		c.paymentSucceeded(&inv)
	case EventPaymentFailed:
		c.paymentFailed(&inv)
	}
	if o.errText != "" {
		return o
	}
	if err := c.save(); err != nil {
		return outcome{fail: err}
	}
	return o
}

// change is an event's effect on one locked organization.
type change struct {
	s    *Service
	ctx  context.Context
	tx   store.Store
	org  *domain.Organization
	at   time.Time // the event's creation time
	plan domain.Plan
	b    domain.Billing
	mail []mail.Content
}

// newer reports whether the event is at least as new as the state last set at last.
func (c *change) newer(last *time.Time) bool { return last == nil || !c.at.Before(*last) }

func (c *change) setStatus(st domain.BillingStatus) {
	if c.newer(c.b.StatusAt) {
		c.b.Status, c.b.StatusAt = st, &c.at
	}
}

func (c *change) subscription(typ stripe.EventType, sub *stripe.Subscription) (errText, note string) {
	if !c.newer(c.b.EventAt) {
		return "", "older than the subscription state already applied"
	}
	current := c.b.ProviderSubscriptionID
	if typ != EventSubscriptionCreated && current != nil && *current != sub.ID {
		return "", "not the organization's current subscription (" + *current + ")"
	}
	if typ == EventSubscriptionDeleted {
		previous := c.plan
		c.plan, c.b.ProviderSubscriptionID = domain.PlanFree, nil
		c.b.CurrentPeriodStart, c.b.CurrentPeriodEnd = nil, nil
		c.b.EventAt = &c.at
		c.setStatus(domain.BillingCanceled)
		c.render(c.s.renderer.SubscriptionCanceled(mail.SubscriptionCanceledData{OrganizationName: c.org.Name, PreviousPlan: previous}))
		return "", ""
	}
	plan, price := c.s.planOf(sub)
	if plan == "" {
		return fmt.Sprintf("price %q is not a configured plan price (STRIPE_PRICE_TEAM, STRIPE_PRICE_ENTERPRISE)", price), ""
	}
	c.plan, c.b.ProviderSubscriptionID, c.b.EventAt = plan, &sub.ID, &c.at
	if start, end := subscriptionPeriod(sub); start != nil {
		c.b.CurrentPeriodStart, c.b.CurrentPeriodEnd = start, end
	}
	if typ == EventSubscriptionCreated {
		c.setStatus(domain.BillingActive)
	}
	return "", ""
}

func (c *change) paymentSucceeded(inv *stripe.Invoice) {
	paid := c.at
	if inv.StatusTransitions != nil && inv.StatusTransitions.PaidAt > 0 {
		paid = time.Unix(inv.StatusTransitions.PaidAt, 0).UTC()
	}
	if c.b.LastPaymentDate == nil || !paid.Before(*c.b.LastPaymentDate) {
		amount := float64(inv.AmountPaid) / math.Pow10(mail.CurrencyDecimals(string(inv.Currency))) // major units
		c.b.LastPaymentDate, c.b.LastPaymentAmount = &paid, &amount
	}
	c.setStatus(domain.BillingActive)
	c.render(c.s.renderer.PaymentSucceeded(mail.PaymentSucceededData{OrganizationName: c.org.Name,
		AmountMinor: inv.AmountPaid, Currency: string(inv.Currency), PaidAt: paid}))
}

func (c *change) paymentFailed(inv *stripe.Invoice) {
	if c.b.LastPaymentAttempt == nil || c.at.After(*c.b.LastPaymentAttempt) {
		c.b.LastPaymentAttempt = &c.at
	}
	if !c.newer(c.b.StatusAt) {
		return // a notice older than the state applied (e.g. a later payment went through)
	}
	c.setStatus(domain.BillingPastDue)
	c.s.log.Warn("payment failed: needs manual review", "org", c.org.ID, "invoice", inv.ID,
		"amountDue", inv.AmountDue, "currency", inv.Currency, "attempt", inv.AttemptCount)
	c.render(c.s.renderer.PaymentFailed(mail.PaymentFailedData{OrganizationName: c.org.Name,
		AmountMinor: inv.AmountDue, Currency: string(inv.Currency)}))
}

func (c *change) render(content mail.Content, err error) {
	if err != nil {
		c.s.log.Error("rendering a billing e-mail failed", "org", c.org.ID, "err", err)
		return
	}
	c.mail = append(c.mail, content)
}

// save writes the organization, queues the e-mails and, when the plan moved, raises the
// alerts its new limits call for.
func (c *change) save() error {
	if err := c.tx.Organizations().UpdatePlan(c.ctx, c.org.ID, c.plan, c.b); err != nil {
		return err
	}
	for _, m := range c.mail {
		if err := mailAdmins(c.ctx, c.tx, c.org.ID, m, c.s.clock(), c.s.notify); err != nil {
			return err
		}
	}
	if c.plan == c.org.Plan && sameTime(c.b.CurrentPeriodStart, c.org.Billing.CurrentPeriodStart) {
		return nil
	}
	if c.plan != c.org.Plan {
		if err := c.tx.Audit().Append(c.ctx, &domain.AuditEntry{OrganizationID: c.org.ID, ActorID: domain.AuditPaymentProvider,
			Action: "organization.plan_changed", TargetType: "organization", TargetID: c.org.ID,
			Details: map[string]any{"from": c.org.Plan, "to": c.plan}, CreatedAt: c.s.clock()}); err != nil {
			return err
		}
	}
	c.org.Plan, c.org.Billing = c.plan, c.b
	return c.s.alerts.CheckAll(c.ctx, c.tx, c.org)
}

func sameTime(a, b *time.Time) bool { return (a == nil) == (b == nil) && (a == nil || a.Equal(*b)) }

// planOf finds the plan a subscription pays for: its price as configured, else the plan that
// Verdict's checkout wrote into the subscription's metadata.
func (s *Service) planOf(sub *stripe.Subscription) (domain.Plan, string) {
	price := ""
	if sub.Items != nil {
		for _, it := range sub.Items.Data {
			if it.Price == nil {
				continue
			}
			price = it.Price.ID
			if plan := s.planForPrice(price); plan != "" {
				return plan, price
			}
		}
	}
	if p := domain.Plan(sub.Metadata["plan"]); p == domain.PlanTeam || p == domain.PlanEnterprise {
		return p, price
	}
	return "", price
}

// subscriptionPeriod is the subscription's current period, which the provider's current API
// reports on its items.
func subscriptionPeriod(sub *stripe.Subscription) (start, end *time.Time) {
	if sub.Items == nil {
		return nil, nil
	}
	for _, it := range sub.Items.Data {
		if it.CurrentPeriodStart > 0 && it.CurrentPeriodEnd > it.CurrentPeriodStart {
			s, e := time.Unix(it.CurrentPeriodStart, 0).UTC(), time.Unix(it.CurrentPeriodEnd, 0).UTC()
			return &s, &e
		}
	}
	return nil, nil
}
