package storetest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"verdict/internal/store"
)

func testBilling(t *testing.T, open Opener) {
	t.Run("EventRecordedOnce", func(t *testing.T) {
		f := setup(t, open)
		o := f.org()
		e := &store.BillingEvent{EventID: "evt_1", EventType: "invoice.payment_succeeded", Status: store.EventSuccess,
			Payload: []byte(`{"id":"evt_1"}`), CreatedAt: base, ProcessedAt: base.Add(time.Second)}
		must(t, f.s.BillingEvents().Record(f.ctx, e))
		wantErr(t, "second Record", f.s.BillingEvents().Record(f.ctx, e), store.ErrConflict)
		must(t, f.s.BillingEvents().SetOutcome(f.ctx, "evt_1", o.ID, store.EventError, "went wrong"))
		got, err := f.s.BillingEvents().Get(f.ctx, "evt_1")
		must(t, err)
		want := *e
		want.OrganizationID, want.Status, want.Error = o.ID, store.EventError, "went wrong"
		equal(t, "event", *got, want)
		list, err := f.s.BillingEvents().List(f.ctx, o.ID, 0)
		must(t, err)
		equal(t, "listed", ids(list, func(e store.BillingEvent) string { return e.EventID }), []string{"evt_1"})
		_, err = f.s.BillingEvents().Get(f.ctx, "evt_missing")
		wantErr(t, "Get missing", err, store.ErrNotFound)
		wantErr(t, "SetOutcome missing", f.s.BillingEvents().SetOutcome(f.ctx, "evt_missing", "", store.EventSuccess, ""), store.ErrNotFound)
	})

	t.Run("DuplicateInTxKeepsTxUsable", func(t *testing.T) {
		f := setup(t, open)
		o := f.org()
		must(t, f.s.BillingEvents().Record(f.ctx, &store.BillingEvent{EventID: "evt_1", EventType: "x", Status: store.EventSuccess,
			Payload: []byte(`{}`), CreatedAt: base, ProcessedAt: base}))
		must(t, f.s.InTx(f.ctx, func(tx store.Store) error {
			err := tx.BillingEvents().Record(f.ctx, &store.BillingEvent{EventID: "evt_1", EventType: "x", Status: store.EventSuccess,
				Payload: []byte(`{}`), CreatedAt: base, ProcessedAt: base})
			wantErr(t, "Record duplicate in tx", err, store.ErrConflict)
			return tx.Organizations().AddStorageUsed(f.ctx, o.ID, 5) // the transaction still works
		}))
	})

	t.Run("ConcurrentRecordsOneWins", func(t *testing.T) {
		f := setup(t, open)
		const n = 6
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = f.s.InTx(f.ctx, func(tx store.Store) error {
					return tx.BillingEvents().Record(f.ctx, &store.BillingEvent{EventID: "evt_race", EventType: "x",
						Status: store.EventSuccess, Payload: []byte(`{}`), CreatedAt: base, ProcessedAt: base})
				})
			}()
		}
		wg.Wait()
		won := 0
		for _, err := range errs {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, store.ErrConflict):
				t.Errorf("Record: %v", err)
			}
		}
		equal(t, "deliveries recorded", won, 1)
	})

	t.Run("UsageAlertClaimedOnce", func(t *testing.T) {
		f := setup(t, open)
		o, other := f.org(), f.org()
		period := base.Add(-time.Hour)
		claim := func(orgID, resource string, threshold int, start time.Time) bool {
			t.Helper()
			ok, err := f.s.UsageAlerts().Claim(f.ctx, orgID, resource, threshold, start, base)
			must(t, err)
			return ok
		}
		equal(t, "first claim", claim(o.ID, "testRuns", 50, period), true)
		equal(t, "same claim", claim(o.ID, "testRuns", 50, period), false)
		equal(t, "next threshold", claim(o.ID, "testRuns", 80, period), true)
		equal(t, "other resource", claim(o.ID, "users", 50, period), true)
		equal(t, "next period", claim(o.ID, "testRuns", 50, period.AddDate(0, 1, 0)), true)
		equal(t, "other organization", claim(other.ID, "testRuns", 50, period), true)
	})
}
