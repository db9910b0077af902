//go:build integration

package app_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"verdict/internal/testenv"
)

// TestTransactionalEmailsOverSMTP sends all six transactional e-mails through the outbox and
// the mail sender to a real SMTP server, and checks recipients, subject and both parts.
func TestTransactionalEmailsOverSMTP(t *testing.T) {
	srv := testenv.StartSMTP(t, testenv.SMTPOptions{})
	env := billingEnv(t, nil)
	for k, v := range map[string]string{"SMTP_HOST": "127.0.0.1", "SMTP_PORT": fmt.Sprint(srv.Port), "SMTP_TLS": "none",
		"SMTP_FROM": "Verdict <no-reply@verdict.test>", "VERDICT_RUNNER": "none"} {
		env[k] = v
	}
	h := newHarness(t, harnessOpts{dialect: "postgres", workers: true, env: env})

	// received waits for a message to exactly the envelope recipients to whose subject
	// contains s, and returns it parsed.
	received := func(s string, to []string) testenv.Mail {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for {
			for _, m := range srv.Messages() {
				p := testenv.ParseMail(t, m.Data)
				if strings.Contains(p.Subject, s) && slices.Equal(slices.Sorted(slices.Values(m.To)), to) {
					return p
				}
			}
			if time.Now().After(deadline) {
				var got []string
				for _, m := range srv.Messages() {
					got = append(got, fmt.Sprintf("%v: %s", m.To, testenv.ParseMail(t, m.Data).Subject))
				}
				t.Fatalf("no mail about %q to %v arrived; got %q", s, to, got)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	check := func(subject string, to []string, contains ...string) testenv.Mail {
		t.Helper()
		p := received(subject, to)
		if !strings.Contains(p.From, "<no-reply@verdict.test>") {
			t.Errorf("%q: From %q", p.Subject, p.From)
		}
		for _, r := range to {
			if !strings.Contains(p.To, "<"+r+">") {
				t.Errorf("%q: To header %q lacks %s", p.Subject, p.To, r)
			}
		}
		text, html := p.Parts["text/plain"], p.Parts["text/html"]
		if text == "" || html == "" {
			t.Fatalf("%q lacks a part: %v", p.Subject, p.Order)
		}
		for _, c := range contains {
			if !strings.Contains(text, c) || !strings.Contains(html, strings.ReplaceAll(c, "&", "&amp;")) {
				t.Errorf("%q: both parts should contain %q\ntext: %s", p.Subject, c, text)
			}
		}
		if strings.Contains(strings.ToLower(text+html), "unsubscribe") {
			t.Errorf("%q has an unsubscribe link", p.Subject)
		}
		return p
	}

	admin := h.signup("ada@example.com", "Mail Co")
	check("Welcome to Mail Co", []string{"ada@example.com"}, "Mail Co", "http://verdict.test/")

	// Invitation → signup with its token → welcome; the second member is an admin.
	expect(t, h.do("POST", "/api/invitations", bearer(admin.token), map[string]any{"email": "bob@example.com", "role": "admin"}), 201, "")
	inv := check("invited you to join Mail Co", []string{"bob@example.com"}, "Mail Co", "http://verdict.test/accept-invitation?token=")
	token := tokenInMail.FindStringSubmatch(inv.Parts["text/plain"])[1]
	expect(t, h.do("POST", "/api/auth/signup", anon, map[string]any{"email": "bob@example.com", "password": password,
		"name": "Bob", "inviteToken": token}), 201, "")
	check("Welcome to Mail Co", []string{"bob@example.com"})
	admins := []string{"ada@example.com", "bob@example.com"}

	// Two of three users: the 50 % users alert goes to both admins.
	check("Mail Co has used 50% of its users limit", admins, "Mail Co", "2 of 3", "http://verdict.test/settings/billing")

	h.linkCustomer(admin.orgID, "cus_mail")
	now := h.clock.Now()
	h.deliver(event("evt_paid", "invoice.payment_succeeded", now, invoiceObject("in_1", "cus_mail", 9900, now)))
	check("Payment of 99.00 USD received for Mail Co", admins, "Mail Co", "99.00 USD", "http://verdict.test/settings/billing")
	h.deliver(event("evt_failed", "invoice.payment_failed", now.Add(time.Minute), invoiceObject("in_2", "cus_mail", 9900, time.Time{})))
	check("payment of 99.00 USD for Mail Co failed", admins, "Mail Co", "99.00 USD", "http://verdict.test/settings/billing")
	h.deliver(event("evt_sub", "customer.subscription.created", now.Add(2*time.Minute), subscriptionObject("sub_1", "cus_mail", priceTeam, now)))
	h.deliver(event("evt_del", "customer.subscription.deleted", now.Add(3*time.Minute), subscriptionObject("sub_1", "cus_mail", priceTeam, now)))
	check("Your Verdict subscription for Mail Co was canceled", admins, "Mail Co", "http://verdict.test/settings/billing")
}

// A run whose reports would pass the storage limit keeps its status, its reports are dropped
// with a note, and the admins get the critical (100 %) storage alert.
func TestStorageLimitDropRaisesCriticalAlert(t *testing.T) {
	testenv.DockerHost(t)
	srv := testenv.StartSMTP(t, testenv.SMTPOptions{})
	h := newHarness(t, harnessOpts{dialect: "sqlite", realClock: true, workers: true, lease: 2 * time.Second,
		env: map[string]string{"SMTP_HOST": "127.0.0.1", "SMTP_PORT": fmt.Sprint(srv.Port), "SMTP_TLS": "none"}})
	admin := h.signup("ada@example.com", "Full Co")
	limit := h.org(admin.orgID).Limits().MaxStorageBytes
	if err := h.app.Store.Organizations().AddStorageUsed(t.Context(), admin.orgID, limit-100); err != nil {
		t.Fatal(err)
	}
	task := h.queue(bearer(admin.token), map[string]any{"image": passImage})
	r := h.waitFor(bearer(admin.token), task, 60*time.Second, final)
	if r.str("execution", "status") != "PASSED" || !strings.Contains(fmt.Sprint(r.get("execution", "notes")), "reports were dropped") ||
		r.get("execution", "reportBytes") != float64(0) {
		t.Fatalf("run: %s", r.raw)
	}
	if used := h.org(admin.orgID).StorageUsedBytes; used != limit-100 {
		t.Fatalf("storage used %d, want %d", used, limit-100)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		for _, m := range srv.Messages() {
			p := testenv.ParseMail(t, m.Data)
			if p.Subject == "Full Co has used 100% of its storage limit" {
				if !strings.Contains(p.Parts["text/plain"], "The reports of run "+task+" were dropped") ||
					!slices.Equal(m.To, []string{"ada@example.com"}) {
					t.Fatalf("alert to %v: %s", m.To, p.Parts["text/plain"])
				}
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no storage alert; %d messages", len(srv.Messages()))
		}
		time.Sleep(50 * time.Millisecond)
	}
}
