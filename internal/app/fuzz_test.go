//go:build integration

package app_test

import (
	"bytes"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"verdict/internal/domain"
)

// FuzzRequestBodies sends arbitrary bodies to the routes that decode JSON, as an admin of a real
// organization: whatever the body, the answer is a 2xx or a 4xx with the API's error body,
// never a 5xx. Run longer with: go test -run '^$' -fuzz FuzzRequestBodies ./internal/app
func FuzzRequestBodies(f *testing.F) {
	// The harness clock never moves, so no rate-limit window would ever reset: lift the limits.
	h := newHarness(f, harnessOpts{dialect: "sqlite", env: billingEnv(f, nil), rateLimits: limitsAt(1 << 40)})
	admin := h.signup("fuzz@example.com", "Fuzz Co")
	routes := []struct{ method, path string }{
		{"POST", "/api/auth/signup"}, {"POST", "/api/auth/login"}, {"POST", "/api/auth/api-keys"},
		{"PATCH", "/api/users/" + admin.id + "/role"}, {"PATCH", "/api/users/" + admin.id + "/status"},
		{"PATCH", "/api/organization"}, {"PATCH", "/api/organization/ai-analysis"}, {"PATCH", "/api/organization/features"},
		{"POST", "/api/invitations"}, {"POST", "/api/invitations/accept"},
		{"POST", "/api/projects"}, {"POST", "/api/executions"}, {"POST", "/api/billing/checkout"},
		{"POST", "/api/test-cases"},
	}
	for _, seed := range []string{
		`{"email":"a@b.co","password":"Str0ng!pass","name":"n","organizationName":"Org"}`,
		`{"role":"admin"}`, `{"status":"suspended"}`, `{"name":"x","aiAnalysisEnabled":true}`, `{"enabled":null}`,
		`{"aiFeatures":{"automationPlanner":1}}`, `{"email":"x@y.z","role":"viewer"}`, `{"token":"` + strings.Repeat("a", 64) + `"}`,
		`{"name":"p","envVars":[{"key":"A","value":"b","secret":true}],"reportFolders":["/app/x"],"targetUrls":{"staging":"http://x"}}`,
		`{"image":"x","envVars":{"A":"b"},"taskId":"t-1","timeoutSeconds":1e3,"folder":"../x"}`,
		`{"image":"x","labels":{"branch":"main","Bad Key":"v","note":"a\nb"}}`, `{"image":"x","labels":["a"]}`,
		`{"planId":"team"}`, `{"priceId":"price_team_test","planId":"x"}`,
		`{"projectId":"0123456789abcdef01234567","title":"t","tags":["a"],"priority":"high","steps":[{"action":"a","expected":"b"}]}`,
		`null`, `[]`, `"str"`, `{"a":`, "{\"name\":\"\\u0000\"}", `{"timeoutSeconds":99999999999999999999}`,
	} {
		for i := range routes {
			f.Add(i, []byte(seed))
		}
	}
	f.Fuzz(func(t *testing.T, route int, body []byte) {
		if route < 0 {
			route = -route
		}
		r := routes[route%len(routes)]
		req := httptest.NewRequest(r.method, r.path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+admin.token)
		req.RemoteAddr = "192.0.2.1:1234"
		w := httptest.NewRecorder()
		h.app.API.ServeHTTP(w, req)
		if w.Code >= 500 {
			t.Fatalf("%s %s with %q: %d %s", r.method, r.path, body, w.Code, w.Body)
		}
		if w.Code >= 400 && (!strings.Contains(w.Body.String(), `"success":false`) || !strings.Contains(w.Body.String(), `"error":`)) {
			t.Fatalf("%s %s: %d without the error body: %s", r.method, r.path, w.Code, w.Body)
		}
	})
}

// FuzzWebhookEvents delivers arbitrary bodies, correctly signed, to the payment provider's
// webhook: whatever the event says, the answer is 200 or a 400 with the error body, never a
// 5xx. Run longer with: go test -run '^$' -fuzz FuzzWebhookEvents ./internal/app
func FuzzWebhookEvents(f *testing.F) {
	h := newHarness(f, harnessOpts{dialect: "sqlite", env: billingEnv(f, nil), rateLimits: limitsAt(1 << 40)})
	admin := h.signup("fuzz@example.com", "Fuzz Co")
	h.linkCustomer(admin.orgID, "cus_fuzz")
	at := h.clock.Now()
	for i, seed := range [][]byte{
		event("evt_s1", "customer.subscription.created", at, subscriptionObject("sub_1", "cus_fuzz", priceTeam, at)),
		event("evt_s2", "customer.subscription.updated", at, subscriptionObject("sub_1", "cus_fuzz", priceEnterprise, at)),
		event("evt_s3", "customer.subscription.deleted", at, subscriptionObject("sub_1", "cus_fuzz", priceTeam, at)),
		event("evt_i1", "invoice.payment_succeeded", at, invoiceObject("in_1", "cus_fuzz", 9900, at)),
		event("evt_i2", "invoice.payment_failed", at, invoiceObject("in_2", "cus_fuzz", 9900, time.Time{})),
		event("evt_i3", "invoice.payment_failed", at, map[string]any{"customer": map[string]any{"id": 5}}),
		[]byte(`{"id":"evt_x","object":"event","type":"customer.subscription.created","data":null}`),
		[]byte(`{"id":"evt_y","object":"event","type":"invoice.payment_succeeded","created":-1,"data":{"object":{"customer":"cus_fuzz","amount_paid":-5,"currency":"jpy"}}}`),
		[]byte(`{"object":"event"}`), []byte(`{}`), []byte(``),
	} {
		f.Add(seed, i%2 == 0)
	}
	f.Fuzz(func(t *testing.T, body []byte, freshID bool) {
		if freshID {
			// Make most inputs new events rather than duplicates of an earlier one.
			body = bytes.Replace(body, []byte(`"id":"evt_`), []byte(`"id":"evt_`+domain.RandomHex(4)), 1)
		}
		req := httptest.NewRequest("POST", "/api/webhooks/stripe", bytes.NewReader(body))
		req.Header.Set("Stripe-Signature", sign(body, webhookSecret, time.Now()))
		req.RemoteAddr = "192.0.2.1:1234"
		w := httptest.NewRecorder()
		h.app.API.ServeHTTP(w, req)
		switch {
		case w.Code == 200 && strings.Contains(w.Body.String(), `"received":true`):
		case w.Code == 400 && strings.Contains(w.Body.String(), `"success":false`):
		default:
			t.Fatalf("webhook with %q: %d %s", body, w.Code, w.Body)
		}
	})
}
