package sqlstore

import (
	"context"
	"database/sql"
	"time"

	"verdict/internal/domain"
	"verdict/internal/store"
)

// Schedules returns the schedule repository.
func (s *Store) Schedules() store.ScheduleRepo { return scheduleRepo{s} }

type scheduleRepo struct{ s *Store }

const scheduleColumns = `id, organization_id, project_id, name, cron, timezone, folder, base_url, env_vars, labels,
	enabled, next_fire_at, last_fire_at, last_task_id, last_error, last_refused_at, missed_fires, last_missed_at,
	pending_fire_at, pending_until, created_by, created_at, updated_at`

func scanSchedule(r scanner) (*domain.Schedule, error) {
	var s domain.Schedule
	var envVars, labels string
	var next, created, updated int64
	var lastFire, lastRefused, lastMissed, pendingFire, pendingUntil sql.NullInt64
	if err := r.Scan(&s.ID, &s.OrganizationID, &s.ProjectID, &s.Name, &s.Cron, &s.Timezone, &s.Folder, &s.BaseURL,
		&envVars, &labels, &s.Enabled, &next, &lastFire, &s.LastTaskID, &s.LastError, &lastRefused, &s.MissedFires,
		&lastMissed, &pendingFire, &pendingUntil, &s.CreatedBy, &created, &updated); err != nil {
		return nil, err
	}
	if err := unmarshalJSON(envVars, &s.EnvVars, labels, &s.Labels); err != nil {
		return nil, err
	}
	if s.EnvVars == nil {
		s.EnvVars = []domain.EnvVar{}
	}
	if s.Labels == nil {
		s.Labels = map[string]string{}
	}
	s.NextFireAt, s.CreatedAt, s.UpdatedAt = fromMillis(next), fromMillis(created), fromMillis(updated)
	s.LastFireAt, s.LastRefusedAt, s.LastMissedAt = timePtr(lastFire), timePtr(lastRefused), timePtr(lastMissed)
	s.PendingFireAt, s.PendingUntil = timePtr(pendingFire), timePtr(pendingUntil)
	return &s, nil
}

// scheduleJSON encodes the schedule's JSON columns: variables and labels, never null.
func scheduleJSON(s *domain.Schedule) (envVars, labels string, err error) {
	vars, lbl := s.EnvVars, s.Labels
	if vars == nil {
		vars = []domain.EnvVar{}
	}
	if lbl == nil {
		lbl = map[string]string{}
	}
	j, err := marshalJSON(vars, lbl)
	if err != nil {
		return "", "", err
	}
	return j[0], j[1], nil
}

func (r scheduleRepo) Create(ctx context.Context, s *domain.Schedule, max int) error {
	ensureID(&s.ID)
	envVars, labels, err := scheduleJSON(s)
	if err != nil {
		return err
	}
	return r.s.inTx(ctx, func(tx *Store) error {
		// The project's row lock makes creations of one project take turns, so the count holds.
		if err := tx.lockProject(ctx, s.OrganizationID, s.ProjectID); err != nil {
			return err
		}
		n, err := tx.count(ctx, `SELECT COUNT(*) FROM schedules WHERE organization_id = ? AND project_id = ?`,
			s.OrganizationID, s.ProjectID)
		if err != nil {
			return err
		}
		if n >= max {
			return store.ErrGuard
		}
		_, err = tx.exec(ctx, `INSERT INTO schedules (`+scheduleColumns+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			s.ID, s.OrganizationID, s.ProjectID, s.Name, s.Cron, s.Timezone, s.Folder, s.BaseURL, envVars, labels,
			s.Enabled, millis(s.NextFireAt), nullMillis(s.LastFireAt), s.LastTaskID, s.LastError,
			nullMillis(s.LastRefusedAt), s.MissedFires, nullMillis(s.LastMissedAt), nullMillis(s.PendingFireAt),
			nullMillis(s.PendingUntil), s.CreatedBy,
			millis(s.CreatedAt), millis(s.UpdatedAt))
		return err
	})
}

func (r scheduleRepo) Get(ctx context.Context, orgID, id string) (*domain.Schedule, error) {
	return get(ctx, r.s, scanSchedule, `SELECT `+scheduleColumns+` FROM schedules WHERE organization_id = ? AND id = ?`, orgID, id)
}

func (r scheduleRepo) List(ctx context.Context, orgID, projectID string) ([]domain.Schedule, error) {
	return list(ctx, r.s, scanSchedule, `SELECT `+scheduleColumns+` FROM schedules
		WHERE organization_id = ? AND project_id = ? ORDER BY name, id`, orgID, projectID)
}

