package app

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"strings"

	"verdict/internal/api"
	"verdict/internal/custody"
	"verdict/internal/domain"
	"verdict/internal/identity"
	"verdict/internal/outage"
	"verdict/internal/peerhttp"
	"verdict/internal/web"
)

// frontDoors builds what requests come in through: the dashboard's pages and the API, which
// mounts the pages, the Socket.IO hub and the runner routes.
func (w *wiring) frontDoors(context.Context) error {
	cfg, o, clock, log, a := w.cfg, w.o, w.clock, w.log, w.a
	ids, execs, bill, analyses, trackers, cases, plans := w.ids, w.execs, w.bill, w.analyses, w.trackers, w.cases, w.plans
	signer, reportURL, limiter, jwt, hub, followers := w.signer, w.reportURL, w.limiter, w.jwt, w.hub, w.followers
	limits := w.limits
	// The dashboard's CSRF tokens are signed with a key derived from the JWT secret, like report links.
	// A run page links its report as GET /api/executions/{taskId}/report-token does: the main
	// report with a short-lived token for the signed-in user.
	reportLink := func(ctx context.Context, p *identity.Principal, e *domain.Execution) string {
		target := reportURL(ctx, e)
		if target == "" {
			return ""
		}
		return target + "?token=" + url.QueryEscape(signer.Sign(p.OrgID, e.ID, p.UserID, clock()))
	}
	// A test's attachment opens through a report link made at the click, for the member who
	// clicked, on the origin that serves reports (the trace viewer beside it).
	views := api.NewViews(cfg.Server.PublicURL, cfg.Reports.URL)
	reportFile := func(p *identity.Principal, e *domain.Execution, relPath string) string {
		return views.ReportFileURL(e.OrganizationID, e.TaskID, signer.SignLink(p.OrgID, e.ID, p.UserID, clock()), relPath)
	}
	self, _ := os.Executable() // the CLI a CI job downloads; "" when unknown
	// The organization's export and erasure, for the API and the dashboard.
	keeper := custody.New(custody.Deps{Store: w.st, Grace: cfg.Retention.EraseGrace, Clock: clock, Log: log})
	// One reporter for the API and the dashboard: one count, one log line per outage.
	away := &outage.Reporter{Log: log, Count: a.metrics.Unavailable, Clock: clock}
	pages := web.New(web.Deps{Outage: away, Identity: ids, Executions: execs, Billing: bill, Analyst: analyses, JWT: jwt, Executable: self,
		CSRFKey: deriveKey(cfg.Secrets.JWTSecret, "verdict dashboard csrf"), SecureCookies: strings.HasPrefix(cfg.Server.PublicURL, "https://"),
		ReportLink: reportLink, ReportFileLink: reportFile, SocketTickets: w.tickets, Limit: api.FormLimit(limiter, limits, cfg.Server.TrustedProxies, log), Log: log, Clock: clock,
		TestCases: cases, Planner: plans, Trackers: trackers, Histories: a.histories, Gates: a.histories, Schedules: a.schedules,
		Notifications: w.notify,
		SourceControl: w.scm, SSO: w.sso, Custody: keeper})
	a.API = api.New(api.Deps{
		Identity:       ids,
		Executions:     execs,
		Billing:        bill,
		TestCases:      cases,
		Histories:      a.histories,
		Analyst:        analyses,
		Trackers:       trackers,
		Schedules:      a.schedules,
		Gates:          a.histories,
		SourceControl:  w.scm,
		Notifications:  w.notify,
		SSO:            w.sso,
		Custody:        keeper,
		Follow:         followers,
		Planner:        plans,
		Reports:        w.reports,
		Signer:         signer,
		SecureCookies:  strings.HasPrefix(cfg.Server.PublicURL, "https://"),
		PublicURL:      cfg.Server.PublicURL,
		ReportsURL:     cfg.Reports.URL,
		Mounts:         map[string]http.Handler{"/socket.io/": hub.Handler(), peerhttp.Prefix: a.remote},
		Runners:        runnerList{srv: a.remote, runs: execs},
		Pages:          pages,
		JWT:            jwt,
		Limiter:        limiter,
		RateLimits:     limits,
		Proxies:        cfg.Server.TrustedProxies,
		Ready:          a.readiness(),
		Metrics:        a.metrics,
		MetricsHandler: a.metrics.Handler(cfg.Server.MetricsToken),
		Outage:         away,
		BodyTimeout:    cfg.Limits.BodyTimeout,
		Log:            log,
		Clock:          clock,
		Version:        o.Version,
	})
	return nil
}
