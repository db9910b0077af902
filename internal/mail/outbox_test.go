package mail

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"verdict/internal/crypto/secretbox"
	"verdict/internal/store"
	"verdict/internal/store/sqlstore"
	"verdict/internal/testenv"
)

// forEachStore runs fn against a migrated SQLite store in a temporary folder and a fresh
// PostgreSQL database: the outbox's leases and retries are SQL, so both dialects are tested.
func forEachStore(t *testing.T, fn func(t *testing.T, st store.Store)) {
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			url := ""
			if dialect == "postgres" {
				url = testenv.PostgresDB(t)
			}
			ctx := context.Background()
			st, err := sqlstore.Open(ctx, url, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			if err := st.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			box, err := secretbox.New(bytes.Repeat([]byte{7}, secretbox.KeySize))
			if err != nil {
				t.Fatal(err)
			}
			st.SealOutbox(box)
			fn(t, st)
		})
	}
}

func newTestClock() *testenv.Clock {
	return testenv.NewClock(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
}

// lockedBuffer collects log output written from the worker's goroutine.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func smtpTo(t *testing.T, srv *testenv.SMTPServer) *SMTPSender {
	t.Helper()
	s, err := NewSMTPSender(SMTPConfig{Host: "127.0.0.1", Port: srv.Port, From: "noreply@verdict.test", TLS: TLSNone, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// idRecorder passes Enqueue through to the real repository and remembers the ID it gave the
// mail, which Enqueue does not return.
type idRecorder struct {
	store.OutboxRepo
	id string
}

func (r *idRecorder) Enqueue(ctx context.Context, m *store.Mail) error {
	err := r.OutboxRepo.Enqueue(ctx, m)
	r.id = m.ID
	return err
}

// enqueue enqueues msg in a transaction, as a service does, and returns the mail's ID.
func enqueue(t *testing.T, st store.Store, msg Message, now time.Time) string {
	t.Helper()
	ctx := context.Background()
	var rec idRecorder
	if err := st.InTx(ctx, func(tx store.Store) error {
		rec.OutboxRepo = tx.Outbox()
		return Enqueue(ctx, &rec, msg, now)
	}); err != nil {
		t.Fatal(err)
	}
	if rec.id == "" {
		t.Fatal("the repository gave the mail no ID")
	}
	return rec.id
}

func getMail(t *testing.T, st store.Store, id string) *store.Mail {
	t.Helper()
	m, err := st.Outbox().Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestOutboxRetriesWithBackoffThenSends(t *testing.T) {
	forEachStore(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		srv := testenv.StartSMTP(t, testenv.SMTPOptions{RejectN: 2})
		clock := newTestClock()
		var logs lockedBuffer
		w := &Worker{Repo: st.Outbox(), Sender: smtpTo(t, srv), Clock: clock.Now,
			Logger: slog.New(slog.NewTextHandler(&logs, nil))}
		c, link := testInvitation(t)
		id := enqueue(t, st, c.Message("invitee@example.com"), clock.Now())

		// First attempt: the server answers 550, a retry is due 30 s later.
		claimAndCheck := func(wantClaimed int) {
			t.Helper()
			n, err := w.RunOnce(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if n != wantClaimed {
				t.Fatalf("at %s: claimed %d, want %d", clock.Now().Format(time.TimeOnly), n, wantClaimed)
			}
		}
		claimAndCheck(1)
		m := getMail(t, st, id)
		if m.Attempts != 1 || m.SentAt != nil || !strings.Contains(m.LastError, "550") {
			t.Fatalf("after a rejection: attempts %d, sent %v, error %q", m.Attempts, m.SentAt, m.LastError)
		}
		if want := clock.Now().Add(30 * time.Second); !m.NextAttempt.Equal(want) {
			t.Fatalf("next attempt %s, want %s", m.NextAttempt, want)
		}
		claimAndCheck(0) // not due yet
		clock.Advance(29 * time.Second)
		claimAndCheck(0)

		// Second attempt, 30 s later: rejected again, the delay doubles.
		clock.Advance(time.Second)
		claimAndCheck(1)
		m = getMail(t, st, m.ID)
		if want := clock.Now().Add(time.Minute); m.Attempts != 2 || !m.NextAttempt.Equal(want) {
			t.Fatalf("after the second rejection: attempts %d, next %s, want 2 and %s", m.Attempts, m.NextAttempt, want)
		}

		// Third attempt: accepted.
		clock.Advance(time.Minute)
		claimAndCheck(1)
		m = getMail(t, st, m.ID)
		if m.SentAt == nil || !m.SentAt.Equal(clock.Now()) || m.Attempts != 3 {
			t.Fatalf("after delivery: sent %v, attempts %d", m.SentAt, m.Attempts)
		}
		clock.Advance(2 * time.Hour)
		claimAndCheck(0) // a sent mail is never sent again

		if got := srv.DataAttempts(); got != 3 {
			t.Errorf("server saw %d deliveries, want 3", got)
		}
		msgs := srv.Messages()
		if len(msgs) != 1 {
			t.Fatalf("server accepted %d messages, want 1", len(msgs))
		}
		p := testenv.ParseMail(t, msgs[0].Data)
		if p.Subject != c.Subject || !strings.Contains(p.Parts["text/plain"], link) || !strings.Contains(p.Parts["text/html"], link) {
			t.Errorf("delivered message differs: subject %q", p.Subject)
		}

		// The log tells an operator what failed, never what was in the mail or to whom.
		out := logs.String()
		if !strings.Contains(out, "will retry") || !strings.Contains(out, "550") || !strings.Contains(out, m.ID) ||
			!strings.Contains(out, "recipient-1") {
			t.Errorf("log lacks the failure:\n%s", out)
		}
		for _, secret := range []string{"invitee@example.com", strings.Repeat("0123456789abcdef", 4), c.Subject, "Acme"} {
			if strings.Contains(out, secret) {
				t.Errorf("log reveals %q:\n%s", secret, out)
			}
		}
	})
}

func TestOutboxGivesUpAfterMaxAttempts(t *testing.T) {
	forEachStore(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		srv := testenv.StartSMTP(t, testenv.SMTPOptions{RejectN: 1000})
		clock := newTestClock()
		var logs lockedBuffer
		w := &Worker{Repo: st.Outbox(), Sender: smtpTo(t, srv), Clock: clock.Now,
			Logger: slog.New(slog.NewTextHandler(&logs, nil))}
		c, _ := testInvitation(t)
		id := enqueue(t, st, c.Message("invitee@example.com"), clock.Now())
		var delays []time.Duration
		for range MaxAttempts + 3 {
			n, err := w.RunOnce(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if n == 1 {
				m := getMail(t, st, id)
				delays = append(delays, m.NextAttempt.Sub(clock.Now()))
			}
			clock.Advance(2 * time.Hour) // beyond any backoff
		}
		if got := srv.DataAttempts(); got != MaxAttempts {
			t.Fatalf("server saw %d attempts, want %d", got, MaxAttempts)
		}
		want := []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute,
			16 * time.Minute, 32 * time.Minute, time.Hour, time.Hour, time.Hour}
		if fmt.Sprint(delays) != fmt.Sprint(want) {
			t.Errorf("retry delays %v, want %v", delays, want)
		}
		m := getMail(t, st, id)
		if m.SentAt != nil || m.Attempts != MaxAttempts || !strings.Contains(m.LastError, "550") {
			t.Errorf("given-up mail: sent %v, attempts %d, error %q", m.SentAt, m.Attempts, m.LastError)
		}
		if !strings.Contains(logs.String(), "mail given up") {
			t.Errorf("giving up was not logged:\n%s", logs.String())
		}
	})
}

func TestEnqueueBelongsToTheCallersTransaction(t *testing.T) {
	forEachStore(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		now := newTestClock().Now()
		c, _ := testInvitation(t)
		rollback := errors.New("the change failed")
		var rec idRecorder
		err := st.InTx(ctx, func(tx store.Store) error {
			rec.OutboxRepo = tx.Outbox()
			if err := Enqueue(ctx, &rec, c.Message("invitee@example.com"), now); err != nil {
				return err
			}
			return rollback
		})
		if !errors.Is(err, rollback) {
			t.Fatalf("InTx = %v", err)
		}
		if _, err := st.Outbox().Get(ctx, rec.id); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("mail of a rolled-back change: Get = %v, want not found", err)
		}
		if err := Enqueue(ctx, st.Outbox(), Message{To: []string{"not an address"}, Subject: "s", HTML: "h", Text: "t"}, now); err == nil {
			t.Fatal("an undeliverable message was enqueued")
		}
		if mails, err := st.Outbox().Claim(ctx, now.Add(time.Hour), now.Add(2*time.Hour), 10); err != nil || len(mails) != 0 {
			t.Fatalf("outbox holds %d mails (%v), want none", len(mails), err)
		}
	})
}

// Two replicas polling the same outbox send every mail exactly once.
func TestOutboxWorkersShareTheQueue(t *testing.T) {
	forEachStore(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		srv := testenv.StartSMTP(t, testenv.SMTPOptions{})
		sender := smtpTo(t, srv)
		const total = 12
		for i := range total {
			msg := Message{To: []string{fmt.Sprintf("user%d@example.com", i)}, Subject: fmt.Sprintf("mail %d", i), HTML: "<p>h</p>", Text: "t"}
			if err := Enqueue(ctx, st.Outbox(), msg, time.Now().UTC()); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		for range 2 {
			w := &Worker{Repo: st.Outbox(), Sender: sender, BatchSize: 2}
			wg.Go(func() {
				for {
					n, err := w.RunOnce(ctx)
					if err != nil {
						t.Error(err)
						return
					}
					if n == 0 {
						return
					}
				}
			})
		}
		wg.Wait()
		seen := map[string]int{}
		for _, m := range srv.Messages() {
			seen[testenv.ParseMail(t, m.Data).Subject]++
		}
		if len(seen) != total {
			t.Errorf("%d distinct mails delivered, want %d", len(seen), total)
		}
		for s, n := range seen {
			if n != 1 {
				t.Errorf("%q delivered %d times", s, n)
			}
		}
	})
}

// Run sends at once when notified, without waiting for its poll, and stops with its context.
func TestWorkerRunWakesOnNotify(t *testing.T) {
	forEachStore(t, func(t *testing.T, st store.Store) {
		srv := testenv.StartSMTP(t, testenv.SMTPOptions{})
		w := &Worker{Repo: st.Outbox(), Sender: smtpTo(t, srv), PollInterval: time.Hour}
		w.Notify() // a wake-up before Run starts is kept, not lost
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { w.Run(ctx); close(done) }()

		c, _ := testInvitation(t)
		if err := Enqueue(ctx, st.Outbox(), c.Message("invitee@example.com"), time.Now().UTC()); err != nil {
			t.Fatal(err)
		}
		w.Notify()
		deadline := time.Now().Add(10 * time.Second)
		for len(srv.Messages()) == 0 {
			if time.Now().After(deadline) {
				t.Fatal("no mail 10 s after Notify")
			}
			time.Sleep(20 * time.Millisecond)
		}
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("Run did not stop with its context")
		}
	})
}

