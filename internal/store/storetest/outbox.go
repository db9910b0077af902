package storetest

import (
	"fmt"
	"strings"
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

	t.Run("Deliveries", func(t *testing.T) {
		f := setup(t, open)
		mail := f.mail(base)
		d := &store.Mail{ID: domain.NewID(), Kind: "step:chat", Key: "step:chat:run-1", To: []string{}, Text: `{"run":"run-1"}`,
			NextAttempt: base, CreatedAt: base.Add(time.Hour)}
		must(t, f.s.Outbox().Enqueue(f.ctx, d))
		equal(t, "Get", f.getMail(d.ID), d)
		again := *d
		again.ID = domain.NewID()
		wantErr(t, "a second delivery with the key", f.s.Outbox().Enqueue(f.ctx, &again), store.ErrConflict)
		other := &store.Mail{ID: domain.NewID(), Kind: "step:chat", Key: "step:chat:run-2", To: []string{}, Text: "{}",
			NextAttempt: base, CreatedAt: base.Add(2 * time.Hour)}
		must(t, f.s.Outbox().Enqueue(f.ctx, other))
		n, err := f.s.Outbox().Backlog(f.ctx)
		must(t, err)
		equal(t, "backlog: e-mails only", n, 1)
		got, err := f.s.Outbox().Claim(f.ctx, base, base.Add(time.Minute), 10)
		must(t, err)
		equal(t, "claimed: every kind", ids(got, mailID), []string{mail.ID, d.ID, other.ID})
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

	t.Run("Backlog", func(t *testing.T) {
		f := setup(t, open)
		backlog := func() int {
			n, err := f.s.Outbox().Backlog(f.ctx)
			must(t, err)
			return n
		}
		equal(t, "empty outbox", backlog(), 0)
		sent, retried, gaveUp := f.mail(base), f.mail(base), f.mail(base)
		f.mail(base.Add(time.Hour)) // not due yet: still owed
		_, err := f.s.Outbox().Claim(f.ctx, base, base.Add(time.Minute), 10)
		must(t, err)
		equal(t, "claimed mails are still owed", backlog(), 4)
		must(t, f.s.Outbox().MarkSent(f.ctx, sent.ID, base))
		must(t, f.s.Outbox().MarkFailed(f.ctx, retried.ID, "421", base.Add(time.Minute), false))
		must(t, f.s.Outbox().MarkFailed(f.ctx, gaveUp.ID, "550", base.Add(time.Minute), true))
		equal(t, "after one sent, one retried, one given up", backlog(), 2)
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

	// Bodies carry credentials (invitation links): a mail that will never be sent again keeps
	// none, while one that is retried keeps both parts intact.
	t.Run("SentAndGivenUpMailsKeepNoBody", func(t *testing.T) {
		f := setup(t, open)
		sent, retried, abandoned := f.mail(base), f.mail(base), f.mail(base)
		_, err := f.s.Outbox().Claim(f.ctx, base, base.Add(time.Minute), 10)
		must(t, err)
		must(t, f.s.Outbox().MarkSent(f.ctx, sent.ID, base.Add(time.Second)))
		must(t, f.s.Outbox().MarkFailed(f.ctx, retried.ID, "421 try later", base.Add(time.Minute), false))
		must(t, f.s.Outbox().MarkFailed(f.ctx, abandoned.ID, "550 no such user", base.Add(time.Minute), true))
		for _, m := range []*store.Mail{sent, abandoned} {
			got := f.getMail(m.ID)
			if got.HTML != "" || got.Text != "" {
				t.Errorf("mail %q kept its body: %q / %q", m.Subject, got.HTML, got.Text)
			}
			equal(t, "subject", got.Subject, m.Subject)
			equal(t, "recipients", got.To, m.To)
		}
		got := f.getMail(retried.ID)
		equal(t, "retried mail's HTML", got.HTML, retried.HTML)
		equal(t, "retried mail's text", got.Text, retried.Text)
	})

	t.Run("BodiesRoundTrip", func(t *testing.T) {
		f := setup(t, open)
		m := &store.Mail{ID: domain.NewID(), To: []string{"zoë@example.com"}, Subject: "Ünïcode ✓",
			HTML: "<p>Join: <a href=\"https://verdict.test/accept-invitation?token=" + domain.RandomHex(32) + "\">link</a></p>\n" +
				strings.Repeat("é", 20000),
			Text: "Line 1\r\nLine 2 ✓\n", NextAttempt: base, CreatedAt: base}
		must(t, f.s.Outbox().Enqueue(f.ctx, m))
		equal(t, "Get", f.getMail(m.ID), m)
		got, err := f.s.Outbox().Claim(f.ctx, base, base.Add(time.Minute), 10)
		must(t, err)
		equal(t, "claimed", len(got), 1)
		equal(t, "claimed HTML", got[0].HTML, m.HTML)
		equal(t, "claimed text", got[0].Text, m.Text)
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
