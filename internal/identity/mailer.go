package identity

import (
	"context"

	"verdict/internal/domain"
	"verdict/internal/mail"
	"verdict/internal/store"
)

// OutboxMailer is the Mailer that renders the identity e-mails and puts them in the outbox.
type OutboxMailer struct {
	Renderer *mail.Renderer
	Worker   *mail.Worker // woken after a commit; nil in tests that read the outbox directly
	Clock    domain.Clock
}

// Invitation enqueues the invitation e-mail to the invitee.
func (m *OutboxMailer) Invitation(ctx context.Context, outbox store.OutboxRepo, inv *domain.Invitation, org *domain.Organization, token string) error {
	c, err := m.Renderer.Invitation(mail.InvitationData{OrganizationName: org.Name, InviterName: inv.InvitedByName,
		Role: inv.Role, Token: token, ExpiresAt: inv.ExpiresAt})
	if err != nil {
		return err
	}
	return mail.Enqueue(ctx, outbox, c.Message(inv.Email), m.Clock())
}

// Welcome enqueues the welcome e-mail to a new member.
func (m *OutboxMailer) Welcome(ctx context.Context, outbox store.OutboxRepo, u *domain.User, org *domain.Organization) error {
	c, err := m.Renderer.Welcome(mail.WelcomeData{UserName: u.Name, OrganizationName: org.Name})
	if err != nil {
		return err
	}
	return mail.Enqueue(ctx, outbox, c.Message(u.Email), m.Clock())
}

// Sent wakes the outbox worker.
func (m *OutboxMailer) Sent() {
	if m.Worker != nil {
		m.Worker.Notify()
	}
}