// A send cut short by shutdown is released for the next worker instead of waiting out its lease.
func TestWorkerShutdownReleasesTheMail(t *testing.T) {
	t.Parallel() // it waits out real timers; alone it would hold a test slot
	forEachStore(t, func(t *testing.T, st store.Store) {
		clock := newTestClock()
		s, err := NewSMTPSender(SMTPConfig{Host: "127.0.0.1", Port: silentServer(t), From: "noreply@verdict.test", TLS: TLSNone, Timeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		w := &Worker{Repo: st.Outbox(), Sender: s, Clock: clock.Now}
		c, _ := testInvitation(t)
		id := enqueue(t, st, c.Message("invitee@example.com"), clock.Now())
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		if _, err := w.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		m := getMail(t, st, id)
		if m.SentAt != nil || !m.NextAttempt.Equal(clock.Now()) || !strings.Contains(m.LastError, "interrupted") {
			t.Fatalf("interrupted mail: sent %v, next %s (now %s), error %q", m.SentAt, m.NextAttempt, clock.Now(), m.LastError)
		}
	})
}

func TestBackoff(t *testing.T) {
	for n, want := range map[int]time.Duration{1: 30 * time.Second, 2: time.Minute, 3: 2 * time.Minute,
		7: 32 * time.Minute, 8: time.Hour, 9: time.Hour, 1000: time.Hour} {
		if got := Backoff(n); got != want {
			t.Errorf("Backoff(%d) = %v, want %v", n, got, want)
		}
	}
}
