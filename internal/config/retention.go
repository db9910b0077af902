package config

import "time"

// Retention bounds how long organizations keep their runs' history, and paces the job that
// removes what is past it. Each organization keeps its plan's retention, or less if its admins
// shorten it, and never more than these maxima.
type Retention struct {
	// MaxLogsDays caps the days the logs and report files of finished runs are kept; 0: the
	// plans' own values only.
	MaxLogsDays int // VERDICT_RETENTION_MAX_LOGS_DAYS [0]
	// MaxRunsDays caps the days finished runs and their test results are kept; 0: the plans'
	// own values only.
	MaxRunsDays int // VERDICT_RETENTION_MAX_RUNS_DAYS [0]
	// Interval is the time between two passes of the retention job over every organization.
	Interval time.Duration // VERDICT_RETENTION_INTERVAL [10m]
	// EraseGrace is the time between an admin's request to erase the organization and its
	// erasure, during which its admins may cancel it; at most the 7 days users are promised,
	// 0: erased at the erase job's next pass.
	EraseGrace time.Duration // VERDICT_ERASE_GRACE [168h]
	// EraseInterval is the time between two passes of the erase job.
	EraseInterval time.Duration // VERDICT_ERASE_INTERVAL [1m]
}

// MaxEraseGrace is the grace period users are promised before an erasure; an operator may
// shorten it, never lengthen it.
const MaxEraseGrace = 7 * 24 * time.Hour

// maxRetentionDays bounds the maxima: a hundred years is no bound a server needs.
const maxRetentionDays = 36500

func decodeRetention(d *decoder) Retention {
	r := Retention{MaxLogsDays: d.integer("VERDICT_RETENTION_MAX_LOGS_DAYS", 0),
		MaxRunsDays:   d.integer("VERDICT_RETENTION_MAX_RUNS_DAYS", 0),
		Interval:      d.duration("VERDICT_RETENTION_INTERVAL", 10*time.Minute),
		EraseGrace:    d.duration("VERDICT_ERASE_GRACE", MaxEraseGrace),
		EraseInterval: d.duration("VERDICT_ERASE_INTERVAL", time.Minute)}
	if r.EraseGrace < 0 || r.EraseGrace > MaxEraseGrace {
		d.bad("VERDICT_ERASE_GRACE", "want 0..168h (7 days at most), got %s", r.EraseGrace)
		r.EraseGrace = MaxEraseGrace
	}
	if r.EraseInterval < time.Second || r.EraseInterval > time.Hour {
		d.bad("VERDICT_ERASE_INTERVAL", "want 1s..1h, got %s", r.EraseInterval)
	}
	if r.MaxLogsDays < 0 || r.MaxLogsDays > maxRetentionDays {
		d.bad("VERDICT_RETENTION_MAX_LOGS_DAYS", "want 1..%d days, or 0 for no maximum; got %d", maxRetentionDays, r.MaxLogsDays)
		r.MaxLogsDays = 0
	}
	if r.MaxRunsDays < 0 || r.MaxRunsDays > maxRetentionDays {
		d.bad("VERDICT_RETENTION_MAX_RUNS_DAYS", "want 1..%d days, or 0 for no maximum; got %d", maxRetentionDays, r.MaxRunsDays)
		r.MaxRunsDays = 0
	}
	if r.MaxRunsDays > 0 && r.MaxLogsDays > r.MaxRunsDays {
		// Named by the runs' maximum: a run is never kept for less time than its files.
		d.bad("VERDICT_RETENTION_MAX_RUNS_DAYS", "want at least VERDICT_RETENTION_MAX_LOGS_DAYS (%d) days, got %d",
			r.MaxLogsDays, r.MaxRunsDays)
	}
	if r.Interval < time.Second || r.Interval > 24*time.Hour {
		d.bad("VERDICT_RETENTION_INTERVAL", "want 1s..24h, got %s", r.Interval)
	}
	return r
}
