package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"verdict/internal/domain"
	"verdict/internal/store"
)

// newSchedule is a valid schedule of the project, not stored yet, due at next.
func (f *fixture) newSchedule(orgID, projectID, name string, next time.Time) *domain.Schedule {
	n := f.next()
	at := base.Add(time.Duration(n) * time.Minute)
	return &domain.Schedule{
		ID: domain.NewID(), OrganizationID: orgID, ProjectID: projectID, Name: name, Cron: "*/5 * * * *",
		Timezone: "Europe/Paris", Folder: "tests/nightly", BaseURL: "https://staging.example.com",
		EnvVars: []domain.EnvVar{{Key: "MODE", Value: "nightly"}, {Key: "TOKEN", Value: "v1:c2VhbGVk", Secret: true}},
		Labels:  map[string]string{"suite": "nightly"}, Enabled: true, NextFireAt: next,
		CreatedBy: "user-1", CreatedAt: at, UpdatedAt: at,
	}
}

// testSchedules covers schedules: tenancy, names unique per project, the bound per project under
// concurrent creations, updates that keep the fire record, the due poll, the claim that one
// caller of many wins, what a fire records, and the cascade from a deleted project.
func testSchedules(t *testing.T, open Opener) {
	t.Run("CreateGetListUpdateDelete", func(t *testing.T) {
		f := setup(t, open)
		o, other := f.org(), f.org()
		p := f.project(o.ID, "Web")
		s := f.newSchedule(o.ID, p.ID, "Nightly", base.Add(time.Hour))
		must(t, f.s.Schedules().Create(f.ctx, s, 50))
		got, err := f.s.Schedules().Get(f.ctx, o.ID, s.ID)
		must(t, err)
		equal(t, "Get", got, s)
		_, err = f.s.Schedules().Get(f.ctx, other.ID, s.ID)
		wantErr(t, "Get from another organization", err, store.ErrNotFound)

		// The project must be the organization's; names are unique per project, exactly.
		foreign := f.project(other.ID, "Theirs")
		wantErr(t, "Create in another organization's project",
			f.s.Schedules().Create(f.ctx, f.newSchedule(o.ID, foreign.ID, "Stray", base), 50), store.ErrNotFound)
		wantErr(t, "Create with a taken name",
			f.s.Schedules().Create(f.ctx, f.newSchedule(o.ID, p.ID, "Nightly", base), 50), store.ErrConflict)
		b := f.newSchedule(o.ID, p.ID, "Hourly", base)
		b.EnvVars, b.Labels = nil, nil
		must(t, f.s.Schedules().Create(f.ctx, b, 50))
		must(t, f.s.Schedules().Create(f.ctx, f.newSchedule(o.ID, p.ID, "nightly", base), 50))
		must(t, f.s.Schedules().Create(f.ctx, f.newSchedule(o.ID, f.project(o.ID, "API").ID, "Nightly", base), 50))

		l, err := f.s.Schedules().List(f.ctx, o.ID, p.ID)
		must(t, err)
		equal(t, "List order", ids(l, func(s domain.Schedule) string { return s.Name }), []string{"Hourly", "Nightly", "nightly"})
		equal(t, "nil variables and labels read back empty", [2]int{len(l[0].EnvVars), len(l[0].Labels)}, [2]int{0, 0})
		if l[0].EnvVars == nil || l[0].Labels == nil {
			t.Errorf("variables and labels read back nil: %+v", l[0])
		}
		l, err = f.s.Schedules().List(f.ctx, other.ID, p.ID)
		must(t, err)
		equal(t, "List of another organization's project", len(l), 0)

		// Update replaces the settings and keeps the fire record.
		fired := base.Add(5 * time.Minute)
		must(t, f.s.Schedules().RecordFire(f.ctx, s.ID, domain.ScheduleFire{At: fired, TaskID: "sch-1"}))
		s.Name, s.Cron, s.Timezone, s.Folder, s.BaseURL = "Nightly EU", "0 2 * * 1-5", "UTC", "", ""
		s.EnvVars, s.Labels, s.Enabled = []domain.EnvVar{{Key: "A", Value: "b"}}, map[string]string{"x": "y"}, false
		claimed := s.NextFireAt
		s.NextFireAt, s.UpdatedAt = base.Add(48*time.Hour), base.Add(2*time.Hour)
		// Not rescheduled: NextFireAt stays as stored.
		must(t, f.s.Schedules().Update(f.ctx, s, false))
		got, err = f.s.Schedules().Get(f.ctx, o.ID, s.ID)
		must(t, err)
		s.LastFireAt, s.LastTaskID = &fired, "sch-1"
		want := *s
		want.NextFireAt = claimed
		equal(t, "after Update", got, &want)
		must(t, f.s.Schedules().Update(f.ctx, s, true))
		got, err = f.s.Schedules().Get(f.ctx, o.ID, s.ID)
		must(t, err)
		equal(t, "after Update, rescheduled", got, s)
		stranger := *s
		stranger.OrganizationID = other.ID
		wantErr(t, "Update from another organization", f.s.Schedules().Update(f.ctx, &stranger, true), store.ErrNotFound)
		s.Name = "Hourly"
		wantErr(t, "Update to a taken name", f.s.Schedules().Update(f.ctx, s, false), store.ErrConflict)

		wantErr(t, "Delete from another organization", f.s.Schedules().Delete(f.ctx, other.ID, s.ID), store.ErrNotFound)
		must(t, f.s.Schedules().Delete(f.ctx, o.ID, s.ID))
		wantErr(t, "Delete again", f.s.Schedules().Delete(f.ctx, o.ID, s.ID), store.ErrNotFound)

		// Deleting the project deletes its schedules.
		must(t, f.s.Projects().Delete(f.ctx, o.ID, p.ID))
		_, err = f.s.Schedules().Get(f.ctx, o.ID, b.ID)
		wantErr(t, "a schedule of a deleted project", err, store.ErrNotFound)
	})

	t.Run("BoundUnderConcurrentCreates", func(t *testing.T) {
		f := setup(t, open)
		o := f.org()
		p := f.project(o.ID, "Web")
		var wg sync.WaitGroup
		var mu sync.Mutex
		made, guarded := 0, 0
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := f.s.Schedules().Create(f.ctx, f.newScheduleSafe(o.ID, p.ID, fmt.Sprintf("s%d", i)), 5)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					made++
				case errors.Is(err, store.ErrGuard):
					guarded++
				default:
					t.Errorf("Create: %v", err)
				}
			}()
		}
		wg.Wait()
		equal(t, "created, refused at the bound", [2]int{made, guarded}, [2]int{5, 3})
	})

	t.Run("DueClaimRecord", func(t *testing.T) {
		f := setup(t, open)
		o := f.org()
		p := f.project(o.ID, "Web")
		now := base.Add(time.Hour)
		late := f.newSchedule(o.ID, p.ID, "late", now.Add(-time.Minute))
		onTime := f.newSchedule(o.ID, p.ID, "on time", now)
		future := f.newSchedule(o.ID, p.ID, "future", now.Add(time.Millisecond))
		paused := f.newSchedule(o.ID, p.ID, "paused", now.Add(-time.Hour))
		paused.Enabled = false
		for _, s := range []*domain.Schedule{late, onTime, future, paused} {
			must(t, f.s.Schedules().Create(f.ctx, s, 50))
		}
		due, err := f.s.Schedules().Due(f.ctx, now, 10)
		must(t, err)
		equal(t, "Due", ids(due, func(s domain.Schedule) string { return s.Name }), []string{"late", "on time"})
		due, err = f.s.Schedules().Due(f.ctx, now, 1)
		must(t, err)
		equal(t, "Due, limited", ids(due, func(s domain.Schedule) string { return s.Name }), []string{"late"})

		// Of 10 concurrent claims of one fire, one wins.
		next := now.Add(4 * time.Minute)
		var wg sync.WaitGroup
		var mu sync.Mutex
		won := 0
		for range 10 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ok, err := f.s.Schedules().Claim(f.ctx, late.ID, late.NextFireAt, next, &late.NextFireAt, now.Add(30*time.Second))
				if err != nil {
					t.Errorf("Claim: %v", err)
				}
				if ok {
					mu.Lock()
					won++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		equal(t, "claims won", won, 1)
		got, err := f.s.Schedules().Get(f.ctx, o.ID, late.ID)
		must(t, err)
		equal(t, "NextFireAt after the claim", got.NextFireAt, next)
		equal(t, "the pending fire", [2]time.Time{*got.PendingFireAt, *got.PendingUntil}, [2]time.Time{late.NextFireAt, now.Add(30 * time.Second)})

		// While its fire is pending, a schedule is not due and its next fire cannot be claimed;
		// once the lease is past it is stale, and one caller of several extends the lease.
		due, err = f.s.Schedules().Due(f.ctx, next, 10)
		must(t, err)
		equal(t, "Due with a fire pending", ids(due, func(s domain.Schedule) string { return s.Name }), []string{"on time", "future"})
		ok, err := f.s.Schedules().Claim(f.ctx, late.ID, next, next.Add(time.Minute), &next, next.Add(time.Minute))
		must(t, err)
		equal(t, "a claim while a fire is pending", ok, false)
		stale, err := f.s.Schedules().Stale(f.ctx, now.Add(29*time.Second), 10)
		must(t, err)
		equal(t, "Stale within the lease", len(stale), 0)
		stale, err = f.s.Schedules().Stale(f.ctx, now.Add(30*time.Second), 10)
		must(t, err)
		equal(t, "Stale past the lease", ids(stale, func(s domain.Schedule) string { return s.Name }), []string{"late"})
		ok, err = f.s.Schedules().Reclaim(f.ctx, late.ID, now.Add(30*time.Second), now.Add(time.Minute))
		must(t, err)
		equal(t, "Reclaim", ok, true)
		ok, err = f.s.Schedules().Reclaim(f.ctx, late.ID, now.Add(30*time.Second), now.Add(time.Minute))
		must(t, err)
		equal(t, "Reclaim again from the old lease", ok, false)

		// A claim without a fire (only missed fires skipped) leaves nothing pending.
		ok, err = f.s.Schedules().Claim(f.ctx, onTime.ID, onTime.NextFireAt, next, nil, now.Add(30*time.Second))
		must(t, err)
		equal(t, "a claim without a fire", ok, true)
		got, err = f.s.Schedules().Get(f.ctx, o.ID, onTime.ID)
		must(t, err)
		if got.PendingFireAt != nil || got.PendingUntil != nil {
			t.Errorf("a claim without a fire left one pending: %+v", got)
		}

		ok, err = f.s.Schedules().Claim(f.ctx, paused.ID, paused.NextFireAt, next, &next, next)
		must(t, err)
		equal(t, "a paused schedule's claim", ok, false)
		ok, err = f.s.Schedules().Claim(f.ctx, domain.NewID(), now, next, &now, next)
		must(t, err)
		equal(t, "an unknown schedule's claim", ok, false)

		// A fire's record: a run, then a refusal (the run stays named), then a run again clears
		// the error; missed fires add up.
		at1, at2, at3, missedAt := now, now.Add(5*time.Minute), now.Add(10*time.Minute), now.Add(-2*time.Hour)
		must(t, f.s.Schedules().RecordFire(f.ctx, late.ID, domain.ScheduleFire{At: at1, TaskID: "sch-a", Missed: 3, MissedAt: &missedAt}))
		refused := at2.Add(time.Second)
		must(t, f.s.Schedules().RecordFire(f.ctx, late.ID, domain.ScheduleFire{At: at2, Error: "Test run limit exceeded", RefusedAt: &refused}))
		got, err = f.s.Schedules().Get(f.ctx, o.ID, late.ID)
		must(t, err)
		equal(t, "after a refusal", [6]any{*got.LastFireAt, got.LastTaskID, got.LastError, *got.LastRefusedAt, got.MissedFires, *got.LastMissedAt},
			[6]any{at2, "sch-a", "Test run limit exceeded", refused, 3, missedAt})
		must(t, f.s.Schedules().RecordFire(f.ctx, late.ID, domain.ScheduleFire{Missed: 2}))
		must(t, f.s.Schedules().RecordFire(f.ctx, late.ID, domain.ScheduleFire{At: at3, TaskID: "sch-b"}))
		got, err = f.s.Schedules().Get(f.ctx, o.ID, late.ID)
		must(t, err)
		equal(t, "after a run", [6]any{*got.LastFireAt, got.LastTaskID, got.LastError, *got.LastRefusedAt, got.MissedFires, *got.LastMissedAt},
			[6]any{at3, "sch-b", "", refused, 5, missedAt})
		if got.PendingFireAt != nil || got.PendingUntil != nil {
			t.Errorf("a recorded fire is still pending: %+v", got)
		}
		wantErr(t, "RecordFire on an unknown schedule",
			f.s.Schedules().RecordFire(f.ctx, domain.NewID(), domain.ScheduleFire{At: at3, TaskID: "x"}), store.ErrNotFound)
	})
}

// newScheduleSafe is newSchedule for concurrent callers: no shared counter.
func (f *fixture) newScheduleSafe(orgID, projectID, name string) *domain.Schedule {
	return &domain.Schedule{ID: domain.NewID(), OrganizationID: orgID, ProjectID: projectID, Name: name, Cron: "* * * * *",
		Timezone: "UTC", Enabled: true, NextFireAt: base, CreatedAt: base, UpdatedAt: base}
}
