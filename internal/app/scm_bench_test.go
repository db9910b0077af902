//go:build integration

package app_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"verdict/internal/domain"
	"verdict/internal/scm/github"
	"verdict/internal/scm/scmtest"
)

// BenchmarkHookDelivery measures a signed GitHub pull_request delivery from request to answer,
// with no runner taking the runs: the hook read, the signature over the body, the delivery
// recorded, and the run queued with its commit's pending status enqueued in the same
// transaction (the organization has a GitHub token). Compare with BenchmarkQueue.
func BenchmarkHookDelivery(b *testing.B) {
	for _, d := range []string{"sqlite", "postgres"} {
		b.Run(d, func(b *testing.B) {
			h := newHarness(b, harnessOpts{dialect: d, env: map[string]string{"VERDICT_RUNNER": "none", "VERDICT_EGRESS_ALLOW": "127.0.0.1"}})
			gh := scmtest.NewGitHub(b, "ghp_bench", "acme/shop")
			acc := h.signup("bench@example.com", "Bench Co")
			a := bearer(acc.token)
			if err := h.app.Store.Organizations().UpdatePlan(context.Background(), acc.orgID, domain.PlanEnterprise, domain.Billing{}); err != nil {
				b.Fatal(err)
			}
			expect(b, h.do("PUT", "/api/integrations/github", a, map[string]any{"token": "ghp_bench", "apiUrl": gh.URL}), 200, "")
			p := h.do("POST", "/api/projects", a, map[string]any{"name": "Shop", "image": "img", "repository": "acme/shop"})
			hk := h.do("POST", "/api/projects/"+p.str("project", "id")+"/hooks", a, map[string]any{"provider": "github"})
			path, secret := strings.TrimPrefix(hk.str("data", "hook", "url"), publicURL), hk.str("data", "hook", "secret")
			body := ghPullRequest("synchronize", sha1, "main", 42)
			sig := github.Sign(body, secret)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if i%500 == 499 { // stay under the plan's runs of the period
					b.StopTimer()
					h.clock.Advance(31 * 24 * time.Hour)
					b.StartTimer()
				}
				req := httptest.NewRequest("POST", path, bytes.NewReader(body))
				req.Header.Set("X-GitHub-Event", "pull_request")
				req.Header.Set("X-GitHub-Delivery", fmt.Sprintf("d-%d", i))
				req.Header.Set("X-Hub-Signature-256", sig)
				w := httptest.NewRecorder()
				h.app.API.ServeHTTP(w, req)
				if w.Code != http.StatusAccepted {
					b.Fatalf("status %d: %s", w.Code, w.Body)
				}
			}
		})
	}
}
