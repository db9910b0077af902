package store

import (
	"context"
	"time"

	"verdict/internal/domain"
)

// ScheduleRepo stores projects' schedules. A schedule belongs to one project of its
// organization and is unique in it by name (compared exactly); deleting the project deletes its
// schedules. Replicas share the fires through Claim: a due fire is taken by the one caller whose
// conditional write moved the schedule's NextFireAt on.
type ScheduleRepo interface {
	// Create stores s. ErrNotFound when s.ProjectID is not a project of s.OrganizationID;
	// ErrConflict when the project has a schedule of that name; ErrGuard when the project
	// already has max schedules (counted in the same transaction, so concurrent creations
	// cannot pass the bound together).
	Create(ctx context.Context, s *domain.Schedule, max int) error
	// Get reads the organization's schedule; ErrNotFound for another organization's.
	Get(ctx context.Context, orgID, id string) (*domain.Schedule, error)
	// List returns the project's schedules ordered by name then ID (by their bytes); empty for
	// another organization's project.
	List(ctx context.Context, orgID, projectID string) ([]domain.Schedule, error)
	// Update replaces the settings of the schedule s.OrganizationID/s.ID: name, cron, time
	// zone, folder, base URL, variables, labels, enabled and UpdatedAt, and NextFireAt only when
	// rescheduled (so that an edit of other settings never moves back a fire a replica has just
	// claimed); its project, creator, creation time and fire record stay. ErrNotFound when there
	// is none; ErrConflict when another schedule of its project has the new name.
	Update(ctx context.Context, s *domain.Schedule, rescheduled bool) error
	// Delete removes the organization's schedule; ErrNotFound when it has none.
	Delete(ctx context.Context, orgID, id string) error
	// Due returns up to limit enabled schedules of every organization whose NextFireAt is at or
	// before now and that have no fire pending, the most overdue first.
	Due(ctx context.Context, now time.Time, limit int) ([]domain.Schedule, error)
	// Claim moves the enabled schedule id's NextFireAt from due to next in one conditional
	// write, and reports whether this call did: false when another caller claimed that fire,
	// the schedule was paused, changed or deleted meanwhile, or has a fire pending. Only the
	// caller that gets true acts on the fire. With fire set, the fire is marked pending
	// (PendingFireAt) until leaseUntil, until RecordFire.
	Claim(ctx context.Context, id string, due, next time.Time, fire *time.Time, leaseUntil time.Time) (bool, error)
	// Stale returns up to limit schedules whose pending fire's lease ended at or before now.
	Stale(ctx context.Context, now time.Time, limit int) ([]domain.Schedule, error)
	// Reclaim extends the lease of schedule id's pending fire from until to newUntil in one
	// conditional write; false when another caller did first, or the fire was recorded.
	Reclaim(ctx context.Context, id string, until, newUntil time.Time) (bool, error)
	// RecordFire records on the schedule id what a fire it claimed did, and clears the pending
	// fire: with f.At set, the fire's time, and either the run queued (f.TaskID, clearing
	// LastError) or the refusal (f.Error and f.RefusedAt); f.Missed is added to MissedFires with
	// f.MissedAt the newest missed fire. ErrNotFound when the schedule is gone.
	RecordFire(ctx context.Context, id string, f domain.ScheduleFire) error
}
