package config

import (
	"strings"
	"testing"
	"time"
)

// The schedules' grace period: an hour by default, a duration from 1 s to a week, a bad value
// refused naming its variable.
func TestScheduleSettings(t *testing.T) {
	c, err := LoadFrom(base())
	if err != nil || c.Schedules.Grace != time.Hour {
		t.Fatalf("default: %+v %v", c.Schedules, err)
	}
	env := base()
	env["VERDICT_SCHEDULE_GRACE"] = "10m"
	if c, err = LoadFrom(env); err != nil || c.Schedules.Grace != 10*time.Minute {
		t.Fatalf("set: %+v %v", c.Schedules, err)
	}
	for _, bad := range []string{"0s", "500ms", "169h", "-1h", "soon"} {
		env := base()
		env["VERDICT_SCHEDULE_GRACE"] = bad
		if _, err := LoadFrom(env); err == nil || !strings.Contains(err.Error(), "VERDICT_SCHEDULE_GRACE") {
			t.Errorf("VERDICT_SCHEDULE_GRACE=%s: %v", bad, err)
		}
	}
}
