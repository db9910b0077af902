package custody

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"verdict/internal/domain"
	"verdict/internal/identity"
	"verdict/internal/report"
	"verdict/internal/store"
)

// Erasure is an organization's scheduled erasure as its admins see it.
type Erasure struct {
	OrganizationID string
	Slug           string
	EraseAt        time.Time
	RequestedBy    string
}

var (
	errConfirm = domain.BadRequest("Invalid confirmation",
		"confirm must be the organization's slug, as GET /api/organization shows it, to erase the organization")
	errScheduled   = domain.Conflict("Erasure already scheduled", "The organization's erasure is scheduled already; cancel it first to schedule another")
	errNotSchedule = domain.Conflict("No erasure scheduled", "The organization has no erasure scheduled")
	errUnderWay    = domain.Conflict("Erasure under way", "The organization's grace period has ended and its erasure has begun; it cannot be cancelled")
)

// ScheduleErase schedules the erasure of the caller's organization at the end of the grace
// period (admin only); confirm must be the organization's slug. From then on the organization
// queues no new run, and its admins may cancel the erasure until it is due. The request is in
// the organization's audit log (until that is erased with the rest).
func (s *Service) ScheduleErase(ctx context.Context, p *identity.Principal, confirm string) (*Erasure, error) {
	if err := p.RequireAdmin(); err != nil {
		return nil, err
	}
	var out *Erasure
	err := s.store.InTx(ctx, func(tx store.Store) error {
		if err := tx.Organizations().Lock(ctx, p.OrgID); err != nil {
			return err
		}
		org, err := tx.Organizations().Get(ctx, p.OrgID)
		if err != nil {
			return err
		}
		if confirm == "" || confirm != org.Slug {
			return errConfirm
		}
		now := s.clock()
		at := now.Add(s.grace)
		if err := tx.Organizations().ScheduleErase(ctx, org.ID, at, p.UserID); errors.Is(err, store.ErrGuard) {
			return errScheduled
		} else if err != nil {
			return err
		}
		out = &Erasure{OrganizationID: org.ID, Slug: org.Slug, EraseAt: at, RequestedBy: p.UserID}
		return tx.Audit().Append(ctx, &domain.AuditEntry{ID: domain.NewID(), OrganizationID: org.ID, ActorID: p.UserID,
			Action: "organization.erase_scheduled", TargetType: "organization", TargetID: org.ID,
			Details: map[string]any{"eraseAt": at.UTC().Format(time.RFC3339)}, CreatedAt: now})
	})
	if err != nil {
		return nil, err
	}
	s.log.Info("organization erasure scheduled", "org", out.OrganizationID, "slug", out.Slug, "eraseAt", out.EraseAt,
		"requestedBy", out.RequestedBy)
	return out, nil
}

// CancelErase cancels the caller's organization's scheduled erasure while it is not due
// (admin only).
func (s *Service) CancelErase(ctx context.Context, p *identity.Principal) error {
	if err := p.RequireAdmin(); err != nil {
		return err
	}
	err := s.store.InTx(ctx, func(tx store.Store) error {
		if err := tx.Organizations().Lock(ctx, p.OrgID); err != nil {
			return err
		}
		org, err := tx.Organizations().Get(ctx, p.OrgID)
		if err != nil {
			return err
		}
		if org.EraseAt == nil {
			return errNotSchedule
		}
		now := s.clock()
		if err := tx.Organizations().CancelErase(ctx, org.ID, now); errors.Is(err, store.ErrNotFound) {
			return errUnderWay
		} else if err != nil {
			return err
		}
		return tx.Audit().Append(ctx, &domain.AuditEntry{ID: domain.NewID(), OrganizationID: org.ID, ActorID: p.UserID,
			Action: "organization.erase_cancelled", TargetType: "organization", TargetID: org.ID,
			Details: map[string]any{"eraseAt": org.EraseAt.UTC().Format(time.RFC3339)}, CreatedAt: now})
	})
	if err != nil {
		return err
	}
	s.log.Info("organization erasure cancelled", "org", p.OrgID, "by", p.UserID)
	return nil
}

// Runs stops an organization's runs before it is erased (the executions service).
type Runs interface {
	// StopAll cancels every run of the organization not ended and returns how many are still
	// going.
	StopAll(ctx context.Context, orgID string) (going int, err error)
}

// Subscriptions cancels an organization's subscription with the payment provider (the billing
// service).
type Subscriptions interface {
	EndSubscription(ctx context.Context, org *domain.Organization) error
}

