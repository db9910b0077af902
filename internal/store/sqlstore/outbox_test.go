package sqlstore

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/pressly/goose/v3"

	"verdict/internal/crypto/secretbox"
	"verdict/internal/domain"
	"verdict/internal/store"
	"verdict/internal/testenv"
)

func testMailBox(t testing.TB, b byte) *secretbox.Box {
	t.Helper()
	box, err := secretbox.New(bytes.Repeat([]byte{b}, secretbox.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	return box
}

// forEachDialect runs fn on a fresh SQLite and a fresh PostgreSQL database, migrated up to
// version (0: all), with no mail key set.
func forEachDialect(t *testing.T, version int64, fn func(t *testing.T, s *Store)) {
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			url := ""
			if dialect == "postgres" {
				url = testenv.PostgresDB(t)
			}
			s, err := Open(context.Background(), url, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			fsys, err := fs.Sub(migrations, "migrations/"+s.d.name)
			if err != nil {
				t.Fatal(err)
			}
			p, err := goose.NewProvider(s.d.goose, s.db, fsys, goose.WithLogger(goose.NopLogger()))
			if err != nil {
				t.Fatal(err)
			}
			if version == 0 {
				_, err = p.Up(context.Background())
			} else {
				_, err = p.UpTo(context.Background(), version)
			}
			if err != nil {
				t.Fatal(err)
			}
			fn(t, s)
		})
	}
}

var outboxBase = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

func invitationMail(token string) *store.Mail {
	link := "https://verdict.test/accept-invitation?token=" + token
	return &store.Mail{To: []string{"invitee@example.com"}, Subject: "Ada invited you to join Acme",
		HTML: `<a href="` + link + `">Accept</a>`, Text: "Accept: " + link, NextAttempt: outboxBase, CreatedAt: outboxBase}
}

// rawMail reads a row's body columns as they are stored.
func rawMail(t *testing.T, s *Store, id string) (html, text string, sealed bool) {
	t.Helper()
	if err := s.db.QueryRow(s.d.rebind(`SELECT body_html, body_text, sealed FROM mail_outbox WHERE id = ?`), id).
		Scan(&html, &text, &sealed); err != nil {
		t.Fatal(err)
	}
	return html, text, sealed
}

