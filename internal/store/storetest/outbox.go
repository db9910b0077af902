package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"verdict/internal/domain"
	"verdict/internal/store"
)

func mailID(m store.Mail) string { return m.ID }

func (f *fixture) mail(next time.Time) *store.Mail {
	f.t.Helper()
	n := f.next()
	m := &store.Mail{
		ID: domain.NewID(), To: []string{fmt.Sprintf("to%d@example.com", n), "cc@example.com"},
		Subject: fmt.Sprintf("Mail %d", n), HTML: "<p>Hello</p>", Text: "Hello", NextAttempt: next,
		CreatedAt: base.Add(time.Duration(n) * time.Millisecond),
	}
	must(f.t, f.s.Outbox().Enqueue(f.ctx, m))
	return m
}

func (f *fixture) getMail(id string) *store.Mail {
	f.t.Helper()
	m, err := f.s.Outbox().Get(f.ctx, id)
	must(f.t, err)
	return m
}

func testOutbox(t *testing.T, open Opener) {
	t.Run("EnqueueGet", func(t *testing.T) {
		f := setup(t, open)
		m := f.mail(base)
		equal(t, "Get", f.getMail(m.ID), m)
		_, err := f.s.Outbox().Get(f.ctx, domain.NewID())
		wantErr(t, "Get unknown", err, store.ErrNotFound)
		wantErr(t, "MarkSent unknown", f.s.Outbox().MarkSent(f.ctx, domain.NewID(), base), store.ErrNotFound)
		wantErr(t, "MarkFailed unknown", f.s.Outbox().MarkFailed(f.ctx, domain.NewID(), "x", base, false),
			store.ErrNotFound)
	})

	t.Run("ClaimEarliestDueUpToN", func(t *testing.T) {
		f := setup(t, open)
		a, b, c := f.mail(base.Add(-time.Minute)), f.mail(base.Add(-2*time.Minute)), f.mail(base)
		f.mail(base.Add(time.Millisecond)) // not yet due
		lease := base.Add(time.Minute)

		got, err := f.s.Outbox().Claim(f.ctx, base, lease, 2)
		must(t, err)
		equal(t, "first claim: the two due first, oldest created first", ids(got, mailID), []string{a.ID, b.ID})
		a.Attempts, a.NextAttempt = 1, lease
		equal(t, "claimed mail", got[0], *a)

		got, err = f.s.Outbox().Claim(f.ctx, base, lease, 10)
		must(t, err)
		equal(t, "second claim: the last due mail", ids(got, mailID), []string{c.ID})
		got, err = f.s.Outbox().Claim(f.ctx, base, lease, 10)
		must(t, err)
		equal(t, "claim with nothing due", len(got), 0)
	})

	t.Run("LeaseExpires", func(t *testing.T) {
		f := setup(t, open)
		m := f.mail(base)
		lease := base.Add(time.Minute)
		got, err := f.s.Outbox().Claim(f.ctx, base, lease, 10)
		must(t, err)
		equal(t, "first claim", ids(got, mailID), []string{m.ID})
		got, err = f.s.Outbox().Claim(f.ctx, lease.Add(-time.Millisecond), lease.Add(time.Hour), 10)
		must(t, err)
		equal(t, "claim while leased", len(got), 0)
		got, err = f.s.Outbox().Claim(f.ctx, lease, lease.Add(time.Minute), 10)
		must(t, err)
		equal(t, "claim after the lease (the sender died)", ids(got, mailID), []string{m.ID})
		equal(t, "attempts", got[0].Attempts, 2)
	})

	t.Run("MarkSent", func(t *testing.T) {
		f := setup(t, open)
		m := f.mail(base)
		_, err := f.s.Outbox().Claim(f.ctx, base, base.Add(time.Minute), 10)
		must(t, err)
		sent := base.Add(time.Second)
		must(t, f.s.Outbox().MarkSent(f.ctx, m.ID, sent))
		got := f.getMail(m.ID)
		if got.SentAt == nil || !got.SentAt.Equal(sent) {
			t.Errorf("SentAt = %v, want %v", got.SentAt, sent)
		}
		claimed, err := f.s.Outbox().Claim(f.ctx, base.Add(24*time.Hour), base.Add(25*time.Hour), 10)
		must(t, err)
		equal(t, "claim after sent", len(claimed), 0)
	})

	t.Run("MarkFailedRetriesThenGivesUp", func(t *testing.T) {
		f := setup(t, open)
		m := f.mail(base)
		_, err := f.s.Outbox().Claim(f.ctx, base, base.Add(time.Minute), 10)
		must(t, err)
		retry := base.Add(10 * time.Second)
		must(t, f.s.Outbox().MarkFailed(f.ctx, m.ID, "421 try later", retry, false))
		got := f.getMail(m.ID)
		equal(t, "last error", got.LastError, "421 try later")
		equal(t, "next attempt", got.NextAttempt, retry)

		claimed, err := f.s.Outbox().Claim(f.ctx, retry.Add(-time.Millisecond), retry.Add(time.Minute), 10)
		must(t, err)
		equal(t, "claim before the retry time", len(claimed), 0)
		claimed, err = f.s.Outbox().Claim(f.ctx, retry, retry.Add(time.Minute), 10)
		must(t, err)
		equal(t, "claim at the retry time", ids(claimed, mailID), []string{m.ID})

		must(t, f.s.Outbox().MarkFailed(f.ctx, m.ID, "550 no such user", retry.Add(time.Hour), true))
		claimed, err = f.s.Outbox().Claim(f.ctx, base.Add(48*time.Hour), base.Add(49*time.Hour), 10)
		must(t, err)
		equal(t, "claim after giving up", len(claimed), 0)
		got = f.getMail(m.ID)
		if got.SentAt != nil || got.LastError != "550 no such user" || got.Attempts != 2 {
			t.Errorf("given-up mail: %+v", got)
		}
	})

	t.Run("ConcurrentClaimsAreExclusive", func(t *testing.T) {
		f := setup(t, open)
		const mails, claimers, batch = 60, 4, 7
		for range mails {
			f.mail(base)
		}
		var mu sync.Mutex
		seen := map[string]int{}
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range claimers {
			wg.Go(func() {
				<-start
				for {
					got, err := f.s.Outbox().Claim(f.ctx, base, base.Add(time.Hour), batch)
					if err != nil {
						t.Errorf("Claim: %v", err)
						return
					}
					if len(got) == 0 {
						return
					}
					mu.Lock()
					for _, m := range got {
						seen[m.ID]++
					}
					mu.Unlock()
				}
			})
		}
		close(start)
		wg.Wait()
		equal(t, "mails claimed", len(seen), mails)
		for id, n := range seen {
			if n != 1 {
				t.Errorf("mail %s claimed %d times", id, n)
			}
		}
	})
}
