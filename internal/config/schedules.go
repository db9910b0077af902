package config

import "time"

// Schedules are the settings of projects' schedules.
type Schedules struct {
	// Grace is how late a fire missed while no replica ran (downtime) may still run, once;
	// older missed fires are skipped and counted on the schedule.
	Grace time.Duration // VERDICT_SCHEDULE_GRACE [1h]
}

func decodeSchedules(d *decoder) Schedules {
	s := Schedules{Grace: d.duration("VERDICT_SCHEDULE_GRACE", time.Hour)}
	if s.Grace < time.Second || s.Grace > 7*24*time.Hour {
		d.bad("VERDICT_SCHEDULE_GRACE", "want 1s..168h, got %s", s.Grace)
		s.Grace = time.Hour
	}
	return s
}
