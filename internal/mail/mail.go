// Package mail sends Verdict's transactional e-mail: typed templates with an HTML and a
// plain-text part, a Sender (SMTP, or the console when no mail provider is configured) and a
// durable outbox worker, so a mail is enqueued in the transaction of the change that causes it
// and a sending failure never fails that request.
package mail

import (
	"context"
	"errors"
	"fmt"
	"io"
	netmail "net/mail"
	"strings"
)

// Message is one e-mail with both parts; every Verdict mail has an HTML and a text version.
type Message struct {
	To      []string
	Subject string
	HTML    string
	Text    string
}

// Validate rejects a message that could never be delivered, so it fails at enqueue time in
// the caller's transaction instead of being retried for hours by the worker.
func (m Message) Validate() error {
	if len(m.To) == 0 {
		return errors.New("mail: message has no recipient")
	}
	for _, to := range m.To {
		if _, err := netmail.ParseAddress(to); err != nil {
			return fmt.Errorf("mail: invalid recipient %q: %w", to, err)
		}
	}
	if strings.TrimSpace(m.Subject) == "" {
		return errors.New("mail: message has no subject")
	}
	if strings.ContainsAny(m.Subject, "\r\n") {
		return errors.New("mail: subject contains a line break")
	}
	if m.HTML == "" || m.Text == "" {
		return errors.New("mail: message needs both an HTML and a text part")
	}
	return nil
}

// Sender delivers one message now. Implementations are safe for concurrent use.
type Sender interface {
	Send(ctx context.Context, m Message) error
}

// NewSender returns the SMTP sender when an SMTP host is configured and otherwise the console
// sender writing to console: with no mail provider, e-mail goes to the console only.
func NewSender(cfg SMTPConfig, console io.Writer) (Sender, error) {
	if cfg.Host == "" {
		return NewConsoleSender(console), nil
	}
	return NewSMTPSender(cfg)
}
