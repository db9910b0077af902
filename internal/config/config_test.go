package config

import (
	"strings"
	"testing"
	"time"
)

// base is a valid production environment.
func base() map[string]string {
	return map[string]string{
		"JWT_SECRET":     "a-secret-of-at-least-thirty-two-bytes!!",
		"ENCRYPTION_KEY": strings.Repeat("ab", 32),
	}
}

func TestLoadDefaultsAndStripe(t *testing.T) {
	env := base()
	env["STRIPE_SECRET_KEY"] = "sk_test_1"
	env["STRIPE_API_BASE"] = "http://127.0.0.1:12111/"
	env["STRIPE_PRICE_TEAM"] = "price_t"
	env["STRIPE_PRICE_ENTERPRISE"] = "price_e"
	c, err := LoadFrom(env)
	if err != nil {
		t.Fatal(err)
	}
	if c.Billing.StripeAPIBase != "http://127.0.0.1:12111" || c.Billing.StripeSecretKey != "sk_test_1" || c.Billing.StripePriceTeam != "price_t" ||
		c.Server.PublicURL != "http://"+c.Server.Addr || c.Runs.Runner != "embedded" || c.Integrations.LinearAPIURL != "https://api.linear.app/graphql" ||
		c.Integrations.MondayAPIURL != "https://api.monday.com/v2" || c.Integrations.MondayAPIVersion != "2026-07" ||
		c.Server.LogFormat != "text" || c.Billing.DefaultPlan != "free" || c.Server.MetricsToken != "" {
		t.Fatalf("config: %+v", c)
	}
}

func TestLoadRefusesBadValuesByName(t *testing.T) {
	for name, c := range map[string]struct{ key, value, want string }{
		"api base scheme":   {"STRIPE_API_BASE", "ftp://x", "STRIPE_API_BASE"},
		"api base garbage":  {"STRIPE_API_BASE", "::", "STRIPE_API_BASE"},
		"public url":        {"VERDICT_PUBLIC_URL", "verdict.example", "VERDICT_PUBLIC_URL"},
		"runner":            {"VERDICT_RUNNER", "remote", "VERDICT_RUNNER"},
		"smtp tls":          {"SMTP_TLS", "ssl", "SMTP_TLS"},
		"database":          {"DATABASE_URL", "mysql://x", "DATABASE_URL"},
		"disk":              {"VERDICT_RUN_DISK_MB", "-1", "VERDICT_RUN_DISK_MB"},
		"network name":      {"VERDICT_RUN_NETWORK", "a-network-name-too-long", "VERDICT_RUN_NETWORK"},
		"blocked cidr":      {"VERDICT_RUN_BLOCKED_CIDRS", "169.254.0.0/16,metadata", "VERDICT_RUN_BLOCKED_CIDRS"},
		"plan timeout":      {"VERDICT_PLAN_TIMEOUTS", "free=15", "VERDICT_PLAN_TIMEOUTS"},
		"unknown plan":      {"VERDICT_PLAN_TIMEOUTS", "gold=1h", "VERDICT_PLAN_TIMEOUTS"},
		"reports url":       {"VERDICT_REPORTS_URL", "reports.example.com", "VERDICT_REPORTS_URL"},
		"reports url path":  {"VERDICT_REPORTS_URL", "https://reports.example.com/r", "VERDICT_REPORTS_URL"},
		"reports same host": {"VERDICT_REPORTS_URL", "http://127.0.0.1:8080", "VERDICT_REPORTS_URL"},
		"reports same name": {"VERDICT_REPORTS_URL", "http://127.0.0.1:8081", "VERDICT_REPORTS_URL"},
		"body timeout":      {"VERDICT_BODY_TIMEOUT", "10ms", "VERDICT_BODY_TIMEOUT"},
		"linear url":        {"LINEAR_API_URL", "api.linear.app/graphql", "LINEAR_API_URL"},
		"monday url":        {"MONDAY_API_URL", "ftp://api.monday.com/v2", "MONDAY_API_URL"},
		"monday version":    {"MONDAY_API_VERSION", "v2", "MONDAY_API_VERSION"},
		"log format":        {"VERDICT_LOG_FORMAT", "logfmt", "VERDICT_LOG_FORMAT"},
		"default plan":      {"VERDICT_DEFAULT_PLAN", "gold", "VERDICT_DEFAULT_PLAN: want free, team or enterprise"},
		"plan case":         {"VERDICT_DEFAULT_PLAN", "Team", "VERDICT_DEFAULT_PLAN"},
		"metrics token":     {"VERDICT_METRICS_TOKEN", "two words", "VERDICT_METRICS_TOKEN"},
	} {
		t.Run(name, func(t *testing.T) {
			env := base()
			env[c.key] = c.value
			_, err := LoadFrom(env)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%s=%q: err %v, want one naming %s", c.key, c.value, err, c.want)
			}
		})
	}
	env := base()
	env["STRIPE_PRICE_TEAM"], env["STRIPE_PRICE_ENTERPRISE"] = "price_same", "price_same"
	if _, err := LoadFrom(env); err == nil || !strings.Contains(err.Error(), "STRIPE_PRICE_ENTERPRISE") {
		t.Fatalf("equal prices: %v", err)
	}
}

