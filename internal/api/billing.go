package api

import (
	"errors"
	"io"
	"net/http"
	"strconv"

	"verdict/internal/domain"
)

func (s *Server) checkout(w http.ResponseWriter, r *http.Request) {
	var in struct {
		PriceID string `json:"priceId"`
		PlanID  string `json:"planId"`
	}
	if err := decode(w, r, &in); err != nil {
		writeDomainError(w, err)
		return
	}
	c, err := s.billing.StartCheckout(r.Context(), principalFrom(r), in.PriceID, in.PlanID)
	if err != nil {
		s.fail(w, r, err, "Failed to create checkout session")
		return
	}
	ok(w, obj{"checkoutUrl": c.URL, "sessionId": c.SessionID})
}

func (s *Server) billingPortal(w http.ResponseWriter, r *http.Request) {
	url, err := s.billing.OpenPortal(r.Context(), principalFrom(r))
	if err != nil {
		s.fail(w, r, err, "Failed to create portal session")
		return
	}
	ok(w, obj{"portalUrl": url})
}

func (s *Server) subscription(w http.ResponseWriter, r *http.Request) {
	sub, err := s.billing.Subscription(r.Context(), principalFrom(r))
	if err != nil {
		s.fail(w, r, err, "Failed to fetch subscription")
		return
	}
	b := sub.Billing
	var status any
	if b.Status != "" {
		status = b.Status
	}
	limits := obj{"maxUsers": sub.Limits.MaxUsers, "maxTestRuns": sub.Limits.MaxTestRuns, "maxProjects": sub.Limits.MaxProjects,
		"maxConcurrentRuns": sub.Limits.MaxConcurrentRuns, "maxStorageBytes": sub.Limits.MaxStorageBytes,
		"currentStorageUsedBytes": sub.StorageUsed}
	ok(w, obj{"subscription": obj{
		"plan":                   sub.Plan,
		"status":                 status,
		"providerSubscriptionId": b.ProviderSubscriptionID,
		"hasBillingAccount":      b.ProviderCustomerID != "",
		"currentPeriod":          obj{"startDate": ts(sub.PeriodStart), "endDate": ts(sub.PeriodEnd)},
		"lastPaymentDate":        tsPtr(b.LastPaymentDate),
		"lastPaymentAmount":      b.LastPaymentAmount,
		"lastPaymentAttempt":     tsPtr(b.LastPaymentAttempt),
		"limits":                 limits,
	}})
}

func (s *Server) billingEvents(w http.ResponseWriter, r *http.Request) {
	limit := 50
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			writeDomainError(w, domain.BadRequest("Validation error", "limit must be a whole number"))
			return
		}
		limit = n
	}
	events, err := s.billing.Events(r.Context(), principalFrom(r), limit)
	if err != nil {
		s.fail(w, r, err, "Failed to fetch billing events")
		return
	}
	out := make([]obj, 0, len(events))
	for _, e := range events {
		out = append(out, obj{"eventId": e.EventID, "eventType": e.EventType, "status": e.Status,
			"error": nullable(e.Error), "createdAt": ts(e.CreatedAt), "processedAt": ts(e.ProcessedAt)})
	}
	ok(w, obj{"events": out})
}

// stripeWebhook receives the payment provider's events. The signature covers the raw body,
// so the body is read as bytes and handed over untouched.
func (s *Server) stripeWebhook(w http.ResponseWriter, r *http.Request) {
	// The provider's events are far below the API's body limit.
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		s.observe.WebhookOutcome("rejected")
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			writeDomainError(w, errBodyTooLarge)
			return
		}
		writeDomainError(w, domain.BadRequest("Invalid payload", "The request body could not be read"))
		return
	}
	res, err := s.billing.HandleWebhook(r.Context(), body, r.Header.Get("Stripe-Signature"))
	if err != nil {
		var de *domain.Error
		if errors.As(err, &de) && statusOf(de) < http.StatusInternalServerError {
			s.observe.WebhookOutcome("rejected")
		} else {
			s.observe.WebhookOutcome("failed")
		}
		s.fail(w, r, err, "Webhook processing failed")
		return
	}
	switch {
	case res.Duplicate:
		s.observe.WebhookOutcome("duplicate")
		writeJSON(w, http.StatusOK, obj{"received": true, "duplicate": true})
		return
	case res.Failed:
		s.observe.WebhookOutcome("error")
	case res.Ignored:
		s.observe.WebhookOutcome("ignored")
	default:
		s.observe.WebhookOutcome("applied")
	}
	writeJSON(w, http.StatusOK, obj{"received": true})
}

func (s *Server) webhookTest(w http.ResponseWriter, r *http.Request) {
	provider, secret := s.billing.Configured(), s.billing.WebhookConfigured()
	msg := "Webhook endpoint is reachable"
	if !secret {
		msg += "; STRIPE_WEBHOOK_SECRET is not set, so events are refused"
	}
	writeJSON(w, http.StatusOK, obj{"status": "ok", "message": msg, "providerConfigured": provider,
		"webhookSecretConfigured": secret})
}
