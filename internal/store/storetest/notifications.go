package storetest

import (
	"fmt"
	"testing"
	"time"

	"verdict/internal/domain"
	"verdict/internal/store"
)

// testNotifications covers projects' notifications (created only under the organization's
// project, read and deleted only by it, gone with their project) and their deliveries (one per
// event and notification, the newest kept, updated in place, gone with their notification).
func testNotifications(t *testing.T, open Opener) {
	t.Run("CreateGetListDelete", func(t *testing.T) {
		f := setup(t, open)
		o, other := f.org(), f.org()
		p, q := f.project(o.ID, "web"), f.project(o.ID, "api")
		repo := f.s.Notifications()
		n := &domain.Notification{OrganizationID: o.ID, ProjectID: p.ID, Kind: domain.NotifyWebhook, URLCipher: "sealed-url",
			Host: "hooks.example.com", SecretCipher: "sealed-secret", On: []string{domain.NotifyOnFailure, domain.NotifyOnRecovery},
			CreatedBy: "user-1", CreatedAt: base}
		must(t, repo.Create(f.ctx, n))
		if n.ID == "" {
			t.Fatal("Create gave no ID")
		}
		got, err := repo.Get(f.ctx, o.ID, n.ID)
		must(t, err)
		equal(t, "Get", got, n)
		_, err = repo.Get(f.ctx, other.ID, n.ID)
		wantErr(t, "Get from another organization", err, store.ErrNotFound)

		// Under another organization's project, or a project that is not there: nothing.
		wantErr(t, "Create under another organization's project", repo.Create(f.ctx, &domain.Notification{
			OrganizationID: other.ID, ProjectID: p.ID, Kind: domain.NotifySlack, URLCipher: "x", Host: "h", CreatedAt: base}),
			store.ErrNotFound)

		slack := &domain.Notification{OrganizationID: o.ID, ProjectID: p.ID, Kind: domain.NotifySlack, URLCipher: "s",
			Host: "hooks.slack.com", On: []string{domain.NotifyOnAlways}, CreatedAt: base.Add(time.Minute)}
		must(t, repo.Create(f.ctx, slack))
		must(t, repo.Create(f.ctx, &domain.Notification{OrganizationID: o.ID, ProjectID: q.ID, Kind: domain.NotifyTeams,
			URLCipher: "t", Host: "teams.example.com", On: []string{}, CreatedAt: base}))
		all, err := repo.List(f.ctx, o.ID, p.ID)
		must(t, err)
		equal(t, "List", ids(all, func(n domain.Notification) string { return n.ID }), []string{n.ID, slack.ID})
		none, err := repo.List(f.ctx, other.ID, p.ID)
		must(t, err)
		equal(t, "List of another organization", len(none), 0)

		ok, err := repo.Delete(f.ctx, other.ID, n.ID)
		must(t, err)
		equal(t, "Delete from another organization", ok, false)
		ok, err = repo.Delete(f.ctx, o.ID, n.ID)
		must(t, err)
		equal(t, "Delete", ok, true)
		_, err = repo.Get(f.ctx, o.ID, n.ID)
		wantErr(t, "Get after Delete", err, store.ErrNotFound)

		// A deleted project takes its notifications with it.
		must(t, f.s.Projects().Delete(f.ctx, o.ID, p.ID))
		_, err = repo.Get(f.ctx, o.ID, slack.ID)
		wantErr(t, "Get after the project's delete", err, store.ErrNotFound)
	})

	t.Run("Deliveries", func(t *testing.T) {
		f := setup(t, open)
		o, other := f.org(), f.org()
		p := f.project(o.ID, "web")
		repo := f.s.Notifications()
		n := &domain.Notification{OrganizationID: o.ID, ProjectID: p.ID, Kind: domain.NotifyWebhook, URLCipher: "u",
			Host: "h", On: []string{domain.NotifyOnAlways}, CreatedAt: base}
		must(t, repo.Create(f.ctx, n))
		d := &domain.Delivery{OrganizationID: o.ID, NotificationID: n.ID, EventID: "evt-1", Event: domain.EventRunFinished,
			Body: `{"type":"run.finished"}`, Status: domain.DeliveryPending, CreatedAt: base}
		must(t, repo.AddDelivery(f.ctx, d, 3))
		got, err := repo.Delivery(f.ctx, o.ID, d.ID)
		must(t, err)
		equal(t, "Delivery", got, d)
		_, err = repo.Delivery(f.ctx, other.ID, d.ID)
		wantErr(t, "Delivery of another organization", err, store.ErrNotFound)

		// The same event again is refused; for another organization's notification, nothing.
		wantErr(t, "AddDelivery of the same event", repo.AddDelivery(f.ctx, &domain.Delivery{OrganizationID: o.ID,
			NotificationID: n.ID, EventID: "evt-1", Event: domain.EventRunFinished, Body: "{}", Status: domain.DeliveryPending,
			CreatedAt: base}, 3), store.ErrConflict)
		wantErr(t, "AddDelivery for another organization", repo.AddDelivery(f.ctx, &domain.Delivery{OrganizationID: other.ID,
			NotificationID: n.ID, EventID: "evt-x", Event: domain.EventRunFinished, Body: "{}", Status: domain.DeliveryPending,
			CreatedAt: base}, 3), store.ErrNotFound)

		at, code := base.Add(time.Second), 200
		d.CreatedAt = base.Add(time.Millisecond)
		d.Status, d.StatusCode, d.DurationMs, d.Attempts, d.LastError, d.LastAttemptAt, d.DeliveredAt =
			domain.DeliveryDelivered, code, 42, 2, "HTTP 500", &at, &at
		must(t, repo.UpdateDelivery(f.ctx, d))
		got, err = repo.Delivery(f.ctx, o.ID, d.ID)
		must(t, err)
		equal(t, "Delivery after UpdateDelivery", got, d)
		wrong := *d
		wrong.OrganizationID = other.ID
		wantErr(t, "UpdateDelivery of another organization", repo.UpdateDelivery(f.ctx, &wrong), store.ErrNotFound)

		// Only the newest keep stay.
		var want []string
		for i := 2; i <= 5; i++ {
			e := &domain.Delivery{OrganizationID: o.ID, NotificationID: n.ID, EventID: fmt.Sprintf("evt-%d", i),
				Event: domain.EventRunFinished, Body: "{}", Status: domain.DeliveryPending, CreatedAt: base.Add(time.Duration(i) * time.Minute)}
			must(t, repo.AddDelivery(f.ctx, e, 3))
			want = append([]string{e.ID}, want...)
		}
		list, err := repo.Deliveries(f.ctx, o.ID, n.ID, 100)
		must(t, err)
		equal(t, "Deliveries", ids(list, func(d domain.Delivery) string { return d.ID }), want[:3])
		list, err = repo.Deliveries(f.ctx, o.ID, n.ID, 2)
		must(t, err)
		equal(t, "Deliveries with a limit", len(list), 2)
		list, err = repo.Deliveries(f.ctx, other.ID, n.ID, 100)
		must(t, err)
		equal(t, "Deliveries of another organization", len(list), 0)

		// Deleting the notification deletes its deliveries.
		_, err = repo.Delete(f.ctx, o.ID, n.ID)
		must(t, err)
		_, err = repo.Delivery(f.ctx, o.ID, want[0])
		wantErr(t, "Delivery after its notification's delete", err, store.ErrNotFound)
	})
}

