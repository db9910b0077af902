package app

import (
	"context"

	"verdict/internal/crypto/secretbox"
	"verdict/internal/domain"
	"verdict/internal/mail"
	"verdict/internal/notify"
)

// notifications builds the notifications' service, a post-run step (registered in runPlane's
// steps) whose deliveries the mail worker makes, each receiver in a lane of its own and retried
// by the notifications' policy. The receivers' URLs and secrets are sealed with a key of their
// own, derived like the others. The report link is bound late: the services step sets
// w.reportURL, and the service asks for it only when a run ends, after New has returned.
func (w *wiring) notifications() (*notify.Service, error) {
	cfg, a := w.cfg, w.a
	box, err := secretbox.New(deriveKey(string(cfg.Secrets.EncryptionKey), "verdict notification receivers"))
	if err != nil {
		return nil, err
	}
	retry := notify.Retry
	retry.Base = cfg.Integrations.NotifyRetryBase
	svc := notify.New(notify.Deps{Store: w.st, Box: box, Egress: w.egress, PublicURL: cfg.Server.PublicURL,
		ReportURL: func(ctx context.Context, e *domain.Execution) string { return w.reportURL(ctx, e) },
		Wake:      a.mailer.Notify, Retry: &retry, Clock: w.clock, Log: w.log})
	a.mailer.Policies = map[string]mail.RetryPolicy{notify.OutboxKind: retry}
	a.mailer.Lanes = map[string]func(string) string{notify.OutboxKind: notify.Lane}
	w.notify = svc
	return svc, nil
}
