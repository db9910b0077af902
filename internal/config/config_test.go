package config

import (
	"strings"
	"testing"
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
	if c.StripeAPIBase != "http://127.0.0.1:12111" || c.StripeSecretKey != "sk_test_1" || c.StripePriceTeam != "price_t" ||
		c.PublicURL != "http://"+c.Addr || c.Runner != "embedded" {
		t.Fatalf("config: %+v", c)
	}
}

func TestLoadRefusesBadValuesByName(t *testing.T) {
	for name, c := range map[string]struct{ key, value, want string }{
		"api base scheme":  {"STRIPE_API_BASE", "ftp://x", "STRIPE_API_BASE"},
		"api base garbage": {"STRIPE_API_BASE", "::", "STRIPE_API_BASE"},
		"public url":       {"VERDICT_PUBLIC_URL", "verdict.example", "VERDICT_PUBLIC_URL"},
		"runner":           {"VERDICT_RUNNER", "remote", "VERDICT_RUNNER"},
		"smtp tls":         {"SMTP_TLS", "ssl", "SMTP_TLS"},
		"database":         {"DATABASE_URL", "mysql://x", "DATABASE_URL"},
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
