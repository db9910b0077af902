package domain

import "time"

// Schedule is a project's recurring run: a 5-field cron expression read in an IANA time zone,
// and the settings of the runs it queues (folder, base URL, variables, labels) over the
// project's defaults. NextFireAt is the next time it is due, kept whether it is enabled or
// paused; replicas claim a due fire by moving it on (store.ScheduleRepo.Claim), so each fire is
// taken once.
type Schedule struct {
	ID             string
	OrganizationID string
	ProjectID      string
	Name           string
	Cron           string
	Timezone       string
	Folder         string
	BaseURL        string
	EnvVars        []EnvVar // secret values are ciphertext here, as a project's
	Labels         map[string]string
	Enabled        bool
	NextFireAt     time.Time
	// What its fires did: the last fire's time and the run it queued, the last refusal's
	// reason and time (cleared from LastError by the next run queued), and the missed fires
	// skipped after downtime (older than the grace period), counted, with the newest of them.
	LastFireAt    *time.Time
	LastTaskID    string
	LastError     string
	LastRefusedAt *time.Time
	MissedFires   int
	LastMissedAt  *time.Time
	// PendingFireAt is a fire claimed and not recorded yet, leased until PendingUntil: one
	// whose replica stopped before queueing its run is taken again once the lease is past.
	PendingFireAt *time.Time
	PendingUntil  *time.Time
	CreatedBy     string
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// ScheduleFire is what one fire did, recorded on its schedule after the claim: the run it
// queued (TaskID) or the refusal (Error, at RefusedAt), and the missed fires it skipped.
type ScheduleFire struct {
	At        time.Time // the fire time claimed; zero when the claim only skipped missed fires
	TaskID    string
	Error     string
	RefusedAt *time.Time
	Missed    int
	MissedAt  *time.Time // the newest fire skipped
}
