package config

import (
	"strings"
	"testing"
)

func TestPlanShards(t *testing.T) {
	c, err := LoadFrom(base())
	if err != nil {
		t.Fatal(err)
	}
	if s := c.Runs.PlanShards; s["free"] != 4 || s["team"] != 8 || s["enterprise"] != 32 {
		t.Fatalf("default caps: %v", s)
	}
	env := base()
	env["VERDICT_PLAN_SHARDS"] = "free=2"
	if c, err = LoadFrom(env); err != nil {
		t.Fatal(err)
	}
	if s := c.Runs.PlanShards; s["free"] != 2 || s["team"] != 8 {
		t.Fatalf("a plan left out must keep its cap: %v", s)
	}
	for _, bad := range []string{"free=0", "gold=3", "team=x", "team=257"} {
		env["VERDICT_PLAN_SHARDS"] = bad
		if _, err := LoadFrom(env); err == nil || !strings.Contains(err.Error(), "VERDICT_PLAN_SHARDS") {
			t.Fatalf("%q: %v", bad, err)
		}
	}
}