// Eraser is the erase job: every Interval, on every replica, it erases the organizations whose
// erasure is due. An organization is claimed with a lease in one conditional write
// (store.OrganizationRepo.ClaimErase), so one replica erases it at a time, and the holder
// renews the lease as it goes; one that stops half-way leaves the rest to the next holder once
// the lease ends (each step of the erasure may be repeated). In order: its runs are cancelled
// and the erasure waits until none is going (no runner writes to a run being erased), its
// subscription is cancelled with the payment provider, its report files (the data folder's or
// the bucket's) deleted, then its rows, a bounded statement at a time, its own row last. Its
// members' live sessions are ended; their tokens and keys answer 401 from then on, as their
// rows are gone. The erasure is recorded in the server's log (the operator's), since the
// organization's audit log goes with it. Like the retention job, it is a worker configured once
// by its fields, where a zero value takes the default in brackets.
type Eraser struct {
	Store         store.Store
	Reports       report.Store
	Runs          Runs
	Subscriptions Subscriptions
	// EndSessions ends a member's sockets and event streams on every replica (nil: nothing).
	EndSessions func(userID string)
	Interval    time.Duration // between passes [1m]
	Lease       time.Duration // an erasure's hold, renewed as it goes [5m]
	Batch       int           // the rows one statement deletes [500]
	Clock       domain.Clock  // [domain.SystemClock]
	Log         *slog.Logger  // [slog.Default()]
}

func (j *Eraser) defaults() {
	if j.Interval <= 0 {
		j.Interval = time.Minute
	}
	if j.Lease <= 0 {
		j.Lease = 5 * time.Minute
	}
	if j.Batch <= 0 {
		j.Batch = 500
	}
	if j.Clock == nil {
		j.Clock = domain.SystemClock
	}
	if j.Log == nil {
		j.Log = slog.Default()
	}
}

// Run makes a pass at once, then one every Interval, until ctx ends.
func (j *Eraser) Run(ctx context.Context) {
	j.defaults()
	t := time.NewTicker(j.Interval)
	defer t.Stop()
	for {
		if _, err := j.Pass(ctx); err != nil && ctx.Err() == nil {
			j.Log.Warn("erase: the pass stopped early; the next one goes on", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// duePage is how many due organizations a pass reads at once.
const duePage = 20

// errGoing holds an erasure while the organization's runs stop.
var errGoing = errors.New("runs still going")

// Pass erases every organization whose erasure is due and that no other replica holds, and
// returns how many it erased. One whose erasure cannot finish now (runs still stopping, the
// payment provider or the bucket away) is left for a later pass; the others go on.
func (j *Eraser) Pass(ctx context.Context) (int, error) {
	j.defaults()
	ids, err := j.Store.Organizations().DueErasures(ctx, j.Clock(), duePage)
	if err != nil {
		return 0, err
	}
	erased := 0
	var first error
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return erased, err
		}
		ok, err := j.Store.Organizations().ClaimErase(ctx, id, j.Clock(), j.Clock().Add(j.Lease))
		if err != nil {
			return erased, err
		}
		if !ok {
			continue // another replica holds it, or it was cancelled in between
		}
		switch err := j.Erase(ctx, id); {
		case err == nil:
			erased++
		case errors.Is(err, errGoing):
			// Released for the next pass, which asks the runs again.
			_ = j.renew(ctx, id, j.Clock())
		default:
			j.Log.Warn("erase: an organization's erasure stopped; a later pass goes on", "org", id, "err", err)
			_ = j.renew(ctx, id, j.Clock())
			if first == nil {
				first = err
			}
		}
	}
	return erased, first
}

// renew moves the erasure's lease to until (now: released for the next pass).
func (j *Eraser) renew(ctx context.Context, id string, until time.Time) error {
	return j.Store.Organizations().RenewErase(ctx, id, until)
}

// Erase erases the organization id, whose erasure the caller holds.
func (j *Eraser) Erase(ctx context.Context, id string) error {
	j.defaults()
	start := j.Clock()
	org, err := j.Store.Organizations().Get(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil // erased by an earlier holder
	}
	if err != nil {
		return err
	}
	if org.EraseAt == nil {
		return nil // cancelled before it was claimed
	}
	going, err := j.Runs.StopAll(ctx, id)
	if err != nil {
		return err
	}
	if going > 0 {
		j.Log.Info("erase: waiting for the organization's runs to stop", "org", id, "going", going)
		return errGoing
	}
	if j.Subscriptions != nil {
		if err := j.Subscriptions.EndSubscription(ctx, org); err != nil {
			return err
		}
	}
	members, err := j.Store.Users().List(ctx, id)
	if err != nil {
		return err
	}
	if err := j.Reports.DeleteOrganization(ctx, id); err != nil {
		return err
	}
	rows := map[string]int{}
	total := 0
	renewAt := j.Clock().Add(j.Lease / 3)
	for {
		table, n, err := j.Store.Organizations().EraseStep(ctx, id, j.Batch)
		if err != nil {
			return err
		}
		if n == 0 {
			break
		}
		rows[table] += n
		total += n
		if now := j.Clock(); now.After(renewAt) {
			if err := j.renew(ctx, id, now.Add(j.Lease)); err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
			renewAt = now.Add(j.Lease / 3)
		}
	}
	if j.EndSessions != nil {
		for i := range members {
			j.EndSessions(members[i].ID)
		}
	}
	// The operator's record: the organization's own audit log is gone with it.
	j.Log.Info("organization erased", "org", id, "slug", org.Slug, "requestedBy", org.EraseRequestedBy,
		"eraseAt", org.EraseAt, "members", len(members), "rows", total, "rowsByTable", rows,
		"took", j.Clock().Sub(start).Round(time.Millisecond))
	return nil
}
