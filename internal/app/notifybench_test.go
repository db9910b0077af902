//go:build integration

package app_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"verdict/internal/domain"
	"verdict/internal/notify"
	"verdict/internal/notify/notifytest"
	"verdict/internal/store"
)

// BenchmarkNotifications measures, on the real engine (scripts/bench-notify.sh runs it):
//
//   - the delay from a run's end (its finishedAt) to its webhook event's arrival, over
//     VERDICT_BENCH_NOTIFY_RUNS runs (40) queued at once: p50 and p99, target p99 < 2 s;
//   - the drain of VERDICT_BENCH_DRAIN_RUNS runs (40; from the first queued to the last final)
//     without any delivery pending, then with 1,000 deliveries pending to a receiver that takes
//     1 s each: the two drains should not differ beyond noise, the backlog being served meanwhile
//     at its lane's pace; and the delay of the drained runs' events to a quick receiver during
//     the backlog (the slow one must not hold it back).
//
// VERDICT_BENCH_DB chooses the database (sqlite, postgres).
func BenchmarkNotifications(b *testing.B) {
	dialect := os.Getenv("VERDICT_BENCH_DB")
	if dialect == "" {
		dialect = "sqlite"
	}
	for range b.N {
		benchNotifications(b, dialect)
	}
}

func benchNotifications(b *testing.B, dialect string) {
	h := newHarness(b, harnessOpts{dialect: dialect, realClock: true, workers: true,
		env: map[string]string{"VERDICT_RUNNER_SLOTS": "4", "VERDICT_EGRESS_ALLOW": "127.0.0.1"}})
	acc := h.signup("notifybench@example.com", "Notify Bench Co")
	ctx := context.Background()
	if err := h.app.Store.Organizations().UpdatePlan(ctx, acc.orgID, domain.PlanEnterprise, domain.Billing{}); err != nil {
		b.Fatal(err)
	}
	a := bearer(acc.token)
	p := h.do("POST", "/api/projects", a, map[string]any{"name": "Bench", "image": passImage})
	expect(b, p, 201, "")
	project := p.str("project", "id")
	const secret = "whsec_bench_0123456789abcdef"
	addHook := func(rc *notifytest.Receiver) string {
		r := h.do("POST", "/api/projects/"+project+"/notifications", a, map[string]any{"kind": "webhook", "url": rc.URL,
			"on": []string{"always"}, "secret": secret})
		expect(b, r, 201, "")
		return r.str("data", "notification", "id")
	}
	runs := envInt(b, "VERDICT_BENCH_NOTIFY_RUNS", 40)
	drainRuns := envInt(b, "VERDICT_BENCH_DRAIN_RUNS", 40)

	// drain queues n passing runs at once and returns the time from the first queued to the last
	// final, and each run's finishedAt by task.
	drain := func(tag string, n int) (time.Duration, map[string]time.Time) {
		tasks := make([]string, n)
		t0 := time.Now()
		for i := range n {
			tasks[i] = h.queue(a, map[string]any{"projectId": project, "taskId": fmt.Sprintf("%s-%d", tag, i)})
		}
		ends := map[string]time.Time{}
		var last time.Time
		for _, task := range tasks {
			r := h.waitFor(a, task, 10*time.Minute, final)
			if r.str("execution", "status") != "PASSED" {
				b.Fatalf("run %s: %s", task, r.raw)
			}
			end, err := time.Parse(time.RFC3339Nano, r.str("execution", "finishedAt"))
			if err != nil {
				b.Fatalf("run %s: finishedAt: %s", task, r.raw)
			}
			ends[task] = end
			if end.After(last) {
				last = end
			}
		}
		return last.Sub(t0), ends
	}
	// delays are the arrival delays of the events of the runs in ends at rc, in ms.
	delays := func(rc *notifytest.Receiver, ends map[string]time.Time) []float64 {
		deadline := time.Now().Add(time.Minute)
		for {
			got := map[string]time.Time{}
			for _, g := range rc.Got() {
				if r, ok := g.Body["run"].(map[string]any); ok {
					if task, _ := r["taskId"].(string); !ends[task].IsZero() && got[task].IsZero() {
						got[task] = g.At
					}
				}
			}
			if len(got) == len(ends) {
				var out []float64
				for task, end := range ends {
					out = append(out, ms(end, got[task]))
				}
				return out
			}
			if time.Now().After(deadline) {
				b.Fatalf("%d of %d runs' events arrived within a minute", len(got), len(ends))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	// 1. The delay from a run's end to its event.
	quick := notifytest.Webhook(b, "", secret)
	quickID := addHook(quick)
	_, ends := drain("delay", runs)
	d := delays(quick, ends)
	b.Logf("notification delay from run end (%d runs): p50 %.0f ms, p99 %.0f ms; target p99 < 2000 ms: %s",
		len(d), pct(d, 50), pct(d, 99), passMiss(pct(d, 99) < 2000))
	expect(b, h.do("DELETE", "/api/projects/"+project+"/notifications/"+quickID, a, nil), 200, "")

	// 2. The drain, without and with 1,000 deliveries pending to a receiver taking 1 s each.
	base, _ := drain("drain-base", drainRuns)
	slow := notifytest.Webhook(b, "", secret)
	slow.Delay(time.Second)
	slowID := addHook(slow)
	backlog := 1000
	now := time.Now()
	st := h.app.Store
	for i := range backlog {
		dl := &domain.Delivery{OrganizationID: acc.orgID, NotificationID: slowID, EventID: "evt_backlog_" + strconv.Itoa(i),
			Event: domain.EventRunFinished, Body: `{"id":"evt_backlog_` + strconv.Itoa(i) + `","type":"run.finished"}`,
			Status: domain.DeliveryPending, CreatedAt: now}
		if err := st.InTx(ctx, func(tx store.Store) error {
			if err := tx.Notifications().AddDelivery(ctx, dl, backlog+100); err != nil {
				return err
			}
			return tx.Outbox().Enqueue(ctx, &store.Mail{Kind: notify.OutboxKind, To: []string{}, Text: notify.Payload(dl),
				NextAttempt: now, CreatedAt: now})
		}); err != nil {
			b.Fatal(err)
		}
	}
	quick2 := notifytest.Webhook(b, "", secret)
	addHook(quick2)
	time.Sleep(2 * time.Second) // the worker is serving the backlog
	before := len(slow.Got())
	loaded, ends2 := drain("drain-backlog", drainRuns)
	during := len(slow.Got()) - before
	d2 := delays(quick2, ends2)
	ratio := loaded.Seconds() / base.Seconds()
	b.Logf("drain of %d runs: %.1f s without deliveries pending, %.1f s with %d pending to a 1 s receiver (ratio %.2f; target <= 1.10: %s); the slow receiver took %d deliveries meanwhile",
		drainRuns, base.Seconds(), loaded.Seconds(), backlog, ratio, passMiss(ratio <= 1.10), during)
	b.Logf("notification delay to a quick receiver during that backlog (%d runs): p50 %.0f ms, p99 %.0f ms; target p99 < 2000 ms: %s",
		len(d2), pct(d2, 50), pct(d2, 99), passMiss(pct(d2, 99) < 2000))
}

func passMiss(ok bool) string {
	if ok {
		return "PASS"
	}
	return "MISS"
}
