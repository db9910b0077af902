package app

import (
	"context"
	"fmt"

	"verdict/internal/api"
	"verdict/internal/auth"
	"verdict/internal/billing"
	"verdict/internal/crypto/secretbox"
	"verdict/internal/domain"
	"verdict/internal/identity"
	"verdict/internal/integrations"
	"verdict/internal/mail"
	"verdict/internal/planning"
	"verdict/internal/report"
	"verdict/internal/sso"
	"verdict/internal/testcases"
)

// mail builds the mail sender (SMTP, or the console), the templates and the outbox's worker.
func (w *wiring) mail(context.Context) error {
	cfg, st, clock, log, a := w.cfg, w.st, w.clock, w.log, w.a
	sender, err := mail.NewSender(mail.SMTPConfig{Host: cfg.Mail.SMTPHost, Port: cfg.Mail.SMTPPort, Username: cfg.Mail.SMTPUsername,
		Password: cfg.Mail.SMTPPassword, From: cfg.Mail.SMTPFrom, TLS: cfg.Mail.SMTPTLS}, w.o.MailConsole)
	if err != nil {
		return fmt.Errorf("mail: %w", err)
	}
	renderer, err := mail.NewRenderer(cfg.Server.PublicURL)
	if err != nil {
		return fmt.Errorf("mail: %w", err)
	}
	w.renderer = renderer
	a.mailer = &mail.Worker{Repo: st.Outbox(), Sender: sender, Clock: clock, Logger: log}
	return nil
}

// billing builds the usage alerts and the billing service over the payment provider.
func (w *wiring) billing(context.Context) error {
	cfg, st, clock, log, a, renderer := w.cfg, w.st, w.clock, w.log, w.a, w.renderer
	alerts := billing.NewAlerts(billing.AlertsDeps{Renderer: renderer, Notify: a.mailer.Notify, Clock: clock, Log: log})
	var provider billing.Provider // none without a secret key: the billing routes answer 503
	if cfg.Billing.StripeSecretKey != "" {
		provider = billing.NewStripe(cfg.Billing.StripeSecretKey, cfg.Billing.StripeAPIBase)
	}
	w.alerts = alerts
	w.bill = billing.New(billing.Deps{Store: st, Provider: provider, WebhookSecret: cfg.Billing.StripeWebhookSecret,
		Prices:    map[domain.Plan]string{domain.PlanTeam: cfg.Billing.StripePriceTeam, domain.PlanEnterprise: cfg.Billing.StripePriceEnterprise},
		PublicURL: cfg.Server.PublicURL, Renderer: renderer, Notify: a.mailer.Notify, Alerts: alerts, Clock: clock, Log: log})
	return nil
}

// services builds the request-facing services the run plane does not need first: the trackers,
// identity (then reads the revoked session tokens and follows them), test cases and the planner.
func (w *wiring) services(ctx context.Context) error {
	cfg, st, clock, log, a := w.cfg, w.st, w.clock, w.log, w.a
	reports, events, hub, followers := w.reports, w.events, w.hub, w.followers
	// Organizations' tracker keys are sealed with a key of their own, derived like the others.
	trackerBox, err := secretbox.New(deriveKey(string(cfg.Secrets.EncryptionKey), "verdict tracker keys"))
	if err != nil {
		return err
	}
	// A ticket links the run's report as the execution view does (recording which folders hold
	// an index.html first for runs stored before that was recorded).
	reportURL := func(ctx context.Context, e *domain.Execution) string {
		if e.ReportIndexes == nil && len(e.ReportDirs) > 0 {
			e.ReportIndexes = report.IndexedDirs(ctx, reports, e.OrganizationID, e.TaskID, e.ReportDirs)
		}
		return events.views.ReportURL(e)
	}
	w.reportURL = reportURL
	w.trackers = integrations.New(integrations.Deps{Store: st, Box: trackerBox, Egress: w.egress, Endpoints: map[string]integrations.Endpoint{
		"linear": {URL: cfg.Integrations.LinearAPIURL}, "monday": {URL: cfg.Integrations.MondayAPIURL, Version: cfg.Integrations.MondayAPIVersion}},
		ReportURL: reportURL, Events: events, Clock: clock, Log: log})

	// A member's or a key's sockets and SSE streams end on every replica (through Redis); a
	// revoked session's on this replica, as each replica learns of it from the database.
	endUser := func(userID string) { hub.EndUserSessions(userID); followers.End(api.UserStreams(userID)) }
	w.endUser = endUser
	endKey := func(keyID string) { hub.EndKeySessions(keyID); followers.End(api.KeyStreams(keyID)) }
	endToken := func(tokenID string) { hub.EndTokenSessions(tokenID); followers.EndLocal(api.SessionStreams(tokenID)) }
	ids := identity.New(identity.Deps{
		Store:       st,
		Tokens:      w.jwt,
		Lockout:     auth.NewLockout(w.counters, clock),
		Mailer:      &identity.OutboxMailer{Renderer: w.renderer, Worker: a.mailer, Clock: clock},
		Runs:        w.execs,
		Alerts:      w.alerts,
		EndSessions: endUser, EndKeySessions: endKey, EndTokenSessions: endToken,
		SocketTickets: w.socketTicket,
		DefaultPlan:   domain.Plan(cfg.Billing.DefaultPlan),
		RetentionMax:  w.retentionMax(),
		BreakGlass:    cfg.Secrets.SSOBreakGlass,
		Clock:         clock,
		Log:           log,
	})
	w.ids = ids

	// Organizations' OpenID Connect client secrets and the browsers' sign-in flows are sealed
	// with a key of their own, derived like the others.
	ssoBox, err := secretbox.New(deriveKey(string(cfg.Secrets.EncryptionKey), "verdict single sign-on"))
	if err != nil {
		return err
	}
	w.sso = sso.New(sso.Deps{Store: st, Box: ssoBox, Egress: w.egress, Identity: ids, PublicURL: cfg.Server.PublicURL,
		Clock: clock, Log: log})

	// Revoked session tokens: read them all before serving, then what any replica adds, about
	// every second (identity.RevocationInterval).
	if err := ids.SyncRevocations(ctx); err != nil {
		return fmt.Errorf("revoked session tokens: %w", err)
	}
	revCtx, stopRevocations := context.WithCancel(context.Background())
	revDone := make(chan struct{})
	go func() { defer close(revDone); ids.FollowRevocations(revCtx) }()
	a.closers = append(a.closers, func() { stopRevocations(); <-revDone })

	w.cases = testcases.New(testcases.Deps{Store: st, Clock: clock, Log: log})
	w.plans = planning.New(planning.Deps{Store: st, Models: w.modelClient, Choose: w.analyses, Clock: clock, Log: log})
	return nil
}
