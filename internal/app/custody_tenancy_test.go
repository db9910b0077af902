//go:build integration

package app_test

import (
	"bytes"
	"context"
	"net/url"
	"strings"
	"testing"

	"verdict/internal/domain"
)

// TestCustodyTenancy: another organization's admin, through every route of the company
// features (audit log, export, single sign-on, erasure and its cancel, their dashboard pages),
// never reaches the first organization: a route naming one of its resources answers 404, and
// the routes that act on the caller's own organization (none names another) answer with the
// caller's own data only, and change nothing of the first organization's.
func TestCustodyTenancy(t *testing.T) {
	for _, d := range []string{"sqlite", "postgres"} {
		t.Run(d, func(t *testing.T) {
			h, op := ssoHarness(t, d)
			ctx := context.Background()
			// The first organization: audit entries, a run, its provider, its erasure scheduled.
			alphaB := h.signUpBrowser(t, "alpha-admin@alpha.test", "Alpha Co")
			alpha := account{token: alphaB.session(), email: "alpha-admin@alpha.test"}
			alpha.orgID = h.do("GET", "/api/auth/me", bearer(alpha.token), nil).str("data", "organization", "id")
			alphaDev := h.join(alpha, "alpha-dev@alpha.test", "developer")
			expect(t, h.do("PUT", "/api/organization/sso", bearer(alpha.token), map[string]any{"issuer": op.Issuer,
				"clientId": op.ClientID, "clientSecret": op.ClientSecret, "domains": []string{"alpha.test"}, "defaultRole": "viewer"}), 200, "")
			e := &domain.Execution{OrganizationID: alpha.orgID, TaskID: "alpha-run", Image: passImage, Status: domain.ExecPassed,
				QueuedAt: h.clock.Now(), Summary: domain.Summary{Total: 1, Passed: 1},
				Tests: []domain.TestResult{{Name: "alpha test", Suite: "alpha suite", Status: domain.TestPassed}}}
			if err := h.app.Store.Executions().Create(ctx, e); err != nil {
				t.Fatal(err)
			}
			expect(t, h.do("DELETE", "/api/organization", bearer(alpha.token), map[string]any{"confirm": "alpha-co"}), 202, "")
			alphaEraseAt := h.do("GET", "/api/organization", bearer(alpha.token), nil).str("organization", "eraseAt")
			// What of the first organization must never show to the second.
			markers := []string{alpha.orgID, alphaDev.id, "alpha-admin@alpha.test", "alpha-dev@alpha.test", "alpha.test",
				"alpha-run", "alpha test", "Alpha Co", "alpha-co"}
			noneOf := func(what, body string) {
				t.Helper()
				for _, m := range markers {
					if strings.Contains(body, m) {
						t.Errorf("%s shows %q of the other organization", what, m)
					}
				}
			}

			// The second organization's admin, by bearer token and in the browser.
			betaB := h.signUpBrowser(t, "beta-admin@beta.test", "Beta Co")
			beta := bearer(betaB.session())

			for _, path := range []string{"/api/audit?limit=500", "/api/audit?actor=" + alphaDev.id, "/api/audit?format=csv",
				"/api/audit?format=jsonl", "/api/organization/sso", "/api/organization"} {
				r := h.do("GET", path, beta, nil)
				if r.status != 200 {
					t.Fatalf("GET %s: %d %s", path, r.status, r.raw)
				}
				noneOf("GET "+path, r.raw)
			}
			if r := h.do("GET", "/api/audit?actor="+alphaDev.id, beta, nil); r.get("data", "total") != 0.0 {
				t.Errorf("the audit log by the other organization's member: %s", r.raw)
			}
			ex := h.do("GET", "/api/organization/export", beta, nil)
			if ex.status != 200 {
				t.Fatalf("export: %d %s", ex.status, ex.raw)
			}
			files := exportArchive(t, bytes.NewReader([]byte(ex.raw)))
			if files["organization.json"] == "" {
				t.Fatalf("export: %v", files)
			}
			for name, body := range files {
				noneOf("export "+name, body)
			}
			// The first organization's resources: 404.
			expect(t, h.do("GET", "/api/executions/alpha-run", beta, nil), 404, "Execution not found")
			if res, _ := fetch(t, noFollow, h.srv.URL, "/reports/"+alpha.orgID+"/alpha-run/index.html?token=x"); res.StatusCode != 404 {
				t.Errorf("the other organization's report: %d", res.StatusCode)
			}
			// The routes that change the caller's own organization reach nothing of the first.
			put := map[string]any{"issuer": op.Issuer, "clientId": "beta", "clientSecret": "beta-secret",
				"domains": []string{"alpha.test"}, "defaultRole": "admin", "required": true}
			expect(t, h.do("PUT", "/api/organization/sso", beta, put), 409, "Domain already claimed")
			expect(t, h.do("DELETE", "/api/organization", beta, map[string]any{"confirm": "alpha-co"}), 400, "Invalid confirmation")
			expect(t, h.do("POST", "/api/organization/erase/cancel", beta, nil), 409, "No erasure scheduled")

			// The dashboard's pages and forms, the same.
			for _, path := range []string{"/settings", "/settings/audit", "/settings/audit/export?format=jsonl", "/runs"} {
				p := betaB.get(path)
				if p.status != 200 {
					t.Fatalf("GET %s: %d", path, p.status)
				}
				noneOf("page "+path, p.body)
			}
			wantStatus(t, "the other organization's run page", betaB.get("/runs/alpha-run"), 404, "Run not found")
			betaB.get("/settings")
			betaB.follow("claim the domain", betaB.post("/settings/sso", url.Values{"issuer": {op.Issuer}, "clientId": {"beta"},
				"clientSecret": {"beta-secret"}, "domains": {"alpha.test"}, "defaultRole": {"admin"}}), 200, "Domain already claimed")
			betaB.get("/settings")
			betaB.follow("erase by the other slug", betaB.post("/settings/erase", url.Values{"confirm": {"alpha-co"}}), 200, "Invalid confirmation")
			betaB.get("/settings")
			betaB.follow("cancel", betaB.post("/settings/erase/cancel", nil), 200, "No erasure scheduled")

			// The first organization is as it was.
			g := h.do("GET", "/api/organization/sso", bearer(alpha.token), nil)
			if g.str("data", "clientId") != op.ClientID || g.str("data", "defaultRole") != "viewer" || g.get("data", "required") != false {
				t.Errorf("the first organization's provider changed: %s", g.raw)
			}
			if got := h.do("GET", "/api/organization", bearer(alpha.token), nil).str("organization", "eraseAt"); got != alphaEraseAt || got == "" {
				t.Errorf("the first organization's erasure: %q, want %q", got, alphaEraseAt)
			}
			if got := h.do("GET", "/api/organization", beta, nil); got.get("organization", "eraseAt") != nil {
				t.Errorf("the second organization's erasure was scheduled: %s", got.raw)
			}
		})
	}
}
