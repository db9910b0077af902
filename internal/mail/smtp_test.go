package mail

import (
	"bytes"
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"verdict/internal/testenv"
)

func testInvitation(t *testing.T) (Content, string) {
	t.Helper()
	r, err := NewRenderer("http://127.0.0.1:8080")
	if err != nil {
		t.Fatal(err)
	}
	token := strings.Repeat("0123456789abcdef", 4)
	c, err := r.Invitation(InvitationData{OrganizationName: "Acme Ünited", InviterName: "Ada Admin",
		Role: "developer", Token: token, ExpiresAt: time.Date(2026, 5, 8, 12, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	return c, "http://127.0.0.1:8080/accept-invitation?token=" + token
}

func TestSMTPSenderDeliversBothPartsWithAuth(t *testing.T) {
	srv := testenv.StartSMTP(t, testenv.SMTPOptions{User: "mailer", Pass: "s3cret"})
	s, err := NewSMTPSender(SMTPConfig{Host: "127.0.0.1", Port: srv.Port, Username: "mailer", Password: "s3cret",
		From: "Verdict <noreply@verdict.test>", TLS: TLSNone, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c, link := testInvitation(t)
	to := []string{"invitee@example.com", "second@example.com"}
	if err := s.Send(context.Background(), c.Message(to...)); err != nil {
		t.Fatalf("send: %v", err)
	}
	msgs := srv.Messages()
	if len(msgs) != 1 {
		t.Fatalf("server got %d messages, want 1", len(msgs))
	}
	got := msgs[0]
	if got.From != "noreply@verdict.test" {
		t.Errorf("MAIL FROM = %q", got.From)
	}
	if !slices.Equal(got.To, to) {
		t.Errorf("RCPT TO = %v, want %v", got.To, to)
	}
	p := testenv.ParseMail(t, got.Data)
	if p.Subject != "Ada Admin invited you to join Acme Ünited on Verdict" {
		t.Errorf("Subject = %q", p.Subject)
	}
	if !strings.Contains(p.From, "noreply@verdict.test") || !strings.Contains(p.To, "invitee@example.com") || !strings.Contains(p.To, "second@example.com") {
		t.Errorf("From = %q, To = %q", p.From, p.To)
	}
	if !strings.HasSuffix(p.MessageID, "@verdict.test>") || p.AutoSubmitted != "auto-generated" {
		t.Errorf("Message-ID = %q, Auto-Submitted = %q", p.MessageID, p.AutoSubmitted)
	}
	// The preferred (HTML) alternative comes last, as RFC 2046 asks.
	if !slices.Equal(p.Order, []string{"text/plain", "text/html"}) {
		t.Fatalf("parts = %v, want text/plain then text/html", p.Order)
	}
	if p.Parts["text/plain"] != strings.ReplaceAll(c.Text, "\r\n", "\n") {
		t.Errorf("text part differs from the rendered text:\n%s", p.Parts["text/plain"])
	}
	if !strings.Contains(p.Parts["text/plain"], link) || !strings.Contains(p.Parts["text/plain"], "Acme Ünited") {
		t.Errorf("text part lacks the link or organization:\n%s", p.Parts["text/plain"])
	}
	if !strings.Contains(p.Parts["text/html"], `href="`+link+`"`) {
		t.Errorf("html part lacks the link:\n%s", p.Parts["text/html"])
	}
}

func TestSMTPSenderWrongPasswordFails(t *testing.T) {
	srv := testenv.StartSMTP(t, testenv.SMTPOptions{User: "mailer", Pass: "s3cret"})
	s, err := NewSMTPSender(SMTPConfig{Host: "127.0.0.1", Port: srv.Port, Username: "mailer", Password: "wrong",
		From: "noreply@verdict.test", TLS: TLSNone, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := testInvitation(t)
	err = s.Send(context.Background(), c.Message("invitee@example.com"))
	if err == nil {
		t.Fatal("send with a wrong password succeeded")
	}
	if strings.Contains(err.Error(), "wrong") {
		t.Errorf("error reveals the password: %v", err)
	}
	if n := len(srv.Messages()); n != 0 {
		t.Errorf("server got %d messages", n)
	}
}

func TestSMTPSenderRejectionIsAnError(t *testing.T) {
	srv := testenv.StartSMTP(t, testenv.SMTPOptions{RejectN: 1})
	s, err := NewSMTPSender(SMTPConfig{Host: "127.0.0.1", Port: srv.Port, From: "noreply@verdict.test", TLS: TLSNone})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := testInvitation(t)
	err = s.Send(context.Background(), c.Message("invitee@example.com"))
	if err == nil || !strings.Contains(err.Error(), "550") {
		t.Fatalf("send to a rejecting server: err = %v, want the 550", err)
	}
}

func TestSMTPSenderStartTLS(t *testing.T) {
	serverTLS, clientTLS := testenv.SelfSignedTLS(t)
	srv := testenv.StartSMTP(t, testenv.SMTPOptions{User: "mailer", Pass: "s3cret", TLS: serverTLS})
	s, err := NewSMTPSender(SMTPConfig{Host: "127.0.0.1", Port: srv.Port, Username: "mailer", Password: "s3cret",
		From: "noreply@verdict.test", TLS: TLSStartTLS, TLSConfig: clientTLS, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := testInvitation(t)
	if err := s.Send(context.Background(), c.Message("invitee@example.com")); err != nil {
		t.Fatalf("send: %v", err)
	}
	msgs := srv.Messages()
	if len(msgs) != 1 || !msgs[0].TLS {
		t.Fatalf("want one message received over TLS, got %+v", msgs)
	}
}

func TestSMTPSenderImplicitTLS(t *testing.T) {
	serverTLS, clientTLS := testenv.SelfSignedTLS(t)
	srv := testenv.StartSMTP(t, testenv.SMTPOptions{User: "mailer", Pass: "s3cret", TLS: serverTLS, Implicit: true})
	s, err := NewSMTPSender(SMTPConfig{Host: "127.0.0.1", Port: srv.Port, Username: "mailer", Password: "s3cret",
		From: "noreply@verdict.test", TLS: TLSImplicit, TLSConfig: clientTLS, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := testInvitation(t)
	if err := s.Send(context.Background(), c.Message("invitee@example.com")); err != nil {
		t.Fatalf("send: %v", err)
	}
	msgs := srv.Messages()
	if len(msgs) != 1 || !msgs[0].TLS {
		t.Fatalf("want one message received over TLS, got %+v", msgs)
	}
}

// With starttls configured, a server that does not offer STARTTLS must not get the mail (or
// the password) in clear text.
func TestSMTPSenderStartTLSIsNotDowngraded(t *testing.T) {
	srv := testenv.StartSMTP(t, testenv.SMTPOptions{})
	s, err := NewSMTPSender(SMTPConfig{Host: "127.0.0.1", Port: srv.Port, From: "noreply@verdict.test", TLS: TLSStartTLS, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := testInvitation(t)
	if err := s.Send(context.Background(), c.Message("invitee@example.com")); err == nil {
		t.Fatal("sent without STARTTLS")
	}
	if n := len(srv.Messages()); n != 0 {
		t.Errorf("server got %d messages", n)
	}
}

// silentServer accepts connections and never greets, like a stalled relay.
func silentServer(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	return l.Addr().(*net.TCPAddr).Port
}

func TestSMTPSenderTimesOutOnSilentServer(t *testing.T) {
	t.Parallel() // it waits out real timers; alone it would hold a test slot
	s, err := NewSMTPSender(SMTPConfig{Host: "127.0.0.1", Port: silentServer(t),
		From: "noreply@verdict.test", TLS: TLSNone, Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := testInvitation(t)
	start := time.Now()
	if err := s.Send(context.Background(), c.Message("invitee@example.com")); err == nil {
		t.Fatal("send to a silent server succeeded")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("send took %v despite a 300ms timeout", d)
	}
}

func TestSMTPSenderStopsWhenContextEnds(t *testing.T) {
	s, err := NewSMTPSender(SMTPConfig{Host: "127.0.0.1", Port: silentServer(t),
		From: "noreply@verdict.test", TLS: TLSNone, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := testInvitation(t)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = s.Send(ctx, c.Message("invitee@example.com"))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the context's deadline", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("send took %v after its context ended", d)
	}
}

func TestNewSMTPSenderValidatesConfig(t *testing.T) {
	ok := SMTPConfig{Host: "smtp.example.com", Port: 587, From: "Verdict <noreply@example.com>", TLS: TLSStartTLS}
	if _, err := NewSMTPSender(ok); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	for name, mod := range map[string]func(*SMTPConfig){
		"no host":  func(c *SMTPConfig) { c.Host = "" },
		"bad port": func(c *SMTPConfig) { c.Port = 0 },
		"bad from": func(c *SMTPConfig) { c.From = "not an address" },
		"bad tls":  func(c *SMTPConfig) { c.TLS = "ssl3" },
	} {
		c := ok
		mod(&c)
		if _, err := NewSMTPSender(c); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestNewSenderFallsBackToConsole(t *testing.T) {
	var buf bytes.Buffer
	s, err := NewSender(SMTPConfig{}, &buf)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.(*ConsoleSender); !ok {
		t.Fatalf("no SMTP host: got %T, want *ConsoleSender", s)
	}
	s, err = NewSender(SMTPConfig{Host: "smtp.example.com", Port: 465, From: "noreply@example.com", TLS: TLSImplicit}, &buf)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.(*SMTPSender); !ok {
		t.Fatalf("SMTP host: got %T, want *SMTPSender", s)
	}
}

func TestConsoleSenderWritesBothParts(t *testing.T) {
	var buf bytes.Buffer
	s := NewConsoleSender(&buf)
	c, link := testInvitation(t)
	if err := s.Send(context.Background(), c.Message("invitee@example.com")); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"To: invitee@example.com", "Subject: " + c.Subject, "text/plain", "text/html",
		strings.TrimSpace(c.Text), "<!DOCTYPE html>", link} {
		if !strings.Contains(out, want) {
			t.Errorf("console output lacks %q:\n%s", want, out)
		}
	}
	if err := s.Send(context.Background(), Message{Subject: "x", HTML: "x", Text: "x"}); err == nil {
		t.Error("a message without recipients was accepted")
	}
}