func (r scheduleRepo) Update(ctx context.Context, s *domain.Schedule, rescheduled bool) error {
	envVars, labels, err := scheduleJSON(s)
	if err != nil {
		return err
	}
	const set = `UPDATE schedules SET name = ?, cron = ?, timezone = ?, folder = ?, base_url = ?, env_vars = ?,
		labels = ?, enabled = ?, updated_at = ?`
	args := []any{s.Name, s.Cron, s.Timezone, s.Folder, s.BaseURL, envVars, labels, s.Enabled, millis(s.UpdatedAt)}
	if rescheduled {
		return r.s.execOne(ctx, set+`, next_fire_at = ? WHERE organization_id = ? AND id = ?`,
			append(args, millis(s.NextFireAt), s.OrganizationID, s.ID)...)
	}
	return r.s.execOne(ctx, set+` WHERE organization_id = ? AND id = ?`, append(args, s.OrganizationID, s.ID)...)
}

func (r scheduleRepo) Delete(ctx context.Context, orgID, id string) error {
	return r.s.execOne(ctx, `DELETE FROM schedules WHERE organization_id = ? AND id = ?`, orgID, id)
}

// Due reads the index schedules_due: enabled = true, then next_fire_at in order.
func (r scheduleRepo) Due(ctx context.Context, now time.Time, limit int) ([]domain.Schedule, error) {
	return list(ctx, r.s, scanSchedule, `SELECT `+scheduleColumns+` FROM schedules
		WHERE enabled = ? AND next_fire_at <= ? AND pending_until IS NULL ORDER BY next_fire_at LIMIT ?`, true, millis(now), limit)
}

// Claim is one UPDATE whose condition is the value read: of replicas racing for one fire, the
// database lets exactly one change the row (the others find next_fire_at moved and change none).
func (r scheduleRepo) Claim(ctx context.Context, id string, due, next time.Time, fire *time.Time, leaseUntil time.Time) (bool, error) {
	var until any
	if fire != nil {
		until = millis(leaseUntil)
	}
	res, err := r.s.exec(ctx, `UPDATE schedules SET next_fire_at = ?, pending_fire_at = ?, pending_until = ?
		WHERE id = ? AND enabled = ? AND next_fire_at = ? AND pending_until IS NULL`,
		millis(next), nullMillis(fire), until, id, true, millis(due))
	return oneRow(res, err)
}

// Stale reads the partial index schedules_pending.
func (r scheduleRepo) Stale(ctx context.Context, now time.Time, limit int) ([]domain.Schedule, error) {
	return list(ctx, r.s, scanSchedule, `SELECT `+scheduleColumns+` FROM schedules
		WHERE pending_until IS NOT NULL AND pending_until <= ? ORDER BY pending_until LIMIT ?`, millis(now), limit)
}

func (r scheduleRepo) Reclaim(ctx context.Context, id string, until, newUntil time.Time) (bool, error) {
	res, err := r.s.exec(ctx, `UPDATE schedules SET pending_until = ? WHERE id = ? AND pending_until = ?`,
		millis(newUntil), id, millis(until))
	return oneRow(res, err)
}

// oneRow says whether a conditional write changed its row.
func oneRow(res sql.Result, err error) (bool, error) {
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

func (r scheduleRepo) RecordFire(ctx context.Context, id string, f domain.ScheduleFire) error {
	if f.At.IsZero() {
		return r.s.execOne(ctx, `UPDATE schedules SET missed_fires = missed_fires + ?,
			last_missed_at = COALESCE(?, last_missed_at), pending_fire_at = NULL, pending_until = NULL WHERE id = ?`, f.Missed, nullMillis(f.MissedAt), id)
	}
	if f.Error == "" {
		return r.s.execOne(ctx, `UPDATE schedules SET last_fire_at = ?, last_task_id = ?, last_error = '',
			missed_fires = missed_fires + ?, last_missed_at = COALESCE(?, last_missed_at), pending_fire_at = NULL,
			pending_until = NULL WHERE id = ?`,
			millis(f.At), f.TaskID, f.Missed, nullMillis(f.MissedAt), id)
	}
	return r.s.execOne(ctx, `UPDATE schedules SET last_fire_at = ?, last_error = ?, last_refused_at = ?,
		missed_fires = missed_fires + ?, last_missed_at = COALESCE(?, last_missed_at), pending_fire_at = NULL,
		pending_until = NULL WHERE id = ?`,
		millis(f.At), f.Error, nullMillis(f.RefusedAt), f.Missed, nullMillis(f.MissedAt), id)
}
