//go:build integration

package app_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"verdict/internal/testenv"
)

// outboxRow is a mail_outbox row as the database (or a backup of it) holds it.
type outboxRow struct {
	id, recipients, subject, html, text string
	sent                                sql.NullInt64
}

func (r outboxRow) String() string {
	return fmt.Sprintf("%s|%s|%s|%s|%s", r.id, r.recipients, r.subject, r.html, r.text)
}

func readOutbox(t *testing.T, db *sql.DB) []outboxRow {
	t.Helper()
	rows, err := db.Query(`SELECT id, recipients, subject, body_html, body_text, sent_at FROM mail_outbox ORDER BY created_at, id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []outboxRow
	for rows.Next() {
		var r outboxRow
		if err := rows.Scan(&r.id, &r.recipients, &r.subject, &r.html, &r.text, &r.sent); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

var anyToken = regexp.MustCompile(`[0-9a-f]{64}`)

// Whoever reads the database or a backup of it cannot join an organization with an invitation
// link from the outbox: bodies are sealed while queued and dropped once sent, while the SMTP
// server gets the full link. A mail queued in clear before the upgrade is still sent.
func TestInvitationLinksAreNotKeptInTheOutbox(t *testing.T) {
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			srv := testenv.StartSMTP(t, testenv.SMTPOptions{})
			dataDir := t.TempDir()
			o := harnessOpts{dialect: dialect, env: map[string]string{"VERDICT_DATA_DIR": dataDir, "VERDICT_RUNNER": "none",
				"SMTP_HOST": "127.0.0.1", "SMTP_PORT": fmt.Sprint(srv.Port), "SMTP_TLS": "none", "SMTP_FROM": "no-reply@verdict.test"}}
			driver, dsn := "sqlite", filepath.Join(dataDir, "verdict.db")
			if dialect == "postgres" {
				o.databaseURL = testenv.PostgresDB(t)
				driver, dsn = "pgx", o.databaseURL
			}
			h := newHarness(t, o)
			db, err := sql.Open(driver, dsn)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })

			admin := h.signup("ada@example.com", "Sealed Co")
			expect(t, h.do("POST", "/api/invitations", bearer(admin.token), map[string]any{"email": "bob@example.com", "role": "admin"}), 201, "")
			// A mail queued by the previous version, bodies in clear.
			legacyLink := "http://verdict.test/accept-invitation?token=" + strings.Repeat("ab", 32)
			if _, err := db.Exec(fmt.Sprintf(`INSERT INTO mail_outbox (id, recipients, subject, body_html, body_text, next_attempt, created_at)
				VALUES ('legacy', '["old@example.com"]', 'Old invitation', '<a href="%[1]s">Accept</a>', 'Accept: %[1]s', %[2]d, %[2]d)`,
				legacyLink, h.clock.Now().UnixMilli())); err != nil {
				t.Fatal(err)
			}

			// Queued: sealed, no link or token anywhere in the table but in the legacy row.
			rows := readOutbox(t, db)
			if len(rows) != 3 {
				t.Fatalf("outbox holds %d mails, want welcome, invitation and legacy: %v", len(rows), rows)
			}
			for _, r := range rows {
				if r.id == "legacy" {
					continue
				}
				if !strings.HasPrefix(r.html, "v1:") || !strings.HasPrefix(r.text, "v1:") {
					t.Errorf("queued mail %q is not sealed: %s", r.subject, r)
				}
				if s := r.String(); strings.Contains(s, "accept-invitation") || strings.Contains(s, "token=") || anyToken.MatchString(s) {
					t.Errorf("queued mail shows a link or token: %s", s)
				}
			}

			// Send: the app's mail worker delivers all three.
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { h.app.Run(ctx); close(done) }()
			t.Cleanup(func() { cancel(); <-done })
			var invitation testenv.Mail
			var legacy bool
			deadline := time.Now().Add(15 * time.Second)
			for invitation.Subject == "" || !legacy {
				for _, m := range srv.Messages() {
					p := testenv.ParseMail(t, m.Data)
					switch {
					case slices.Equal(m.To, []string{"bob@example.com"}):
						invitation = p
					case slices.Equal(m.To, []string{"old@example.com"}):
						legacy = strings.Contains(p.Parts["text/plain"], legacyLink)
					}
				}
				if time.Now().After(deadline) {
					t.Fatalf("after 15 s: invitation %q, legacy mail delivered %v", invitation.Subject, legacy)
				}
				time.Sleep(20 * time.Millisecond)
			}
			m := tokenInMail.FindStringSubmatch(invitation.Parts["text/plain"])
			if m == nil {
				t.Fatalf("the delivered invitation has no link: %s", invitation.Parts["text/plain"])
			}
			token := m[1]
			link := "http://verdict.test/accept-invitation?token=" + token
			if !strings.Contains(invitation.Parts["text/plain"], link) || !strings.Contains(invitation.Parts["text/html"], link) {
				t.Fatalf("the delivered invitation lacks the full link in a part")
			}

			// Sent: every row keeps its envelope, no body.
			for {
				rows, unsent := readOutbox(t, db), 0
				for _, r := range rows {
					if !r.sent.Valid {
						unsent++
					}
				}
				if unsent == 0 {
					for _, r := range rows {
						if r.html != "" || r.text != "" || strings.Contains(r.String(), token) {
							t.Errorf("sent mail %q kept its body: %s", r.subject, r)
						}
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%d mails not marked sent after 15 s", unsent)
				}
				time.Sleep(20 * time.Millisecond)
			}

			// The link that went out works.
			expect(t, h.do("POST", "/api/auth/signup", anon, map[string]any{"email": "bob@example.com", "password": password,
				"name": "Bob", "inviteToken": token}), 201, "")
		})
	}
}