func TestHardeningSettings(t *testing.T) {
	c, err := LoadFrom(base())
	if err != nil {
		t.Fatal(err)
	}
	if c.Runs.RunDiskMB != 10240 || c.Runs.RunNetwork != "verdict-runs" || len(c.Runs.BlockedNets) != 1 || c.Runs.BlockedNets[0].String() != "169.254.0.0/16" ||
		c.Runs.AllowedImages != nil || c.Reports.URL != "" || c.Limits.BodyTimeout.Seconds() != 30 {
		t.Fatalf("defaults: %+v", c)
	}
	if c.Runs.PlanTimeouts["free"].Minutes() != 15 || c.Runs.PlanTimeouts["team"].Hours() != 2 || c.Runs.PlanTimeouts["enterprise"].Hours() != 24 {
		t.Fatalf("plan timeouts: %v", c.Runs.PlanTimeouts)
	}
	env := base()
	env["VERDICT_PLAN_TIMEOUTS"] = "free=5m"
	env["VERDICT_ALLOWED_IMAGES"] = " registry.example.com/qa/* , ,verdict-examples/*"
	env["VERDICT_RUN_BLOCKED_CIDRS"] = "none"
	env["VERDICT_REPORTS_URL"] = "https://reports.example.com/"
	if c, err = LoadFrom(env); err != nil {
		t.Fatal(err)
	}
	if c.Runs.PlanTimeouts["free"].Minutes() != 5 || c.Runs.PlanTimeouts["team"].Hours() != 2 {
		t.Fatalf("a plan left out must keep its cap: %v", c.Runs.PlanTimeouts)
	}
	if strings.Join(c.Runs.AllowedImages, "|") != "registry.example.com/qa/*|verdict-examples/*" || len(c.Runs.BlockedNets) != 0 ||
		c.Reports.URL != "https://reports.example.com" {
		t.Fatalf("config: %+v", c)
	}
}

func TestLoadRunner(t *testing.T) {
	c, err := LoadRunner(map[string]string{"VERDICT_RUNNER_SECRET": strings.Repeat("k", 32), "VERDICT_RUNNER_NAME": "ci-1",
		"VERDICT_RUN_BLOCKED_CIDRS": "none"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Slots != 2 || c.Name != "ci-1" || c.RunNetwork != "verdict-runs" || c.BlockedNets == nil || len(c.BlockedNets) != 0 ||
		c.Lease != 30*time.Second || c.Backend != "docker" {
		t.Fatalf("runner config: %+v", c)
	}
	_, err = LoadRunner(map[string]string{"VERDICT_RUNNER_SECRET": "short", "VERDICT_RUNNER_NAME": "a b", "VERDICT_RUNNER_SLOTS": "0",
		"VERDICT_RUNNER_LEASE": "1s", "VERDICT_BACKEND": "kubernetes", "VERDICT_K8S_NAMESPACE": "Not_A_Namespace",
		"VERDICT_K8S_PULL_POLICY": "Sometimes", "VERDICT_K8S_START_TIMEOUT": "10ms"})
	for _, name := range []string{"VERDICT_RUNNER_SECRET", "VERDICT_RUNNER_NAME", "VERDICT_RUNNER_SLOTS", "VERDICT_RUNNER_LEASE",
		"VERDICT_K8S_NAMESPACE", "VERDICT_K8S_PULL_POLICY", "VERDICT_K8S_START_TIMEOUT"} {
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("error %v does not name %s", err, name)
		}
	}
	if _, err := LoadFrom(map[string]string{"VERDICT_DEV": "true", "VERDICT_DATA_DIR": t.TempDir(), "VERDICT_RUNNER_SECRET": "short"}); err == nil ||
		!strings.Contains(err.Error(), "VERDICT_RUNNER_SECRET") {
		t.Errorf("serve with a short runner secret: %v", err)
	}
	if _, err := LoadFrom(map[string]string{"VERDICT_DEV": "true", "VERDICT_DATA_DIR": t.TempDir(), "VERDICT_BACKEND": "podman"}); err == nil ||
		!strings.Contains(err.Error(), "VERDICT_BACKEND") {
		t.Errorf("serve with an unknown backend: %v", err)
	}
	k, err := LoadFrom(map[string]string{"VERDICT_DEV": "true", "VERDICT_DATA_DIR": t.TempDir(), "VERDICT_BACKEND": "kubernetes",
		"VERDICT_K8S_NAMESPACE": "qa-runs"})
	if err != nil || k.Runs.K8sNamespace != "qa-runs" || k.Runs.K8sPullPolicy != "IfNotPresent" || k.Runs.K8sStartTimeout != 2*time.Minute ||
		k.Runs.K8sHelperImage != "verdict:local" {
		t.Errorf("serve on kubernetes: %+v %v", k, err)
	}
}
