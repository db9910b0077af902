//go:build integration

package app_test

import (
	"strings"
	"testing"
)

const plannerCSV = `Title,Section,Tags,Priority,Preconditions,Steps,Expected Result
Pay with a saved card,Checkout,"smoke,payments",Critical,A user with a saved card,"Open the cart
Pay with the saved card","The total is shown
The order is confirmed"
Apply a coupon,Checkout,regression,High,,"Open the cart
Enter the coupon SAVE10","The discount is applied"
Change the avatar,Profile,regression,Low,,"Open the profile
Upload a picture","The new picture shows"
Reset the password,Login,"smoke,security",High,A registered user,"Ask for a reset link
Set a new password","Signing in with it works"
`

// testCaseIDs maps the titles of a project's test cases to their IDs.
func testCaseIDs(t *testing.T, h *harness, a account, project string) map[string]string {
	t.Helper()
	r := h.do("GET", "/api/test-cases?projectId="+project+"&limit=200", bearer(a.token), nil)
	expect(t, r, 200, "")
	out := map[string]string{}
	for _, c := range r.get("data", "testCases").([]any) {
		m := c.(map[string]any)
		out[m["title"].(string)] = m["id"].(string)
	}
	return out
}

// TestAutomationPlannerEndToEnd: import → filter options → discover → generate → history →
// open, on both databases; the flag off; viewers; and another organization's project and test
// cases, which never reach a plan, not even mixed into a selection of the caller's own.
func TestAutomationPlannerEndToEnd(t *testing.T) {
	forEachDB(t, func(t *testing.T, h *harness) {
		a := h.signup("planner@example.com", "Planned Co")
		viewer := h.join(a, "viewer@example.com", "viewer")
		other := h.signup("foreign@example.com", "Foreign Co")
		project := h.project(a, "Web shop")
		foreignProject := h.project(other, "Their shop")
		expect(t, importCSV(h, bearer(a.token), project, plannerCSV), 200, "")
		expect(t, importCSV(h, bearer(other.token), foreignProject, plannerCSV), 200, "")
		ids := testCaseIDs(t, h, a, project)
		foreign := testCaseIDs(t, h, other, foreignProject)
		if len(ids) != 4 || len(foreign) != 4 {
			t.Fatalf("imported %d and %d test cases", len(ids), len(foreign))
		}

		// The flag is off by default: every planner route says so.
		discover := map[string]any{"projectId": project}
		expect(t, h.do("POST", "/api/ai/automation-planner/discover", bearer(a.token), discover), 403, "Feature not enabled")
		expect(t, h.do("GET", "/api/ai/automation-planner/history", bearer(a.token), nil), 403, "Feature not enabled")
		expect(t, h.do("PATCH", "/api/organization/features", bearer(a.token),
			map[string]any{"aiFeatures": map[string]any{"automationPlanner": true}}), 200, "")

		opts := h.do("GET", "/api/ai/automation-planner/filter-options?projectId="+project, bearer(viewer.token), nil)
		expect(t, opts, 200, "")
		if jsonNumber(opts.get("data", "suites")) != `["Checkout","Login","Profile"]` ||
			jsonNumber(opts.get("data", "tags")) != `["payments","regression","security","smoke"]` {
			t.Fatalf("filter options: %s", opts.raw)
		}

		d := h.do("POST", "/api/ai/automation-planner/discover", bearer(viewer.token), discover)
		expect(t, d, 200, "")
		groups := d.get("data", "groups").([]any)
		if d.get("data", "totalScanned") != float64(4) || len(groups) != 3 {
			t.Fatalf("discover: %s", d.raw)
		}
		first := groups[0].(map[string]any)
		if first["suite"] != "Checkout" || first["riskLevel"] != "CRITICAL" || !strings.Contains(first["rationale"].(string), "payment") {
			t.Fatalf("the riskiest suite: %+v", first)
		}
		last := groups[2].(map[string]any)
		if last["suite"] != "Profile" || last["riskLevel"] == "CRITICAL" {
			t.Fatalf("the least risky suite: %+v", last)
		}
		smoke := h.do("POST", "/api/ai/automation-planner/discover", bearer(a.token), map[string]any{"projectId": project, "tag": "smoke"})
		if smoke.get("data", "totalScanned") != float64(2) {
			t.Fatalf("discover by tag: %s", smoke.raw)
		}

		selected := []string{ids["Pay with a saved card"], ids["Reset the password"]}
		gen := map[string]any{"projectId": project, "testIds": selected, "framework": "playwright", "designPattern": "Page Object"}
		expect(t, h.do("POST", "/api/ai/automation-planner/generate", bearer(viewer.token), gen), 403, "Forbidden")
		g := h.do("POST", "/api/ai/automation-planner/generate", bearer(a.token), gen)
		expect(t, g, 201, "")
		md := g.str("data", "markdown")
		for _, want := range []string{"## Executive Summary", "## Prerequisites and Environment Setup", "## Folder and File Structure",
			"## Test Coverage Map", "## Implementation Notes", "## Master Coding Prompt", "playwright.config.ts",
			"Pay with a saved card", "Reset the password", "Pay with the saved card", selected[0], selected[1]} {
			if !strings.Contains(md, want) {
				t.Fatalf("the plan lacks %q:\n%s", want, md)
			}
		}
		if strings.Contains(md, "Change the avatar") || g.str("data", "provider") != "builtin" || g.get("data", "testCount") != float64(2) {
			t.Fatalf("plan: provider %s, count %v, or an unselected test in it", g.str("data", "provider"), g.get("data", "testCount"))
		}
		planID := g.str("data", "planId")

		// Another organization's test case, alone or mixed into a selection, never reaches a plan.
		for _, sel := range [][]string{{foreign["Pay with a saved card"]}, {selected[0], foreign["Apply a coupon"]}} {
			bad := map[string]any{"projectId": project, "testIds": sel, "framework": "pytest", "designPattern": "Fixture"}
			expect(t, h.do("POST", "/api/ai/automation-planner/generate", bearer(a.token), bad), 404, "Test case not found")
		}
		foreignGen := map[string]any{"projectId": foreignProject, "testIds": []string{foreign["Apply a coupon"]}, "framework": "pytest", "designPattern": "Fixture"}
		expect(t, h.do("POST", "/api/ai/automation-planner/generate", bearer(a.token), foreignGen), 404, "Project not found")
		expect(t, h.do("POST", "/api/ai/automation-planner/discover", bearer(a.token), map[string]any{"projectId": foreignProject}), 404, "Project not found")
		tooMany := make([]string, 31)
		for i := range tooMany {
			tooMany[i] = selected[0]
		}
		expect(t, h.do("POST", "/api/ai/automation-planner/generate", bearer(a.token),
			map[string]any{"projectId": project, "testIds": tooMany, "framework": "cypress", "designPattern": "Fluent"}), 400, "Too many tests")
		expect(t, h.do("POST", "/api/ai/automation-planner/generate", bearer(a.token),
			map[string]any{"projectId": project, "testIds": selected, "framework": "nightwatch", "designPattern": "Fluent"}), 400, "Validation error")

		hist := h.do("GET", "/api/ai/automation-planner/history?projectId="+project, bearer(viewer.token), nil)
		expect(t, hist, 200, "")
		plans := hist.get("data", "plans").([]any)
		if len(plans) != 1 || plans[0].(map[string]any)["id"] != planID || plans[0].(map[string]any)["testCount"] != float64(2) ||
			strings.Contains(hist.raw, "markdown") {
			t.Fatalf("history: %s", hist.raw)
		}
		open := h.do("GET", "/api/ai/automation-planner/history/"+planID, bearer(viewer.token), nil)
		expect(t, open, 200, "")
		if open.str("data", "markdown") != md {
			t.Fatal("the opened plan differs from the generated one")
		}
		expect(t, h.do("PATCH", "/api/organization/features", bearer(other.token),
			map[string]any{"aiFeatures": map[string]any{"automationPlanner": true}}), 200, "")
		expect(t, h.do("GET", "/api/ai/automation-planner/history/"+planID, bearer(other.token), nil), 404, "Plan not found")
		if r := h.do("GET", "/api/ai/automation-planner/history", bearer(other.token), nil); len(r.get("data", "plans").([]any)) != 0 {
			t.Fatalf("another organization's history: %s", r.raw)
		}

		// Deleting a saved plan: admins and developers of its organization only.
		del := "/api/ai/automation-planner/history/" + planID
		expect(t, h.do("DELETE", del, bearer(viewer.token), nil), 403, "Forbidden")
		expect(t, h.do("DELETE", del, bearer(other.token), nil), 404, "Plan not found")
		expect(t, h.do("DELETE", del, bearer(a.token), nil), 200, "")
		expect(t, h.do("GET", del, bearer(viewer.token), nil), 404, "Plan not found")
		expect(t, h.do("DELETE", del, bearer(a.token), nil), 404, "Plan not found")
	})
}
