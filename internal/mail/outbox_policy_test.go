package mail

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"verdict/internal/store"
)

// enqueueDelivery enqueues a delivery of kind with payload, due at now, and returns its ID.
func enqueueDelivery(t *testing.T, st store.Store, kind, payload string, now time.Time) string {
	t.Helper()
	m := &store.Mail{Kind: kind, To: []string{}, Text: payload, NextAttempt: now, CreatedAt: now}
	if err := st.Outbox().Enqueue(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	return m.ID
}

// A kind with a policy of its own is retried by it (here for 24 hours, far past the e-mails' 10
// attempts), a permanent refusal is given up at once, and a kind without one keeps the e-mails'.
func TestOutboxRetryPolicyByKind(t *testing.T) {
	t.Parallel() // it waits out real timers; alone it would hold a test slot
	forEachStore(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		clock := newTestClock()
		day := RetryPolicy{Base: 10 * time.Second, Max: time.Hour, Window: 24 * time.Hour}
		var mu sync.Mutex
		tries := map[string]int{}
		fail := func(_ context.Context, payload string) error {
			mu.Lock()
			tries[payload]++
			mu.Unlock()
			if payload == "refused" {
				return Permanent(errors.New("HTTP 404"))
			}
			return errors.New("HTTP 503")
		}
		w := &Worker{Repo: st.Outbox(), Clock: clock.Now,
			Deliverers: map[string]func(context.Context, string) error{"step:day": fail, "step:plain": fail},
			Policies:   map[string]RetryPolicy{"step:day": day}}
		start := clock.Now()
		dayID := enqueueDelivery(t, st, "step:day", "day", start)
		refusedID := enqueueDelivery(t, st, "step:day", "refused", start)
		plainID := enqueueDelivery(t, st, "step:plain", "plain", start)
		var lastDayTry time.Time
		for clock.Now().Sub(start) < 26*time.Hour {
			before := tries["day"]
			if _, err := w.RunOnce(ctx); err != nil {
				t.Fatal(err)
			}
			if tries["day"] > before {
				lastDayTry = clock.Now()
			}
			clock.Advance(10 * time.Second)
		}
		for id, want := range map[string]int{dayID: tries["day"], refusedID: 1, plainID: MaxAttempts} {
			m := getMail(t, st, id)
			if m.SentAt != nil || m.Attempts != want {
				t.Errorf("%s: attempts %d (sent %v), want %d", m.Text, m.Attempts, m.SentAt, want)
			}
			if next, err := st.Outbox().Claim(ctx, clock.Now().Add(48*time.Hour), clock.Now().Add(49*time.Hour), 10); err != nil || len(next) != 0 {
				t.Fatalf("still due after being given up: %+v %v", next, err)
			}
		}
		if tries["refused"] != 1 || tries["plain"] != MaxAttempts {
			t.Errorf("tries %v: want the refused one once and the plain kind %d times", tries, MaxAttempts)
		}
		// Backoff from 10 s doubling to an hour: about 33 tries in 24 h, the last within it.
		if tries["day"] < 30 || lastDayTry.Sub(start) > 24*time.Hour || lastDayTry.Sub(start) < 23*time.Hour {
			t.Errorf("the 24-hour kind was tried %d times, last %s after its enqueue", tries["day"], lastDayTry.Sub(start))
		}
	})
}

// A slow receiver does not hold back the others: 200 deliveries due to a receiver that takes half
// a second each, then one to a quick receiver, due after all of them, which is made within a
// second while the slow receiver's backlog is served at its pace (LaneParallel at once), each
// delivery once; stopped, the worker leaves the rest due, none made twice.
func TestOutboxSlowLaneDoesNotBlockOthers(t *testing.T) {
	t.Parallel() // it waits out real timers; alone it would hold a test slot
	forEachStore(t, func(t *testing.T, st store.Store) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var mu sync.Mutex
		made := map[string]int{}
		var quickAt time.Time
		deliver := func(_ context.Context, payload string) error {
			if payload[:4] == "slow" {
				time.Sleep(500 * time.Millisecond)
			}
			mu.Lock()
			defer mu.Unlock()
			made[payload]++
			if payload == "quick" {
				quickAt = time.Now()
			}
			return nil
		}
		w := &Worker{Repo: st.Outbox(), PollInterval: 50 * time.Millisecond, Parallel: 8, LaneParallel: 4,
			Deliverers: map[string]func(context.Context, string) error{"step:hook": deliver},
			Lanes:      map[string]func(string) string{"step:hook": func(p string) string { return p[:4] }}}
		now := time.Now()
		const slow = 200
		for i := range slow {
			enqueueDelivery(t, st, "step:hook", fmt.Sprintf("slow-%03d", i), now.Add(-time.Minute))
		}
		done := make(chan struct{})
		go func() { w.Run(ctx); close(done) }()
		time.Sleep(300 * time.Millisecond) // the slow backlog is being served
		enqueued := time.Now()
		enqueueDelivery(t, st, "step:hook", "quick", enqueued.Add(-time.Second))
		w.Notify()
		deadline := time.Now().Add(30 * time.Second)
		for {
			mu.Lock()
			q := quickAt
			mu.Unlock()
			if !q.IsZero() {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the quick delivery was not made in 30 s")
			}
			time.Sleep(20 * time.Millisecond)
		}
		time.Sleep(2 * time.Second) // the slow lane goes on at its pace
		cancel()
		<-done
		delay := quickAt.Sub(enqueued)
		mu.Lock()
		slowMade := len(made) - 1
		for p, n := range made {
			if n != 1 {
				t.Errorf("%s made %d times", p, n)
			}
		}
		mu.Unlock()
		t.Logf("quick receiver's delivery made %s after its enqueue, behind %d slow ones; %d slow ones made meanwhile", delay, slow, slowMade)
		if delay > time.Second {
			t.Errorf("the quick receiver waited %s behind the slow one", delay)
		}
		// Stopped, the worker left the rest due (released or put back), none lost.
		left, err := st.Outbox().Claim(context.Background(), time.Now().Add(time.Hour), time.Now().Add(2*time.Hour), 1000)
		if err != nil || len(left)+slowMade != slow {
			t.Errorf("after the stop: %d left due, %d made, of %d (%v)", len(left), slowMade, slow, err)
		}
	})
}
