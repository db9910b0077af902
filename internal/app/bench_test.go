//go:build integration

package app_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"verdict/internal/domain"
)

// BenchmarkMe measures an authenticated GET /api/auth/me through the whole middleware stack
// (rate limit, authentication with the user re-read, handler, JSON), in process, without the
// network: the figure is Verdict's own cost per request.
func BenchmarkMe(b *testing.B) {
	for _, d := range []string{"sqlite", "postgres"} {
		b.Run(d, func(b *testing.B) {
			h := newHarness(b, harnessOpts{dialect: d})
			acc := h.signup("bench@example.com", "Bench Co")
			key := h.do("POST", "/api/auth/api-keys", bearer(acc.token), map[string]any{"name": "bench"}).str("apiKey")
			for _, c := range []struct {
				name, header, value string
			}{{"jwt", "Authorization", "Bearer " + acc.token}, {"apikey", "X-Api-Key", key}} {
				b.Run(c.name, func(b *testing.B) {
					req := httptest.NewRequest("GET", "/api/auth/me", nil)
					req.Header.Set(c.header, c.value)
					b.ReportAllocs()
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						w := httptest.NewRecorder()
						h.app.API.ServeHTTP(w, req)
						if w.Code != http.StatusOK {
							b.Fatalf("status %d: %s", w.Code, w.Body)
						}
					}
				})
			}
		})
	}
}

// BenchmarkQueue measures POST /api/executions (validation, the organization lock, the run
// limit count, the insert, the usage-alert check) without a runner taking the runs, on a team
// organization past 50 % of its run limit: the alert check then costs no write.
func BenchmarkQueue(b *testing.B) {
	for _, d := range []string{"sqlite", "postgres"} {
		b.Run(d, func(b *testing.B) {
			h := newHarness(b, harnessOpts{dialect: d, env: map[string]string{"VERDICT_RUNNER": "none"}})
			acc := h.signup("bench@example.com", "Bench Co")
			if err := h.app.Store.Organizations().UpdatePlan(context.Background(), acc.orgID, domain.PlanTeam, domain.Billing{}); err != nil {
				b.Fatal(err)
			}
			for range 600 {
				h.queue(bearer(acc.token), map[string]any{"image": "img"})
			}
			body := []byte(`{"image":"img","environment":"staging"}`)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if i%300 == 299 { // stay under the team plan's 1000 runs of the period
					b.StopTimer()
					h.clock.Advance(31 * 24 * time.Hour)
					acc.token = h.do("POST", "/api/auth/login", anon, map[string]any{"email": acc.email, "password": password}).str("token")
					for range 600 {
						h.queue(bearer(acc.token), map[string]any{"image": "img"})
					}
					b.StartTimer()
				}
				req := httptest.NewRequest("POST", "/api/executions", bytes.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+acc.token)
				w := httptest.NewRecorder()
				h.app.API.ServeHTTP(w, req)
				if w.Code != http.StatusCreated {
					b.Fatalf("status %d: %s", w.Code, w.Body)
				}
			}
		})
	}
}

// BenchmarkWebhook measures one provider event from signed delivery to commit: signature
// check, the webhook log entry, the organization's change and the receipt e-mail to its admins.
func BenchmarkWebhook(b *testing.B) {
	for _, d := range []string{"sqlite", "postgres"} {
		b.Run(d, func(b *testing.B) {
			h := newHarness(b, harnessOpts{dialect: d, env: billingEnv(b, nil)})
			acc := h.signup("bench@example.com", "Bench Co")
			h.linkCustomer(acc.orgID, "cus_bench")
			at := h.clock.Now()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				body := event(fmt.Sprintf("evt_%d", i), "invoice.payment_succeeded", at, invoiceObject("in_1", "cus_bench", 9900, at))
				req := httptest.NewRequest("POST", "/api/webhooks/stripe", bytes.NewReader(body))
				req.Header.Set("Stripe-Signature", sign(body, webhookSecret, time.Now()))
				w := httptest.NewRecorder()
				h.app.API.ServeHTTP(w, req)
				if w.Code != http.StatusOK {
					b.Fatalf("status %d: %s", w.Code, w.Body)
				}
			}
		})
	}
}
