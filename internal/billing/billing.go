// Package billing moves organizations between plans through the payment provider: checkout
// and customer-portal sessions, the provider's webhook events (each applied once), the
// e-mails they cause, and usage alerts as consumption nears a plan's limits.
package billing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"verdict/internal/domain"
	"verdict/internal/identity"
	"verdict/internal/mail"
	"verdict/internal/store"
)

// Service is the billing service.
type Service struct {
	store         store.Store
	provider      Provider
	webhookSecret string
	prices        map[domain.Plan]string
	publicURL     string
	renderer      *mail.Renderer
	notify        func()
	alerts        *Alerts
	clock         domain.Clock
	log           *slog.Logger
}

// Deps are the Service's collaborators and settings. Store and Renderer are required; New fills
// in the others.
type Deps struct {
	Store    store.Store
	Provider Provider // nil when no secret key is configured: billing routes answer 503
	// WebhookSecret verifies the provider's event signatures; empty: the webhook answers 503.
	WebhookSecret string
	Prices        map[domain.Plan]string // plan → the provider's price ID
	PublicURL     string                 // where checkout and the portal send people back
	Renderer      *mail.Renderer
	Notify        func() // wakes the mail sender after e-mails were queued; nil: its next poll
	Alerts        *Alerts
	Clock         domain.Clock
	Log           *slog.Logger
}

// New builds a Service.
func New(d Deps) *Service {
	if d.Notify == nil {
		d.Notify = func() {}
	}
	if d.Clock == nil {
		d.Clock = domain.SystemClock
	}
	if d.Log == nil {
		d.Log = slog.Default()
	}
	return &Service{store: d.Store, provider: d.Provider, webhookSecret: d.WebhookSecret, prices: d.Prices,
		publicURL: d.PublicURL, renderer: d.Renderer, notify: d.Notify, alerts: d.Alerts, clock: d.Clock, log: d.Log}
}

// Where the provider's pages send people back to, under the public URL.
const (
	checkoutSuccessPath = "/" + mail.BillingPath + "?checkout=success&session_id={CHECKOUT_SESSION_ID}"
	checkoutCancelPath  = "/" + mail.BillingPath + "?checkout=canceled"
	portalReturnPath    = "/" + mail.BillingPath
)

var (
	errNotConfigured = domain.Unavailable("Billing not configured",
		"Payments are not set up on this server (STRIPE_SECRET_KEY is not set)")
	errProvider = domain.Upstream("Payment provider error",
		"The payment provider did not accept the request; try again later")
)

// Configured reports whether the provider's API can be called.
func (s *Service) Configured() bool { return s.provider != nil }

// WebhookConfigured reports whether provider events can be verified.
func (s *Service) WebhookConfigured() bool { return s.webhookSecret != "" }

// Checkout is a started checkout session.
type Checkout struct{ URL, SessionID string }

// StartCheckout opens a subscription checkout for a configured price or a paid plan (admin
// only), creating the organization's provider customer, under the admin's e-mail, on first use.
func (s *Service) StartCheckout(ctx context.Context, p *identity.Principal, priceID, planID string) (*Checkout, error) {
	if err := p.RequireAdmin(); err != nil {
		return nil, err
	}
	if !s.Configured() {
		return nil, errNotConfigured
	}
	plan, price, err := s.resolvePrice(priceID, planID)
	if err != nil {
		return nil, err
	}
	org, err := s.store.Organizations().Get(ctx, p.OrgID)
	if err != nil {
		return nil, err
	}
	if b := org.Billing; b.ProviderSubscriptionID != nil && b.Status != domain.BillingCanceled {
		return nil, domain.Conflict("Subscription exists",
			"The organization already has a subscription; change or cancel it in the customer portal (POST /api/billing/portal)")
	}
	customer, err := s.customer(ctx, org, p.User.Email)
	if err != nil {
		return nil, err
	}
	url, id, err := s.provider.CreateCheckout(ctx, CheckoutRequest{OrganizationID: org.ID, CustomerID: customer,
		PriceID: price, Plan: plan, SuccessURL: s.publicURL + checkoutSuccessPath, CancelURL: s.publicURL + checkoutCancelPath})
	if err != nil {
		s.log.Error("creating a checkout session failed", "org", org.ID, "err", err)
		return nil, errProvider
	}
	return &Checkout{URL: url, SessionID: id}, nil
}

// resolvePrice maps the request's priceId or planId to a plan and a configured price.
func (s *Service) resolvePrice(priceID, planID string) (domain.Plan, string, error) {
	switch {
	case priceID != "":
		if plan := s.planForPrice(priceID); plan != "" {
			return plan, priceID, nil
		}
		return "", "", domain.BadRequest("Invalid price", "priceId is not one of this server's plan prices")
	case planID != "":
		plan := domain.Plan(planID)
		if plan != domain.PlanTeam && plan != domain.PlanEnterprise {
			return "", "", domain.BadRequest("Invalid plan", "planId must be team or enterprise")
		}
		if s.prices[plan] == "" {
			return "", "", domain.Unavailable("Plan not available",
				"No price is configured for the "+planID+" plan (STRIPE_PRICE_"+strings.ToUpper(planID)+")")
		}
		return plan, s.prices[plan], nil
	}
	return "", "", domain.BadRequest("Missing required fields", "priceId or planId is required")
}

