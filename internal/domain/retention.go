package domain

import (
	"fmt"
	"time"
)

// Retention is how long an organization keeps the history of its finished runs, in days:
// their logs and report files (LogsDays), and the runs themselves with their test results
// (RunsDays), counted from each run's end. Runs are kept longer than their files.
type Retention struct {
	LogsDays int `json:"logsDays"`
	RunsDays int `json:"runsDays"`
}

// planRetention is each plan's retention: what an organization keeps unless its admins
// shorten it. It is not part of Limits, whose JSON is a fixed shape of the API.
var planRetention = map[Plan]Retention{
	PlanFree:       {LogsDays: 14, RunsDays: 90},
	PlanTeam:       {LogsDays: 90, RunsDays: 400},
	PlanEnterprise: {LogsDays: 365, RunsDays: 730},
}

// RetentionFor is the plan's retention; an unknown plan gets the free plan's.
func RetentionFor(p Plan) Retention {
	if r, ok := planRetention[p]; ok {
		return r
	}
	return planRetention[PlanFree]
}

// RetentionSetting is an organization's own retention: nil keeps the plan's value.
type RetentionSetting struct {
	LogsDays *int
	RunsDays *int
}

// capDays is days within max (0: no max).
func capDays(days, max int) int {
	if max > 0 && days > max {
		return max
	}
	return days
}

// RetentionDefaults is what an organization on plan keeps without a setting of its own: the
// plan's retention within the server's maxima (max: VERDICT_RETENTION_MAX_LOGS_DAYS and
// VERDICT_RETENTION_MAX_RUNS_DAYS; 0 is none).
func RetentionDefaults(plan Plan, max Retention) Retention {
	r := RetentionFor(plan)
	return Retention{LogsDays: capDays(r.LogsDays, max.LogsDays), RunsDays: capDays(r.RunsDays, max.RunsDays)}
}

// EffectiveRetention is what the organization keeps: its setting, else the plan's value, and
// never more than the plan's value (an organization that moved to a smaller plan keeps what the
// new one gives) nor the server's maximum. Files are never kept longer than their run.
func EffectiveRetention(plan Plan, s RetentionSetting, max Retention) Retention {
	r := RetentionDefaults(plan, max)
	if s.LogsDays != nil && *s.LogsDays >= 1 {
		r.LogsDays = min(r.LogsDays, *s.LogsDays)
	}
	if s.RunsDays != nil && *s.RunsDays >= 1 {
		r.RunsDays = min(r.RunsDays, *s.RunsDays)
	}
	r.LogsDays = min(r.LogsDays, r.RunsDays)
	return r
}

// CheckRetention checks an organization's new setting s (nil: the plan's value): each value a
// whole number of days from 1, at most the plan's value (an admin may shorten the plan's
// retention, not lengthen it) and at most the server's maximum, and runs kept at least as long
// as their logs and reports. A refusal is a 400 naming the field and its bound.
func CheckRetention(plan Plan, s RetentionSetting, max Retention) error {
	planR := RetentionFor(plan)
	for _, c := range []struct {
		field       string
		v           *int
		planV, maxV int
	}{{"logsDays", s.LogsDays, planR.LogsDays, max.LogsDays}, {"runsDays", s.RunsDays, planR.RunsDays, max.RunsDays}} {
		switch {
		case c.v == nil:
		case *c.v < 1:
			return BadRequest("Validation error", fmt.Sprintf("%s must be a whole number of days from 1, got %d", c.field, *c.v))
		case *c.v > c.planV:
			return BadRequest("Validation error", fmt.Sprintf("%s may be at most %d, the %s plan's retention: it can be shortened, not lengthened",
				c.field, c.planV, plan))
		case c.maxV > 0 && *c.v > c.maxV:
			return BadRequest("Validation error", fmt.Sprintf("%s may be at most %d, this server's maximum", c.field, c.maxV))
		}
	}
	d := RetentionDefaults(plan, max)
	logs, runs := d.LogsDays, d.RunsDays
	if s.LogsDays != nil {
		logs = *s.LogsDays
	}
	if s.RunsDays != nil {
		runs = *s.RunsDays
	}
	if runs < logs {
		return BadRequest("Validation error", fmt.Sprintf("runsDays (%d) must be at least logsDays (%d): a run is kept at least as long as its logs and reports",
			runs, logs))
	}
	return nil
}

// RetentionCutoffs are the ends of runs whose files (logs) and whose rows (runs) retention
// removes at now: those that finished before them.
func RetentionCutoffs(r Retention, now time.Time) (logs, runs time.Time) {
	day := 24 * time.Hour
	return now.Add(-time.Duration(r.LogsDays) * day), now.Add(-time.Duration(r.RunsDays) * day)
}

// FilesExpiredNote is the note retention adds to a run whose log and report files it deleted
// at at; the run's log then reads as this note.
func FilesExpiredNote(at time.Time) string {
	return "Logs and report files expired under the organization's retention policy on " + at.UTC().Format("2006-01-02") + "."
}
