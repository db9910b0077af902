// Package web is Verdict's dashboard: server-rendered pages (html/template) on the services the
// API calls, with a browser session in a cookie. Templates, the style sheet and the vendored
// htmx are embedded in the binary.
//
// Security, page by page: every answer carries a strict Content-Security-Policy (no inline
// script or style anywhere, so the templates hold none); the session is the API's JWT in an
// HttpOnly, SameSite=Lax cookie, authenticated on every request exactly like a bearer token
// (the user is re-read: a suspended or deleted user is signed out at once); every
// state-changing request carries a CSRF token bound to the session (or, before signing in, to
// a random cookie of its own).
package web

import (
	"context"
	"embed"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"

	"verdict/internal/domain"
	"verdict/internal/identity"
	"verdict/internal/outage"
	"verdict/internal/ports"
)

//go:embed static
var staticFS embed.FS

// ContentSecurityPolicy is sent with every page and asset: scripts, styles, images and
// connections come from Verdict itself, nothing inline, no framing.
const ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'"

// Cookie names: the session (the API's JWT) and the pre-session CSRF seed of the sign-in forms.
const (
	SessionCookie = "verdict_session"
	preCookie     = "verdict_presession"
	csrfField     = "csrf"
	csrfHeader    = "X-CSRF-Token"
)

// The services the pages call are declared once for both front doors, in internal/ports. As
// with the API, every method a signed-in page reaches takes the principal, and the service
// decides what it may do.

// Deps are what the pages call and their settings. Identity, Executions, JWT and CSRFKey are
// required; New fills in Log and Clock.
type Deps struct {
	Identity   ports.Identity
	Executions ports.Executions
	JWT        ports.TokenVerifier
	// Billing serves the billing page's actions; nil: plan and usage only.
	Billing ports.Billing
	// Analyst serves the model settings on /settings; nil: not shown.
	Analyst ports.Analyst
	// TestCases serves /test-cases and the planner's choice of cases; nil: not available.
	TestCases ports.TestCases
	// Histories serve /tests and the run page's links to its tests' histories; nil: not
	// available.
	Histories ports.Histories
	// Planner serves /planner; nil: not available.
	Planner ports.Planner
	// Trackers serves /settings/integrations and a run's ticket buttons; nil: not available.
	Trackers ports.Trackers
	// Gates serve a project's gate rules and the compare page; nil: not available.
	Gates ports.Gates
	// Schedules serve a project's schedules page; nil: not available.
	Schedules ports.Schedules
	// Notifications serve a project's notifications page; nil: not available.
	Notifications ports.Notifications
	// SourceControl serves the GitHub and GitLab part of /settings/integrations and a
	// project's hooks page; nil: not available.
	SourceControl ports.SourceControl
	// SSO is sign-in through organizations' OpenID Connect providers (/auth/sso, the sign-in
	// page's offer, and its setting on /settings); nil: not offered.
	SSO ports.SSO
	// Custody schedules and cancels the organization's erasure from /settings; nil: not offered.
	Custody ports.Custody
	// CSRFKey signs the CSRF tokens (derived from the JWT secret by internal/app).
	CSRFKey []byte
	// SecureCookies marks the cookies Secure (the public URL is https).
	SecureCookies bool
	// Limit takes a request from the API's rate-limit bucket of the route doing the same action
	// ("login" for the sign-in form, "invite" for the invitation form…), counted as the route
	// counts it (by p's organization, or by client IP for a public bucket), answering the
	// route's 429 error when the bucket is empty; nil: no limit.
	Limit func(r *http.Request, bucket string, p *identity.Principal) error
	// ReportLink is a link to a run's main report that opens it for p (carrying a short-lived
	// report token), "" for none; nil: no report links.
	ReportLink func(ctx context.Context, p *identity.Principal, e *domain.Execution) string
	// ReportFileLink is the absolute URL of the file relPath of e's reports (e: the run, or the
	// shard container whose reports hold it) through a report link made for p now (a token in
	// the path, valid 2 hours); nil: attachments are listed without links.
	ReportFileLink func(p *identity.Principal, e *domain.Execution, relPath string) string
	// Executable is the path of the running verdict binary, served at GET /downloads/verdict
	// (the CLI, for the server's own OS and architecture); "": not served.
	Executable string
	// SocketTickets issues the tickets a page's script opens Socket.IO with; nil: no live updates.
	SocketTickets *SocketTickets
	// Outage answers requests that meet a dependency that is away (503, counted, logged);
	// nil: one of its own.
	Outage *outage.Reporter
	Log    *slog.Logger
	Clock  domain.Clock
}

