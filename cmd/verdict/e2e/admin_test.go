//go:build integration

package e2e

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"verdict/internal/admin"
	"verdict/internal/domain"
	"verdict/internal/store/sqlstore"
	"verdict/internal/testenv"
)

// TestAdminSetPlan runs `verdict admin set-plan` against the database the environment names,
// SQLite and PostgreSQL: by ID and by slug, exit code 0 and the audit log; 2 for usage errors,
// 1 for an unknown organization, an ambiguous slug or a database it cannot reach.
func TestAdminSetPlan(t *testing.T) {
	for _, d := range []string{"sqlite", "postgres"} {
		t.Run(d, func(t *testing.T) {
			dir := t.TempDir()
			t.Setenv("VERDICT_DATA_DIR", filepath.Join(dir, "data"))
			t.Setenv("JWT_SECRET", strings.Repeat("j", 32))
			t.Setenv("ENCRYPTION_KEY", strings.Repeat("ab", 32))
			t.Setenv("VERDICT_DEV", "")
			dbURL := ""
			if d == "postgres" {
				dbURL = testenv.PostgresDB(t)
			}
			t.Setenv("DATABASE_URL", dbURL)
			if code, out, errs := command(t, "migrate"); code != 0 || !strings.Contains(out, "migrations applied") {
				t.Fatalf("migrate: %d %s %s", code, out, errs)
			}
			st, err := sqlstore.Open(t.Context(), dbURL, filepath.Join(dir, "data"))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			now := time.Now().UTC()
			mk := func(name, slug string) *domain.Organization {
				o := &domain.Organization{ID: domain.NewID(), Name: name, Slug: slug, Plan: domain.PlanFree, CreatedAt: now}
				if err := st.Organizations().Create(t.Context(), o); err != nil {
					t.Fatal(err)
				}
				return o
			}
			acme, twinA, _ := mk("Acme", "acme"), mk("Twin", "twin"), mk("Twin", "twin")

			code, out, errs := command(t, "admin", "set-plan", acme.ID, "enterprise")
			if code != 0 || !strings.Contains(out, "plan free -> enterprise") || errs != "" {
				t.Fatalf("set-plan by ID: %d %q %q", code, out, errs)
			}
			code, out, _ = command(t, "admin", "set-plan", "acme", "team")
			if code != 0 || !strings.Contains(out, "plan enterprise -> team") {
				t.Fatalf("set-plan by slug: %d %q", code, out)
			}
			code, out, _ = command(t, "admin", "set-plan", "acme", "team")
			if code != 0 || !strings.Contains(out, "already on the team plan") {
				t.Fatalf("set-plan again: %d %q", code, out)
			}
			got, err := st.Organizations().Get(t.Context(), acme.ID)
			if err != nil || got.Plan != domain.PlanTeam || got.Billing != acme.Billing {
				t.Fatalf("organization after set-plan: %+v %v", got, err)
			}
			entries, err := st.Audit().List(t.Context(), acme.ID, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(entries) != 2 { // the repeat changed nothing
				t.Fatalf("audit entries: %+v", entries)
			}
			details, _ := json.Marshal(entries[0].Details)
			if entries[0].Action != "organization.updated" || entries[0].ActorID != admin.Actor || entries[0].TargetType != "organization" ||
				!strings.Contains(string(details), `"plan":{"from":"enterprise","to":"team"}`) {
				t.Fatalf("newest audit entry: %+v %s", entries[0], details)
			}

			for _, c := range []struct {
				args []string
				code int
				want string
			}{
				{[]string{"admin"}, 2, "Usage"},
				{[]string{"admin", "set-plans"}, 2, "Usage"},
				{[]string{"admin", "set-plan"}, 2, "want an organization and a plan"},
				{[]string{"admin", "set-plan", "acme"}, 2, "want an organization and a plan"},
				{[]string{"admin", "set-plan", "acme", "team", "extra"}, 2, "want an organization and a plan"},
				{[]string{"admin", "set-plan", "acme", "gold"}, 2, `unknown plan "gold"`},
				{[]string{"admin", "set-plan", "acme", "Team"}, 2, `unknown plan "Team"`},
				{[]string{"admin", "set-plan", "nobody", "team"}, 1, `no organization with this ID or slug: "nobody"`},
				{[]string{"admin", "set-plan", "twin", "team"}, 1, "names 2 organizations"},
				{[]string{"nonsense"}, 2, "unknown command"},
			} {
				code, _, errs := command(t, c.args...)
				if code != c.code || !strings.Contains(errs, c.want) {
					t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, errs, c.code, c.want)
				}
			}
			if code, _, _ := command(t, "admin", "set-plan", twinA.ID, "enterprise"); code != 0 {
				t.Errorf("an organization sharing its slug is named by its ID: exit %d", code)
			}
		})
	}
}

// TestAdminSetPlanFailures: a configuration the server would refuse, or a database that does
// not answer, is exit 1 with the reason.
func TestAdminSetPlanFailures(t *testing.T) {
	t.Setenv("VERDICT_DATA_DIR", t.TempDir())
	t.Setenv("JWT_SECRET", "")
	t.Setenv("VERDICT_DEV", "")
	if code, _, errs := command(t, "admin", "set-plan", "acme", "team"); code != 1 || !strings.Contains(errs, "JWT_SECRET") {
		t.Errorf("without JWT_SECRET: exit %d %q", code, errs)
	}
	t.Setenv("JWT_SECRET", strings.Repeat("j", 32))
	t.Setenv("ENCRYPTION_KEY", strings.Repeat("ab", 32))
	t.Setenv("DATABASE_URL", "postgres://verdict@127.0.0.1:1/verdict?connect_timeout=2")
	if code, _, errs := command(t, "admin", "set-plan", "acme", "team"); code != 1 || errs == "" {
		t.Errorf("an unreachable database: exit %d %q", code, errs)
	}
}

// TestServeRefusesBadDefaultPlan: the server does not start with an unknown default plan, and
// says which setting is wrong.
func TestServeRefusesBadDefaultPlan(t *testing.T) {
	t.Setenv("VERDICT_DEV", "true")
	t.Setenv("VERDICT_DATA_DIR", t.TempDir())
	t.Setenv("VERDICT_DEFAULT_PLAN", "premium")
	code, _, errs := command(t, "serve")
	if code != 1 || !strings.Contains(errs, `VERDICT_DEFAULT_PLAN: want free, team or enterprise, got "premium"`) {
		t.Fatalf("serve: exit %d %q", code, errs)
	}
}
