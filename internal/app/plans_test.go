//go:build integration

package app_test

import (
	"context"
	"testing"

	"verdict/internal/admin"
	"verdict/internal/domain"
)

// TestDefaultPlanAndSetPlan: with VERDICT_DEFAULT_PLAN=team new organizations start on team
// (its limits apply at once); admin.SetPlan, what `verdict admin set-plan` runs, moves one to
// enterprise by its slug, which the API shows at once, and the audit log records it.
func TestDefaultPlanAndSetPlan(t *testing.T) {
	forEachDBWith(t, harnessOpts{env: map[string]string{"VERDICT_DEFAULT_PLAN": "team"}}, func(t *testing.T, h *harness) {
		a := h.signup("plans@example.com", "Self Hosted Co")
		org := h.do("GET", "/api/organization", bearer(a.token), nil)
		expect(t, org, 200, "")
		team := domain.LimitsFor(domain.PlanTeam)
		if org.str("organization", "plan") != "team" || org.get("organization", "limits", "maxUsers") != float64(team.MaxUsers) {
			t.Fatalf("a new organization: %s", org.raw)
		}
		// A second project is within team's limits (free allows one).
		for _, name := range []string{"One", "Two"} {
			expect(t, h.do("POST", "/api/projects", bearer(a.token), map[string]any{"name": name}), 201, "")
		}

		ch, err := admin.SetPlan(context.Background(), h.app.Store, org.str("organization", "slug"), domain.PlanEnterprise, nil)
		if err != nil {
			t.Fatal(err)
		}
		if ch.From != domain.PlanTeam || ch.To != domain.PlanEnterprise || ch.Organization.ID != a.orgID {
			t.Fatalf("change %+v", ch)
		}
		org = h.do("GET", "/api/organization", bearer(a.token), nil)
		if org.str("organization", "plan") != "enterprise" {
			t.Fatalf("after set-plan: %s", org.raw)
		}
		entries, err := h.app.Store.Audit().List(context.Background(), a.orgID, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) == 0 || entries[0].Action != "organization.updated" || entries[0].ActorID != admin.Actor ||
			entries[0].TargetID != a.orgID {
			t.Fatalf("audit log: %+v", entries)
		}
		plan, _ := entries[0].Details["plan"].(map[string]any)
		if plan["from"] != "team" || plan["to"] != "enterprise" {
			t.Fatalf("audit details: %+v", entries[0].Details)
		}
	})
}
