//go:build integration

package app_test

import (
	"context"
	"testing"
	"time"

	"verdict/internal/domain"
)

// TestRunnerListShowsNoOtherTenantsLoad: one shared runner carries two runs of organization B
// and one of A. A's admin sees the runner busy with A's one run, B's admin with B's two, C's
// admin (no runs) with none, and none of them sees when the runner last called closer than the minute (its calls follow the runs
// it carries); the runners' operator, presenting the runner secret, sees the runner's own
// figures (three runs, the exact time). A non-admin is refused as before, and a wrong secret
// is no operator.
func TestRunnerListShowsNoOtherTenantsLoad(t *testing.T) {
	for _, d := range []string{"sqlite", "postgres"} {
		t.Run(d, func(t *testing.T) {
			h := newHarness(t, harnessOpts{dialect: d,
				env: map[string]string{"VERDICT_RUNNER": "none", "VERDICT_RUNNER_SECRET": runnerSecret}})
			ctx := context.Background()
			adminA := h.signup("list-a-"+d+"@example.com", "Tenant A")
			devA := h.join(adminA, "list-dev-"+d+"@example.com", "developer")
			adminB := h.signup("list-b-"+d+"@example.com", "Tenant B")
			adminC := h.signup("list-c-"+d+"@example.com", "Tenant C") // no runs
			if err := h.app.Store.Organizations().UpdatePlan(ctx, adminB.orgID, domain.PlanTeam, domain.Billing{}); err != nil {
				t.Fatal(err)
			}
			h.queue(bearer(adminB.token), map[string]any{"image": passImage})
			h.queue(bearer(adminB.token), map[string]any{"image": passImage})
			h.queue(bearer(adminA.token), map[string]any{"image": passImage})

			h.clock.Advance(17 * time.Second) // the runner's calls fall within a minute
			runner := remoteClient(t, h, "shared-runner")
			for range 3 {
				if w, err := runner.Next(ctx, time.Minute); err != nil || w == nil {
					t.Fatalf("claim: %+v %v", w, err)
				}
			}

			type row struct {
				name, lastSeen string
				slots, busy    float64
			}
			list := func(who string, a auth, hdr ...string) row {
				t.Helper()
				r := h.do("GET", "/api/runners", a, nil, hdr...)
				expect(t, r, 200, "")
				runners, _ := r.get("data", "runners").([]any)
				if len(runners) != 1 {
					t.Fatalf("%s: %s", who, r.raw)
				}
				rn := runners[0].(map[string]any)
				got := row{name: rn["name"].(string), lastSeen: rn["lastSeenAt"].(string)}
				got.slots, _ = rn["slots"].(float64)
				got.busy, _ = rn["busy"].(float64)
				return got
			}
			exact := h.clock.Now().Format(time.RFC3339)
			for _, c := range []struct {
				who  string
				a    auth
				hdr  []string
				want row
			}{
				{"A's admin", bearer(adminA.token), nil, row{"shared-runner", "2026-03-10T09:00:00Z", 4, 1}},
				{"B's admin", bearer(adminB.token), nil, row{"shared-runner", "2026-03-10T09:00:00Z", 4, 2}},
				{"C's admin", bearer(adminC.token), nil, row{"shared-runner", "2026-03-10T09:00:00Z", 4, 0}},
				{"the operator", anon, []string{"Authorization", "Bearer " + runnerSecret}, row{"shared-runner", exact, 4, 3}},
			} {
				if got := list(c.who, c.a, c.hdr...); got != c.want {
					t.Errorf("%s sees %+v, want %+v", c.who, got, c.want)
				}
			}
			expect(t, h.do("GET", "/api/runners", bearer(devA.token), nil), 403, "Forbidden")
			expect(t, h.do("GET", "/api/runners", anon, nil, "Authorization", "Bearer "+runnerSecret+"x"), 401, "Invalid or expired token")
			expect(t, h.do("GET", "/api/runners", anon, nil), 401, "Authentication required")
		})
	}
}
