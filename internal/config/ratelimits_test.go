package config

import (
	"maps"
	"strings"
	"testing"
	"time"
)

func TestRateLimitsSetting(t *testing.T) {
	env := base()
	env["VERDICT_RATE_LIMITS"] = " login=5/1m, api = 100/1m ,executions=300/30s,"
	c, err := LoadFrom(env)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]RateLimit{"login": {5, time.Minute}, "api": {100, time.Minute}, "executions": {300, 30 * time.Second}}
	if !maps.Equal(c.Limits.RateLimits, want) {
		t.Fatalf("Limits = %v, want %v", c.Limits.RateLimits, want)
	}
	if c, err := LoadFrom(base()); err != nil || len(c.Limits.RateLimits) != 0 {
		t.Fatalf("unset: %v, %v; want no overrides", c.Limits.RateLimits, err)
	}
	// Bucket names are the API's business: app.New refuses unknown ones, naming the variable.
	for _, bad := range []string{"login", "login=5", "login=5/", "login=x/1m", "login=0/1m", "login=-1/1m", "=5/1m",
		"login=5/0s", "login=5/500ms", "login=5/1fortnight", "login=5/1m/2"} {
		env := base()
		env["VERDICT_RATE_LIMITS"] = "api=100/1m," + bad
		if _, err := LoadFrom(env); err == nil || !strings.Contains(err.Error(), "VERDICT_RATE_LIMITS") {
			t.Errorf("VERDICT_RATE_LIMITS=%q: err %v, want one naming VERDICT_RATE_LIMITS", env["VERDICT_RATE_LIMITS"], err)
		}
	}
}