// A backup of the outbox shows no invitation token: bodies are sealed while queued and gone
// once sent.
func TestOutboxSealsBodiesAtRest(t *testing.T) {
	forEachDialect(t, 0, func(t *testing.T, s *Store) {
		ctx := context.Background()
		s.SealOutbox(testMailBox(t, 7))
		token := domain.RandomHex(32)
		m := invitationMail(token)
		if err := s.InTx(ctx, func(tx store.Store) error { return tx.Outbox().Enqueue(ctx, m) }); err != nil {
			t.Fatal(err)
		}
		html, text, sealed := rawMail(t, s, m.ID)
		if !sealed || !strings.HasPrefix(html, "v1:") || !strings.HasPrefix(text, "v1:") {
			t.Fatalf("stored bodies are not sealed: sealed %v, %q, %q", sealed, html, text)
		}
		if strings.Contains(html+text, token) || strings.Contains(html+text, "accept-invitation") {
			t.Fatal("a stored body shows the invitation link")
		}
		got, err := s.Outbox().Claim(ctx, outboxBase, outboxBase.Add(time.Minute), 10)
		if err != nil || len(got) != 1 || got[0].HTML != m.HTML || got[0].Text != m.Text {
			t.Fatalf("Claim = %+v, %v; want the mail in clear", got, err)
		}
		if err := s.Outbox().MarkSent(ctx, m.ID, outboxBase.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		if html, text, _ := rawMail(t, s, m.ID); html != "" || text != "" {
			t.Fatalf("a sent mail kept its bodies: %q, %q", html, text)
		}
	})
}

// Mails queued before bodies were sealed are still sent, and the migration drops the bodies
// of those already sent or given up.
func TestOutboxMigrationKeepsUnsentMailsAndDropsSentBodies(t *testing.T) {
	forEachDialect(t, 6, func(t *testing.T, s *Store) {
		ctx := context.Background()
		tokens := map[string]string{"queued": domain.RandomHex(32), "sent": domain.RandomHex(32), "abandoned": domain.RandomHex(32)}
		for id, token := range tokens {
			m := invitationMail(token)
			var sent any
			if id == "sent" {
				sent = outboxBase.UnixMilli()
			}
			if _, err := s.db.Exec(s.d.rebind(`INSERT INTO mail_outbox (id, recipients, subject, body_html, body_text,
				next_attempt, sent_at, given_up, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`),
				id, `["invitee@example.com"]`, m.Subject, m.HTML, m.Text, outboxBase.UnixMilli(), sent, id == "abandoned",
				outboxBase.UnixMilli()); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"sent", "abandoned"} {
			if html, text, _ := rawMail(t, s, id); html != "" || text != "" {
				t.Errorf("the %s mail kept its bodies after the migration", id)
			}
		}
		want := invitationMail(tokens["queued"])
		if html, text, sealed := rawMail(t, s, "queued"); sealed || html != want.HTML || text != want.Text {
			t.Fatalf("the queued mail changed in the migration: sealed %v, %q, %q", sealed, html, text)
		}

		s.SealOutbox(testMailBox(t, 7))
		got, err := s.Outbox().Claim(ctx, outboxBase, outboxBase.Add(time.Minute), 10)
		if err != nil || len(got) != 1 || got[0].ID != "queued" || got[0].Text != want.Text || got[0].HTML != want.HTML {
			t.Fatalf("Claim = %+v, %v; want the queued mail as it was", got, err)
		}
		if err := s.Outbox().MarkSent(ctx, "queued", outboxBase.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		if html, text, _ := rawMail(t, s, "queued"); html != "" || text != "" {
			t.Fatal("the queued mail kept its bodies once sent")
		}
	})
}

// Without a key the outbox refuses to work instead of storing bodies in clear; a mail sealed
// with another key is given up without holding up the others.
func TestOutboxKeys(t *testing.T) {
	forEachDialect(t, 0, func(t *testing.T, s *Store) {
		ctx := context.Background()
		if err := s.Outbox().Enqueue(ctx, invitationMail(domain.RandomHex(32))); !errors.Is(err, errNoMailKey) {
			t.Fatalf("Enqueue without a key = %v", err)
		}
		if _, err := s.Outbox().Claim(ctx, outboxBase, outboxBase.Add(time.Minute), 10); !errors.Is(err, errNoMailKey) {
			t.Fatalf("Claim without a key = %v", err)
		}

		s.SealOutbox(testMailBox(t, 1))
		lost := invitationMail(domain.RandomHex(32))
		if err := s.Outbox().Enqueue(ctx, lost); err != nil {
			t.Fatal(err)
		}
		s.SealOutbox(testMailBox(t, 2)) // ENCRYPTION_KEY changed
		kept := invitationMail(domain.RandomHex(32))
		kept.CreatedAt = outboxBase.Add(time.Millisecond)
		if err := s.Outbox().Enqueue(ctx, kept); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Outbox().Get(ctx, lost.ID); !errors.Is(err, secretbox.ErrOpen) {
			t.Fatalf("Get of a mail sealed with another key = %v", err)
		}
		got, err := s.Outbox().Claim(ctx, outboxBase, outboxBase.Add(time.Minute), 10)
		if err != nil || len(got) != 1 || got[0].ID != kept.ID || got[0].Text != kept.Text {
			t.Fatalf("Claim = %+v, %v; want only the mail sealed with the current key", got, err)
		}
		var lastError string
		var givenUp bool
		if err := s.db.QueryRow(s.d.rebind(`SELECT last_error, given_up FROM mail_outbox WHERE id = ?`), lost.ID).
			Scan(&lastError, &givenUp); err != nil {
			t.Fatal(err)
		}
		if !givenUp || !strings.Contains(lastError, "ENCRYPTION_KEY") {
			t.Fatalf("the unreadable mail: given up %v, error %q", givenUp, lastError)
		}
	})
}
