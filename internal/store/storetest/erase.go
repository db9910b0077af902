package storetest

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"verdict/internal/domain"
	"verdict/internal/store"
)

// testErasure: an organization's erasure scheduled, cancelled while it is not due, claimed by
// one caller of many at once with a lease that ends, and carried out a bounded step at a
// time down to its own row, another organization untouched.
func testErasure(t *testing.T, open Opener) {
	f := setup(t, open)
	o, other := f.org(), f.org()
	admin := f.user(o.ID, domain.RoleAdmin)
	f.apiKey(admin)
	f.invitation(admin, "invitee@erase.test")
	f.apiKey(f.user(other.ID, domain.RoleAdmin))
	p := f.project(o.ID, "web")
	for i := range 3 {
		f.runWith(o.ID, base.Add(time.Duration(i)*time.Minute), func(e *domain.Execution) { e.ProjectID = p.ID })
	}
	keep := f.run(other.ID, base)
	orgs := f.s.Organizations()
	now := base.Add(time.Hour)

	if err := orgs.ScheduleErase(f.ctx, "no-such-org", now, admin.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("ScheduleErase of no organization: %v", err)
	}
	must(t, orgs.ScheduleErase(f.ctx, o.ID, now.Add(time.Hour), admin.ID))
	if err := orgs.ScheduleErase(f.ctx, o.ID, now, admin.ID); !errors.Is(err, store.ErrGuard) {
		t.Fatalf("a second ScheduleErase: %v", err)
	}
	got, err := orgs.Get(f.ctx, o.ID)
	must(t, err)
	if got.EraseAt == nil || !got.EraseAt.Equal(now.Add(time.Hour)) || got.EraseRequestedBy != admin.ID {
		t.Fatalf("scheduled: %v %q", got.EraseAt, got.EraseRequestedBy)
	}
	due, err := orgs.DueErasures(f.ctx, now, 10)
	must(t, err)
	equal(t, "due before its time", len(due), 0)
	must(t, orgs.CancelErase(f.ctx, o.ID, now))
	if err := orgs.CancelErase(f.ctx, o.ID, now); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a second CancelErase: %v", err)
	}
	if got, _ := orgs.Get(f.ctx, o.ID); got.EraseAt != nil || got.EraseRequestedBy != "" {
		t.Fatalf("cancelled: %v %q", got.EraseAt, got.EraseRequestedBy)
	}

	// Due: no longer cancelled; claimed by one of many at once.
	must(t, orgs.ScheduleErase(f.ctx, o.ID, now, admin.ID))
	if err := orgs.CancelErase(f.ctx, o.ID, now); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("CancelErase of a due erasure: %v", err)
	}
	due, err = orgs.DueErasures(f.ctx, now, 10)
	must(t, err)
	equal(t, "due", due, []string{o.ID})
	var won atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := orgs.ClaimErase(f.ctx, o.ID, now, now.Add(5*time.Minute))
			if err != nil {
				t.Error(err)
			}
			if ok {
				won.Add(1)
			}
		}()
	}
	wg.Wait()
	equal(t, "claims won", won.Load(), int32(1))
	due, err = orgs.DueErasures(f.ctx, now.Add(time.Minute), 10)
	must(t, err)
	equal(t, "due while held", len(due), 0)
	ok, err := orgs.ClaimErase(f.ctx, o.ID, now.Add(5*time.Minute), now.Add(10*time.Minute)) // the lease ended
	must(t, err)
	equal(t, "claimed after the lease", ok, true)
	must(t, orgs.RenewErase(f.ctx, o.ID, now)) // released
	ok, err = orgs.ClaimErase(f.ctx, o.ID, now, now.Add(5*time.Minute))
	must(t, err)
	equal(t, "claimed once released", ok, true)

	// Erased a bounded step at a time, its own row last.
	steps, last := 0, ""
	for {
		table, n, err := orgs.EraseStep(f.ctx, o.ID, 2)
		must(t, err)
		if n == 0 {
			break
		}
		if n > 2 {
			t.Fatalf("a step deleted %d rows of %s, more than its bound", n, table)
		}
		steps, last = steps+1, table
		if steps > 100 {
			t.Fatal("the erasure does not end")
		}
	}
	equal(t, "the last step", last, "organizations")
	if _, err := orgs.Get(f.ctx, o.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the organization after its erasure: %v", err)
	}
	if _, err := f.s.Users().Get(f.ctx, o.ID, admin.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("its member: %v", err)
	}
	if err := orgs.RenewErase(f.ctx, o.ID, now); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("RenewErase of an erased organization: %v", err)
	}
	// The other organization keeps everything.
	f.getRun(other.ID, keep.TaskID)
	users, err := f.s.Users().List(f.ctx, other.ID)
	must(t, err)
	equal(t, "the other organization's members", len(users), 1)
}