// Server serves the dashboard.
type Server struct {
	outage     *outage.Reporter
	identity   ports.Identity
	executions ports.Executions
	billing    ports.Billing
	analyst    ports.Analyst
	testCases  ports.TestCases
	histories  ports.Histories
	planner    ports.Planner
	trackers   ports.Trackers
	gates      ports.Gates
	schedules  ports.Schedules
	notify     ports.Notifications
	scm        ports.SourceControl
	sso        ports.SSO
	custody    ports.Custody
	jwt        ports.TokenVerifier
	csrfKey    []byte
	secure     bool
	reportLink func(ctx context.Context, p *identity.Principal, e *domain.Execution) string
	reportFile func(p *identity.Principal, e *domain.Execution, relPath string) string
	executable string
	limit      func(r *http.Request, bucket string, p *identity.Principal) error
	tickets    *SocketTickets
	log        *slog.Logger
	clock      domain.Clock
	pages      map[string]*template.Template
	mux        *http.ServeMux
}

// New builds the dashboard and its routes.
func New(d Deps) *Server {
	if d.Log == nil {
		d.Log = slog.Default()
	}
	if d.Clock == nil {
		d.Clock = domain.SystemClock
	}
	if len(d.CSRFKey) == 0 {
		panic("web: a CSRF key is required")
	}
	if d.Outage == nil {
		d.Outage = &outage.Reporter{Log: d.Log}
	}
	s := &Server{identity: d.Identity, executions: d.Executions, billing: d.Billing, analyst: d.Analyst, jwt: d.JWT, csrfKey: d.CSRFKey,
		secure: d.SecureCookies, reportLink: d.ReportLink, reportFile: d.ReportFileLink, executable: d.Executable, limit: d.Limit, tickets: d.SocketTickets, outage: d.Outage, log: d.Log, clock: d.Clock,
		pages: parsePages(), mux: http.NewServeMux()}
	s.testCases, s.planner, s.trackers, s.histories = d.TestCases, d.Planner, d.Trackers, d.Histories
	s.gates = d.Gates
	s.schedules = d.Schedules
	s.notify = d.Notifications
	s.scm = d.SourceControl
	s.sso = d.SSO
	s.custody = d.Custody
	s.routes()
	return s
}