// testOutboxDefer covers putting a claimed delivery back: due at the time given, its claim not
// counted as an attempt; a sent one is not put back.
func testOutboxDefer(t *testing.T, open Opener) {
	f := setup(t, open)
	m := f.mail(base)
	claimed, err := f.s.Outbox().Claim(f.ctx, base, base.Add(time.Hour), 1)
	must(t, err)
	equal(t, "claimed", len(claimed), 1)
	must(t, f.s.Outbox().Defer(f.ctx, m.ID, base.Add(time.Minute)))
	got := f.getMail(m.ID)
	equal(t, "attempts after Defer", got.Attempts, 0)
	equal(t, "next attempt after Defer", got.NextAttempt, base.Add(time.Minute))
	none, err := f.s.Outbox().Claim(f.ctx, base.Add(time.Second), base.Add(time.Hour), 1)
	must(t, err)
	equal(t, "claimed before it is due again", len(none), 0)
	again, err := f.s.Outbox().Claim(f.ctx, base.Add(time.Minute), base.Add(time.Hour), 1)
	must(t, err)
	equal(t, "claimed once due again", len(again), 1)
	must(t, f.s.Outbox().MarkSent(f.ctx, m.ID, base.Add(time.Minute)))
	wantErr(t, "Defer of a sent mail", f.s.Outbox().Defer(f.ctx, m.ID, base.Add(time.Hour)), store.ErrNotFound)
}
