package config

import (
	"slices"
	"strings"
	"testing"
)

// serveVariables are the variables `verdict serve` reads; runnerVariables those of `verdict
// runner` that the server does not read.
var (
	serveVariables = []string{"VERDICT_ADDR", "VERDICT_DATA_DIR", "VERDICT_PUBLIC_URL", "VERDICT_DEV", "VERDICT_LOG_LEVEL",
		"VERDICT_LOG_FORMAT", "VERDICT_METRICS_TOKEN", "VERDICT_TRUSTED_PROXIES", "DATABASE_URL", "REDIS_URL", "JWT_SECRET",
		"JWT_EXPIRY", "ENCRYPTION_KEY", "SMTP_HOST", "SMTP_PORT", "SMTP_USERNAME", "SMTP_PASSWORD", "SMTP_FROM", "SMTP_TLS",
		"VERDICT_RUNNER", "VERDICT_RUNNER_SLOTS", "VERDICT_RUNNER_SECRET", "VERDICT_RUNNER_LEASE", "VERDICT_DEFAULT_IMAGE",
		"VERDICT_DEFAULT_BASE_URL", "VERDICT_ALLOWED_IMAGES", "VERDICT_PLAN_TIMEOUTS", "VERDICT_PLAN_SHARDS", "VERDICT_BACKEND", "DOCKER_HOST",
		"VERDICT_RUN_MEMORY_MB", "VERDICT_RUN_CPUS", "VERDICT_RUN_PIDS", "VERDICT_RUN_SHM_MB", "VERDICT_RUN_DISK_MB", "VERDICT_RUN_NETWORK",
		"VERDICT_RUN_BLOCKED_CIDRS", "KUBECONFIG", "VERDICT_K8S_NAMESPACE", "VERDICT_K8S_HELPER_IMAGE", "VERDICT_K8S_PULL_POLICY",
		"VERDICT_K8S_START_TIMEOUT", "VERDICT_REPORTS_URL", "VERDICT_S3_BUCKET", "VERDICT_S3_ENDPOINT", "VERDICT_S3_REGION",
		"VERDICT_S3_ACCESS_KEY", "VERDICT_S3_SECRET_KEY", "VERDICT_S3_PATH_STYLE", "VERDICT_BODY_TIMEOUT", "VERDICT_RATE_LIMITS",
		"VERDICT_SOCKETS_PER_USER", "VERDICT_SOCKETS_PER_ORG", "VERDICT_SOCKET_QUEUE_MB", "VERDICT_SOCKET_QUEUE_TOTAL_MB",
		"VERDICT_DEFAULT_PLAN", "STRIPE_SECRET_KEY", "STRIPE_WEBHOOK_SECRET", "STRIPE_PRICE_TEAM", "STRIPE_PRICE_ENTERPRISE",
		"STRIPE_API_BASE", "OPENAI_API_KEY", "GEMINI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "GEMINI_BASE_URL",
		"ANTHROPIC_BASE_URL", "LINEAR_API_URL", "MONDAY_API_URL", "MONDAY_API_VERSION", "VERDICT_RETENTION_MAX_LOGS_DAYS",
		"VERDICT_RETENTION_MAX_RUNS_DAYS", "VERDICT_RETENTION_INTERVAL",
		"VERDICT_SCHEDULE_GRACE", "VERDICT_ERASE_GRACE", "VERDICT_ERASE_INTERVAL"}
	runnerVariables = []string{"VERDICT_SERVER", "VERDICT_RUNNER_NAME"}
	// secretVariables hold secrets: a refusal never shows the value of one.
	secretVariables = []string{"JWT_SECRET", "ENCRYPTION_KEY", "SMTP_PASSWORD", "VERDICT_RUNNER_SECRET", "VERDICT_S3_SECRET_KEY",
		"STRIPE_SECRET_KEY", "STRIPE_WEBHOOK_SECRET", "OPENAI_API_KEY", "GEMINI_API_KEY", "ANTHROPIC_API_KEY"}
)

// FuzzLoad sets one variable of a valid environment to any value, for `verdict serve` (even
// which) or `verdict runner` (odd): the configuration either loads or is refused with an error
// naming that variable, never a panic, and the error never shows the value of a secret set
// beside it.
func FuzzLoad(f *testing.F) {
	for i, v := range []string{"127.0.0.1:8080", "x", "", " ", "-1", "0", "99999999999", "1e3", "NaN", "+Inf", "1.5", "true",
		"sometimes", "30s", "10ms", "-5m", "1fortnight", "http://", "https://reports.example.com/r", "ftp://x", "::",
		"a..b", "free=15", "gold=1h", "login=5/0s", "api=100/1m,", "169.254.0.0/16,metadata", "none", "10.0.0.1",
		"a-network-name-too-long", "Not_A_Namespace", "kubernetes", "podman", strings.Repeat("ab", 32), "\x00\xff"} {
		f.Add(uint(2*i), v)
		f.Add(uint(2*i+1), v)
	}
	for i, name := range serveVariables {
		if strings.HasSuffix(name, "_URL") || strings.HasSuffix(name, "_BASE") || name == "VERDICT_S3_ENDPOINT" {
			f.Add(uint(2*i), "https://user:pw@host:99999/p?q")
		}
	}
	f.Fuzz(func(t *testing.T, n uint, value string) {
		runner := n%2 == 1
		names := serveVariables
		env := base()
		env["STRIPE_SECRET_KEY"], env["OPENAI_API_KEY"] = "sk_test_fuzz_secret_1", "sk-fuzz-secret-2"
		if runner {
			names = append(slices.Clone(serveVariables), runnerVariables...)
			env = map[string]string{"VERDICT_RUNNER_SECRET": strings.Repeat("k", 32), "VERDICT_RUNNER_NAME": "ci-1"}
		}
		name := names[(n/2)%uint(len(names))]
		if name == "VERDICT_DATA_DIR" || name == "VERDICT_DEV" {
			env["VERDICT_DATA_DIR"] = t.TempDir() // dev mode may write its secrets there
		}
		env[name] = value
		var err error
		if runner {
			var c *RunnerConfig
			if c, err = LoadRunner(env); err == nil && c == nil {
				t.Fatal("LoadRunner: no configuration and no error")
			}
		} else {
			var c *Config
			if c, err = LoadFrom(env); err == nil && c == nil {
				t.Fatal("LoadFrom: no configuration and no error")
			}
		}
		if err == nil {
			return
		}
		if !strings.Contains(err.Error(), name) {
			t.Fatalf("%s=%q: the error does not name the variable: %v", name, value, err)
		}
		for _, secret := range secretVariables {
			if v := env[secret]; secret != name && v != "" && !strings.Contains(value, v) && strings.Contains(err.Error(), v) {
				t.Fatalf("%s=%q: the error shows %s: %v", name, value, secret, err)
			}
		}
	})
}