func (s *Server) routes() {
	static, err := fs.Sub(staticFS, "static")
	if err != nil {
		panic(err)
	}
	s.mux.Handle("GET /static/", http.StripPrefix("/static/", staticFiles(static)))
	s.mux.HandleFunc("GET /{$}", s.home)
	s.mux.HandleFunc("GET /downloads/verdict", s.download)
	s.mux.HandleFunc("GET /login", s.public(s.loginPage))
	s.mux.HandleFunc("POST /login", s.public(s.csrf(s.login)))
	s.mux.HandleFunc("GET /auth/sso", s.public(s.ssoStart))
	s.mux.HandleFunc("GET /auth/sso/callback", s.public(s.ssoCallback))
	s.mux.HandleFunc("GET /signup", s.public(s.signupPage))
	s.mux.HandleFunc("POST /signup", s.public(s.csrf(s.signup)))
	s.mux.HandleFunc("GET /accept-invitation", s.public(s.invitationPage))
	s.mux.HandleFunc("POST /accept-invitation", s.public(s.csrf(s.acceptInvitation)))
	s.mux.HandleFunc("POST /logout", s.public(s.csrf(s.logout)))
	s.mux.HandleFunc("GET /overview", s.signedIn(s.overview))
	s.mux.HandleFunc("GET /runs", s.signedIn(s.runs))
	s.mux.HandleFunc("GET /runs/{taskId}", s.signedIn(s.run))
	s.mux.HandleFunc("GET /runs/{taskId}/log", s.signedIn(s.runLog))
	s.mux.HandleFunc("GET /runs/{taskId}/attachments/{test}/{n}", s.signedIn(s.openAttachment))
	s.mux.HandleFunc("POST /runs", s.signedIn(s.csrf(s.takes("executions", s.queueRun))))
	s.mux.HandleFunc("GET /runs/folders", s.signedIn(s.folders))
	s.mux.HandleFunc("POST /runs/{taskId}/cancel", s.signedIn(s.csrf(s.takes("executions", s.cancelRun))))
	s.mux.HandleFunc("POST /runs/{taskId}/rerun", s.signedIn(s.csrf(s.takes("executions", s.rerun))))
	s.mux.HandleFunc("POST /runs/{taskId}/delete", s.signedIn(s.csrf(s.takes("executions", s.deleteRun))))
	s.mux.HandleFunc("POST /runs/{taskId}/pin", s.signedIn(s.csrf(s.takes("executions", s.pinRun))))
	s.mux.HandleFunc("POST /runs/{taskId}/unpin", s.signedIn(s.csrf(s.takes("executions", s.pinRun))))
	s.mux.HandleFunc("POST /runs/{taskId}/analysis", s.signedIn(s.csrf(s.takes("executions", s.reanalyse))))
	s.mux.HandleFunc("POST /runs/{taskId}/triage", s.signedIn(s.csrf(s.takes("executions", s.triage))))
	s.mux.HandleFunc("GET /projects", s.signedIn(s.projects))
	s.mux.HandleFunc("POST /projects", s.signedIn(s.csrf(s.takes("api", s.createProject))))
	s.mux.HandleFunc("GET /projects/{id}", s.signedIn(s.project))
	s.mux.HandleFunc("POST /projects/{id}", s.signedIn(s.csrf(s.takes("api", s.updateProject))))
	s.mux.HandleFunc("POST /projects/{id}/gate", s.signedIn(s.csrf(s.takes("api", s.updateGate))))
	s.mux.HandleFunc("GET /projects/{id}/schedules", s.signedIn(s.schedulesPage))
	s.mux.HandleFunc("POST /projects/{id}/schedules", s.signedIn(s.csrf(s.takes("api", s.createSchedule))))
	s.mux.HandleFunc("POST /projects/{id}/schedules/{scheduleId}/pause", s.signedIn(s.csrf(s.takes("api", s.setSchedule(false)))))
	s.mux.HandleFunc("POST /projects/{id}/schedules/{scheduleId}/resume", s.signedIn(s.csrf(s.takes("api", s.setSchedule(true)))))
	s.mux.HandleFunc("POST /projects/{id}/schedules/{scheduleId}/delete", s.signedIn(s.csrf(s.takes("api", s.deleteSchedule))))
	s.mux.HandleFunc("GET /projects/{id}/notifications", s.signedIn(s.notificationsList))
	s.mux.HandleFunc("POST /projects/{id}/notifications", s.signedIn(s.csrf(s.takes("strict", s.createNotification))))
	s.mux.HandleFunc("POST /projects/{id}/notifications/{nid}/delete", s.signedIn(s.csrf(s.takes("strict", s.deleteNotification))))
	s.mux.HandleFunc("POST /projects/{id}/notifications/{nid}/deliveries/{did}/redeliver", s.signedIn(s.csrf(s.takes("strict", s.redeliverNotification))))
	s.mux.HandleFunc("GET /projects/{id}/hooks", s.signedIn(s.hooks))
	s.mux.HandleFunc("POST /projects/{id}/hooks", s.signedIn(s.csrf(s.takes("api", s.createHook))))
	s.mux.HandleFunc("POST /projects/{id}/hooks/{hookId}/delete", s.signedIn(s.csrf(s.takes("api", s.deleteHook))))
	s.mux.HandleFunc("GET /runs/{taskId}/compare", s.signedIn(s.compareRuns))
	s.mux.HandleFunc("GET /session/socket-token", s.socketToken)
	// Members (the identity service decides who may do what: the pages show admin controls only
	// to admins) and the caller's API keys.
	s.mux.HandleFunc("GET /members", s.signedIn(s.members))
	s.mux.HandleFunc("POST /members/invite", s.signedIn(s.csrf(s.takes("invite", s.inviteMember))))
	s.mux.HandleFunc("POST /members/{id}/role", s.signedIn(s.csrf(s.takes("strict", s.changeMemberRole))))
	s.mux.HandleFunc("POST /members/{id}/status", s.signedIn(s.csrf(s.takes("strict", s.changeMemberStatus))))
	s.mux.HandleFunc("POST /members/{id}/delete", s.signedIn(s.csrf(s.takes("strict", s.deleteMember))))
	s.mux.HandleFunc("POST /members/invitations/{id}/revoke", s.signedIn(s.csrf(s.takes("invitations", s.revokeInvitation))))
	s.mux.HandleFunc("GET /settings/api-keys", s.signedIn(s.apiKeys))
	s.mux.HandleFunc("POST /settings/api-keys", s.signedIn(s.csrf(s.takes("strict", s.createAPIKey))))
	s.mux.HandleFunc("POST /settings/api-keys/{id}/revoke", s.signedIn(s.csrf(s.takes("strict", s.revokeAPIKey))))
	s.mux.HandleFunc("GET /settings/billing", s.signedIn(s.billingPage))
	s.mux.HandleFunc("POST /settings/billing/checkout", s.signedIn(s.csrf(s.takes("strict", s.checkout))))
	s.mux.HandleFunc("POST /settings/billing/portal", s.signedIn(s.csrf(s.takes("strict", s.portal))))
	s.mux.HandleFunc("GET /settings", s.signedIn(s.settings))
	s.mux.HandleFunc("GET /settings/audit", s.signedIn(s.auditPage))
	s.mux.HandleFunc("GET /settings/audit/export", s.signedIn(s.auditExport))
	s.mux.HandleFunc("POST /settings/organization", s.signedIn(s.csrf(s.takes("strict", s.updateOrganization))))
	s.mux.HandleFunc("POST /settings/retention", s.signedIn(s.csrf(s.takes("strict", s.updateRetention))))
	s.mux.HandleFunc("POST /settings/sso", s.signedIn(s.csrf(s.takes("strict", s.saveSSO))))
	s.mux.HandleFunc("POST /settings/erase", s.signedIn(s.csrf(s.takes("strict", s.scheduleErase))))
	s.mux.HandleFunc("POST /settings/erase/cancel", s.signedIn(s.csrf(s.takes("strict", s.cancelErase))))
	s.mux.HandleFunc("POST /settings/ai/model", s.signedIn(s.csrf(s.takes("strict", s.setDefaultModel))))
	s.mux.HandleFunc("POST /settings/ai/key", s.signedIn(s.csrf(s.takes("strict", s.saveOwnKey))))
	s.mux.HandleFunc("POST /settings/ai/remove-key", s.signedIn(s.csrf(s.takes("strict", s.removeOwnKey))))
	// Test cases, the automation planner, the tracker integrations.
	s.mux.HandleFunc("GET /test-cases", s.signedIn(s.testCasesPage))
	s.mux.HandleFunc("POST /test-cases", s.signedIn(s.csrf(s.takes("api", s.createTestCase))))
	s.mux.HandleFunc("POST /test-cases/import", s.signedIn(s.upload(s.takes("api", s.importTestCases))))
	s.mux.HandleFunc("GET /test-cases/{id}", s.signedIn(s.testCasePage))
	s.mux.HandleFunc("POST /test-cases/{id}", s.signedIn(s.csrf(s.takes("api", s.updateTestCase))))
	s.mux.HandleFunc("POST /test-cases/{id}/delete", s.signedIn(s.csrf(s.takes("api", s.deleteTestCase))))
	s.mux.HandleFunc("GET /tests", s.signedIn(s.testsPage))
	s.mux.HandleFunc("GET /tests/{id}", s.signedIn(s.testPage))
	s.mux.HandleFunc("POST /tests/{id}/quarantine", s.signedIn(s.csrf(s.takes("api", s.quarantineTest))))
	s.mux.HandleFunc("POST /tests/{id}/unquarantine", s.signedIn(s.csrf(s.takes("api", s.unquarantineTest))))
	s.mux.HandleFunc("GET /planner", s.signedIn(s.plannerPage))
	s.mux.HandleFunc("POST /planner", s.signedIn(s.csrf(s.takes("strict", s.generatePlan))))
	s.mux.HandleFunc("GET /planner/{id}", s.signedIn(s.planPage))
	s.mux.HandleFunc("POST /planner/{id}/delete", s.signedIn(s.csrf(s.takes("api", s.deletePlan))))
	s.mux.HandleFunc("GET /settings/integrations", s.signedIn(s.integrationsPage))
	s.mux.HandleFunc("POST /settings/integrations/{provider}", s.knownTracker(s.signedIn(s.csrf(s.takes("strict", s.saveTracker)))))
	// GitHub and GitLab: their own forms (a token and an API address), on the same page; the
	// remove route below serves them too.
	s.mux.HandleFunc("POST /settings/integrations/github", s.signedIn(s.csrf(s.takes("strict", s.saveSCM(domain.ProviderGitHub)))))
	s.mux.HandleFunc("POST /settings/integrations/gitlab", s.signedIn(s.csrf(s.takes("strict", s.saveSCM(domain.ProviderGitLab)))))
	s.mux.HandleFunc("POST /settings/integrations/{provider}/remove", s.signedIn(s.csrf(s.takes("strict", s.removeIntegration))))
	s.mux.HandleFunc("POST /runs/{taskId}/tickets/{provider}", s.signedIn(s.csrf(s.takes("api", s.createTicket))))
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.errorPage(w, r, http.StatusNotFound, "Page not found", "There is no page at this address.")
	})
}

// ServeHTTP serves a page with the dashboard's security headers.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer") // invitation links carry their token in the query
	if !strings.HasPrefix(r.URL.Path, "/static/") {
		h.Set("Cache-Control", "no-store")
	}
	s.mux.ServeHTTP(w, r)
}

// staticFiles serves the embedded assets; they change only with the binary.
func staticFiles(root fs.FS) http.Handler {
	files := http.FileServerFS(root)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "" || strings.HasSuffix(r.URL.Path, "/") {
			http.NotFound(w, r) // no directory listings
			return
		}
		w.Header().Set("Cache-Control", "public, max-age=3600")
		files.ServeHTTP(w, r)
	})
}