// planForPrice is the plan a configured price pays for, or "".
func (s *Service) planForPrice(price string) domain.Plan {
	for plan, id := range s.prices {
		if id != "" && id == price {
			return plan
		}
	}
	return ""
}

// customer returns the organization's provider customer, creating and storing it on first
// use. Two admins starting checkouts at once get the same customer: the provider call is
// idempotent per organization, and the first stored ID wins.
func (s *Service) customer(ctx context.Context, org *domain.Organization, email string) (string, error) {
	if org.Billing.ProviderCustomerID != "" {
		return org.Billing.ProviderCustomerID, nil
	}
	id, err := s.provider.CreateCustomer(ctx, org.ID, org.Name, email)
	if err != nil {
		s.log.Error("creating the payment provider's customer failed", "org", org.ID, "err", err)
		return "", errProvider
	}
	err = s.store.InTx(ctx, func(tx store.Store) error {
		if err := tx.Organizations().Lock(ctx, org.ID); err != nil {
			return err
		}
		cur, err := tx.Organizations().Get(ctx, org.ID)
		if err != nil {
			return err
		}
		if cur.Billing.ProviderCustomerID != "" {
			id = cur.Billing.ProviderCustomerID
			return nil
		}
		cur.Billing.ProviderCustomerID = id
		return tx.Organizations().UpdatePlan(ctx, org.ID, cur.Plan, cur.Billing)
	})
	if errors.Is(err, store.ErrConflict) {
		// The provider gave an ID another organization holds: never link two tenants to one customer.
		s.log.Error("payment provider customer already linked to another organization", "org", org.ID, "customer", id)
		return "", errProvider
	}
	return id, err
}

// OpenPortal opens the provider's customer portal, where admins change plan, payment method
// and invoices (admin only).
func (s *Service) OpenPortal(ctx context.Context, p *identity.Principal) (string, error) {
	if err := p.RequireAdmin(); err != nil {
		return "", err
	}
	if !s.Configured() {
		return "", errNotConfigured
	}
	org, err := s.store.Organizations().Get(ctx, p.OrgID)
	if err != nil {
		return "", err
	}
	if org.Billing.ProviderCustomerID == "" {
		return "", domain.BadRequest("No billing account", "The organization has no billing account yet; start a checkout first")
	}
	url, err := s.provider.CreatePortal(ctx, org.Billing.ProviderCustomerID, s.publicURL+portalReturnPath)
	if err != nil {
		s.log.Error("creating a customer portal session failed", "org", org.ID, "err", err)
		return "", errProvider
	}
	return url, nil
}

// EndSubscription cancels the organization's subscription with the payment provider, for its
// erasure: nothing of it is charged again. An organization without one has nothing to cancel.
// With no provider configured nothing can be cancelled here: the operator is told, with the
// subscription's ID, to cancel it in the provider's dashboard, and the erasure goes on.
func (s *Service) EndSubscription(ctx context.Context, org *domain.Organization) error {
	sub := org.Billing.ProviderSubscriptionID
	if sub == nil || *sub == "" {
		return nil
	}
	if !s.Configured() {
		s.log.Warn("an erased organization's subscription could not be cancelled: no payment provider is configured; cancel it in the provider's dashboard",
			"org", org.ID, "subscription", *sub, "customer", org.Billing.ProviderCustomerID)
		return nil
	}
	if err := s.provider.CancelSubscription(ctx, *sub); err != nil {
		return fmt.Errorf("cancelling subscription %s: %w", *sub, err)
	}
	return nil
}

// MaxEventsListed bounds one answer of Events.
const MaxEventsListed = 200

// Events lists the organization's webhook log, newest first: which provider events arrived
// and what became of them (admin only).
func (s *Service) Events(ctx context.Context, p *identity.Principal, limit int) ([]store.BillingEvent, error) {
	if err := p.RequireAdmin(); err != nil {
		return nil, err
	}
	if !s.Configured() {
		return nil, errNotConfigured
	}
	if limit <= 0 || limit > MaxEventsListed {
		return nil, domain.BadRequest("Validation error", fmt.Sprintf("limit must be between 1 and %d", MaxEventsListed))
	}
	return s.store.BillingEvents().List(ctx, p.OrgID, limit)
}

// Subscription is the organization's plan and subscription as Verdict knows it.
type Subscription struct {
	Plan                   domain.Plan
	Billing                domain.Billing
	PeriodStart, PeriodEnd time.Time // the current billing period (calendar month without a subscription)
	Limits                 domain.Limits
	StorageUsed            int64
}

// Subscription reads the organization's subscription (every role).
func (s *Service) Subscription(ctx context.Context, p *identity.Principal) (*Subscription, error) {
	if !s.Configured() {
		return nil, errNotConfigured
	}
	org, err := s.store.Organizations().Get(ctx, p.OrgID)
	if err != nil {
		return nil, err
	}
	start, end := domain.BillingPeriod(org, s.clock())
	return &Subscription{Plan: org.Plan, Billing: org.Billing, PeriodStart: start, PeriodEnd: end,
		Limits: org.Limits(), StorageUsed: org.StorageUsedBytes}, nil
}
