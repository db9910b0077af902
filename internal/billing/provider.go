package billing

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/stripe/stripe-go/v86"

	"verdict/internal/domain"
)

// Provider is the payment provider's API as Verdict uses it.
type Provider interface {
	// CreateCustomer creates the provider's customer for an organization. Calls with the same
	// organization ID within a day return the same customer (idempotency key).
	CreateCustomer(ctx context.Context, orgID, name, email string) (customerID string, err error)
	CreateCheckout(ctx context.Context, c CheckoutRequest) (url, sessionID string, err error)
	CreatePortal(ctx context.Context, customerID, returnURL string) (url string, err error)
	// CancelSubscription cancels a subscription at once (the organization is erased); one the
	// provider no longer has is cancelled already: nil.
	CancelSubscription(ctx context.Context, subscriptionID string) error
}

// CheckoutRequest is a subscription checkout for one plan's price.
type CheckoutRequest struct {
	OrganizationID, CustomerID, PriceID string
	Plan                                domain.Plan
	SuccessURL, CancelURL               string
}

// Stripe is the Provider backed by the official client. APIBase points it at another server
// (stripe-mock in the tests); empty means Stripe's own API.
type Stripe struct{ c *stripe.Client }

// NewStripe builds the client for a secret key.
func NewStripe(secretKey, apiBase string) *Stripe {
	cfg := &stripe.BackendConfig{
		HTTPClient:    &http.Client{Timeout: 30 * time.Second},
		LeveledLogger: &stripe.LeveledLogger{Level: stripe.LevelError},
	}
	if apiBase != "" {
		cfg.URL = stripe.String(apiBase)
	}
	return &Stripe{c: stripe.NewClient(secretKey, stripe.WithBackends(stripe.NewBackendsWithConfig(cfg)))}
}

func (s *Stripe) CreateCustomer(ctx context.Context, orgID, name, email string) (string, error) {
	p := &stripe.CustomerCreateParams{Name: stripe.String(name), Email: stripe.String(email),
		Metadata: map[string]string{"organizationId": orgID}}
	p.SetIdempotencyKey("verdict-customer-" + orgID)
	c, err := s.c.V1Customers.Create(ctx, p)
	if err != nil {
		return "", err
	}
	return c.ID, nil
}

func (s *Stripe) CreateCheckout(ctx context.Context, r CheckoutRequest) (string, string, error) {
	meta := map[string]string{"organizationId": r.OrganizationID, "plan": string(r.Plan)}
	p := &stripe.CheckoutSessionCreateParams{
		Mode:              stripe.String(string(stripe.CheckoutSessionModeSubscription)),
		Customer:          stripe.String(r.CustomerID),
		ClientReferenceID: stripe.String(r.OrganizationID),
		LineItems:         []*stripe.CheckoutSessionCreateLineItemParams{{Price: stripe.String(r.PriceID), Quantity: stripe.Int64(1)}},
		SuccessURL:        stripe.String(r.SuccessURL),
		CancelURL:         stripe.String(r.CancelURL),
		Metadata:          meta,
		SubscriptionData:  &stripe.CheckoutSessionCreateSubscriptionDataParams{Metadata: meta},
	}
	cs, err := s.c.V1CheckoutSessions.Create(ctx, p)
	if err != nil {
		return "", "", err
	}
	return cs.URL, cs.ID, nil
}

func (s *Stripe) CancelSubscription(ctx context.Context, subscriptionID string) error {
	_, err := s.c.V1Subscriptions.Cancel(ctx, subscriptionID, nil)
	var se *stripe.Error
	if errors.As(err, &se) && se.Code == stripe.ErrorCodeResourceMissing {
		return nil
	}
	return err
}

func (s *Stripe) CreatePortal(ctx context.Context, customerID, returnURL string) (string, error) {
	ps, err := s.c.V1BillingPortalSessions.Create(ctx, &stripe.BillingPortalSessionCreateParams{
		Customer: stripe.String(customerID), ReturnURL: stripe.String(returnURL)})
	if err != nil {
		return "", err
	}
	return ps.URL, nil
}
