package schedules

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"verdict/internal/domain"
	"verdict/internal/executions"
	"verdict/internal/identity"
)

// dueBatch bounds the schedules one poll reads; more wait for the next poll, a quarter of a
// second later.
const dueBatch = 100

// fireWorkers is how many due schedules one replica queues at once: a minute's boundary makes
// every per-minute schedule due together, and each queueing is a short transaction.
const fireWorkers = 4

// Run polls for due schedules every Interval until ctx ends, firing each (FireDue). Every
// replica runs it; the claim in the database makes each fire happen once whoever sees it.
func (s *Service) Run(ctx context.Context) {
	t := time.NewTicker(s.interval)
	defer t.Stop()
	failing := false
	for {
		_, err := s.FireDue(ctx)
		switch {
		case err != nil && ctx.Err() == nil && !failing:
			s.log.Warn("schedules: reading the due schedules failed; retrying every poll", "err", err)
			failing = true
		case err == nil && failing:
			s.log.Info("schedules: reading the due schedules works again")
			failing = false
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// FireDue fires the schedules due at the clock's time, and takes again the fires whose replica
// claimed them and stopped before recording them; it says how many fires this call claimed (runs
// queued or refused, or missed fires skipped).
func (s *Service) FireDue(ctx context.Context) (int, error) {
	now := s.clock()
	due, err := s.store.Schedules().Due(ctx, now, dueBatch)
	if err != nil {
		return 0, err
	}
	stale, err := s.store.Schedules().Stale(ctx, now, dueBatch)
	if err != nil {
		return 0, err
	}
	if len(due)+len(stale) == 0 {
		return 0, nil
	}
	type job struct {
		sc    domain.Schedule
		stale bool
	}
	var mu sync.Mutex
	n := 0
	work := make(chan job)
	var wg sync.WaitGroup
	for range min(fireWorkers, len(due)+len(stale)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range work {
				var fired bool
				var err error
				if j.stale {
					fired, err = s.retake(ctx, &j.sc, now)
				} else {
					fired, err = s.fire(ctx, &j.sc, now)
				}
				if err != nil && ctx.Err() == nil {
					s.log.Warn("schedules: a fire failed", "organization", j.sc.OrganizationID, "schedule", j.sc.ID, "err", err)
				}
				if fired {
					mu.Lock()
					n++
					mu.Unlock()
				}
			}
		}()
	}
	for _, sc := range stale {
		work <- job{sc, true}
	}
	for _, sc := range due {
		work <- job{sc, false}
	}
	close(work)
	wg.Wait()
	return n, nil
}

// Lease is how long a claimed fire may stay pending before another replica takes it again: a
// replica queues a run in milliseconds, so only one that stopped (or hung) between its claim and
// its record leaves a fire this long. Taken again, the fire's run keeps its taskId, so a run the
// first replica did queue is answered 409 and not queued twice.
const Lease = 30 * time.Second

// fire claims sc's due fire and queues its run. It reports whether this call claimed it.
func (s *Service) fire(ctx context.Context, sc *domain.Schedule, now time.Time) (bool, error) {
	c, err := ParseCron(sc.Cron, sc.Timezone)
	if err != nil {
		// The zone left the zone database since it was saved: stop firing at a guessed time,
		// and say why on the schedule.
		ok, cerr := s.store.Schedules().Claim(ctx, sc.ID, sc.NextFireAt, never, nil, now)
		if cerr != nil || !ok {
			return false, cerr
		}
		return true, s.store.Schedules().RecordFire(ctx, sc.ID, domain.ScheduleFire{At: now, Error: "cannot read the schedule: " + err.Error()})
	}
	at, missed, lastMissed, next := c.CatchUp(sc.NextFireAt, now, s.grace)
	if next.IsZero() {
		next = never
	}
	var fire *time.Time
	if !at.IsZero() {
		fire = &at
	}
	ok, err := s.store.Schedules().Claim(ctx, sc.ID, sc.NextFireAt, next, fire, now.Add(Lease))
	if err != nil || !ok {
		return false, err // another replica took it, or it changed meanwhile
	}
	f := domain.ScheduleFire{At: at, Missed: missed}
	if missed > 0 {
		f.MissedAt = &lastMissed
		s.log.LogAttrs(ctx, slog.LevelWarn, "schedules: missed fires skipped (older than the grace period, or not the newest)",
			slog.String("organization", sc.OrganizationID), slog.String("schedule", sc.ID), slog.Int("missed", missed),
			slog.Time("newestMissed", lastMissed))
	}
	if fire != nil && !s.queue(ctx, sc, at, &f) {
		return true, nil // left pending: taken again once its lease is past
	}
	if err := s.store.Schedules().RecordFire(ctx, sc.ID, f); err != nil {
		return true, fmt.Errorf("record the fire: %w", err)
	}
	return true, nil
}

// retake takes again a fire whose lease is past (its replica stopped before recording it) and
// queues its run, under the same taskId.
func (s *Service) retake(ctx context.Context, sc *domain.Schedule, now time.Time) (bool, error) {
	if sc.PendingFireAt == nil || sc.PendingUntil == nil {
		return false, nil
	}
	ok, err := s.store.Schedules().Reclaim(ctx, sc.ID, *sc.PendingUntil, now.Add(Lease))
	if err != nil || !ok {
		return false, err
	}
	at := *sc.PendingFireAt
	s.log.LogAttrs(ctx, slog.LevelWarn, "schedules: taking again a fire left pending", slog.String("organization", sc.OrganizationID),
		slog.String("schedule", sc.ID), slog.Time("fire", at))
	f := domain.ScheduleFire{At: at}
	if !s.queue(ctx, sc, at, &f) {
		return true, nil
	}
	if err := s.store.Schedules().RecordFire(ctx, sc.ID, f); err != nil {
		return true, fmt.Errorf("record the fire: %w", err)
	}
	return true, nil
}

// TaskID is the run's taskId of schedule id's fire at: the same for the same fire, so that even a
// fire queued twice (it is claimed once) makes one run, the second answered 409.
func TaskID(scheduleID string, at time.Time) string {
	return "sch-" + scheduleID + "-" + strconv.FormatInt(at.Unix(), 10)
}

// queue queues the fire's run as the organization's automation and notes in f what happened:
// the run, or the refusal. It reports false when the run was neither queued nor refused (an
// outage): the fire stays pending, and is taken again when its lease is past.
func (s *Service) queue(ctx context.Context, sc *domain.Schedule, at time.Time, f *domain.ScheduleFire) bool {
	in := executions.QueueInput{ProjectID: sc.ProjectID, Folder: sc.Folder, BaseURL: sc.BaseURL,
		TaskID: TaskID(sc.ID, at), Labels: map[string]string{}}
	for k, v := range sc.Labels {
		in.Labels[k] = v
	}
	in.Labels[domain.TriggerLabel], in.Labels[domain.ScheduleLabel] = "schedule", sc.Name
	if len(sc.EnvVars) > 0 {
		in.EnvVars = make(map[string]string, len(sc.EnvVars))
	}
	for _, v := range sc.EnvVars {
		val := v.Value
		if v.Secret {
			plain, err := s.box.Open(v.Value)
			if err != nil {
				f.Error = "cannot unseal the secret " + v.Key + " (was the encryption key changed?)"
				return true
			}
			val = string(plain)
			in.SecretVars = append(in.SecretVars, v.Key)
		}
		in.EnvVars[v.Key] = val
	}
	e, err := s.runs.Queue(ctx, identity.Automation(sc.OrganizationID), in)
	var de *domain.Error
	switch {
	case err == nil:
		f.TaskID = e.TaskID
		s.fired(at, e.QueuedAt)
	case errors.As(err, &de) && de.Kind == domain.KindConflict:
		f.TaskID = in.TaskID // queued already by this fire
	case errors.As(err, &de):
		refused := s.clock()
		f.Error, f.RefusedAt = de.Code+": "+de.Message, &refused
		s.log.LogAttrs(ctx, slog.LevelWarn, "schedules: the run was refused", slog.String("organization", sc.OrganizationID),
			slog.String("schedule", sc.ID), slog.String("reason", f.Error))
		if s.refusals != nil {
			if err := s.refusals.ScheduleRefused(ctx, sc.OrganizationID, sc.ProjectID, sc.ID, sc.Name, f.Error); err != nil {
				s.log.Warn("schedules: reporting a refusal failed", "schedule", sc.ID, "err", err)
			}
		}
	default:
		s.log.Warn("schedules: queueing a run failed; the fire is tried again after its lease", "organization", sc.OrganizationID,
			"schedule", sc.ID, "lease", Lease, "err", err)
		return false
	}
	return true
}
