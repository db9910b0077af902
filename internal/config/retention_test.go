package config

import (
	"strings"
	"testing"
	"time"
)

// The retention settings: no maxima and a 10-minute job by default, the erasure's 7-day grace
// (shortened to 0 at most) and its 1-minute job; maxima in days, the runs'
// at least the files'; each bad value refused naming its variable.
func TestRetentionSettings(t *testing.T) {
	c, err := LoadFrom(base())
	if err != nil {
		t.Fatal(err)
	}
	if c.Retention != (Retention{Interval: 10 * time.Minute, EraseGrace: 7 * 24 * time.Hour, EraseInterval: time.Minute}) {
		t.Fatalf("defaults: %+v", c.Retention)
	}
	env := base()
	env["VERDICT_RETENTION_MAX_LOGS_DAYS"], env["VERDICT_RETENTION_MAX_RUNS_DAYS"], env["VERDICT_RETENTION_INTERVAL"] = "30", "60", "90s"
	env["VERDICT_ERASE_GRACE"], env["VERDICT_ERASE_INTERVAL"] = "0s", "10s"
	if c, err = LoadFrom(env); err != nil || c.Retention != (Retention{MaxLogsDays: 30, MaxRunsDays: 60, Interval: 90 * time.Second,
		EraseGrace: 0, EraseInterval: 10 * time.Second}) {
		t.Fatalf("set: %+v %v", c, err)
	}
	for _, bad := range []map[string]string{
		{"VERDICT_RETENTION_MAX_LOGS_DAYS": "-1"},
		{"VERDICT_RETENTION_MAX_LOGS_DAYS": "36501"},
		{"VERDICT_RETENTION_MAX_LOGS_DAYS": "two weeks"},
		{"VERDICT_RETENTION_MAX_RUNS_DAYS": "-3"},
		{"VERDICT_RETENTION_MAX_LOGS_DAYS": "30", "VERDICT_RETENTION_MAX_RUNS_DAYS": "29"},
		{"VERDICT_RETENTION_INTERVAL": "0s"},
		{"VERDICT_RETENTION_INTERVAL": "48h"},
		{"VERDICT_RETENTION_INTERVAL": "often"},
		{"VERDICT_ERASE_GRACE": "-1s"},
		{"VERDICT_ERASE_GRACE": "169h"}, // shortened only: never past the 7 days users are promised
		{"VERDICT_ERASE_GRACE": "a week"},
		{"VERDICT_ERASE_INTERVAL": "0s"},
		{"VERDICT_ERASE_INTERVAL": "2h"},
	} {
		env := base()
		var names []string
		for k, v := range bad {
			env[k] = v
			names = append(names, k)
		}
		_, err := LoadFrom(env)
		named := false
		for _, n := range names {
			named = named || (err != nil && strings.Contains(err.Error(), n))
		}
		if !named {
			t.Errorf("%v: %v", bad, err)
		}
	}
}
