// Package identity is the service behind accounts and tenancy: signup, login, users,
// organizations, invitations and API keys. Handlers call it; it owns every rule of accounts,
// roles and invitations and reaches the database only through store.Store.
package identity

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"verdict/internal/auth"
	"verdict/internal/domain"
	"verdict/internal/store"
)

// Tokens issues session tokens (JWT) and keeps the set of revoked ones that verifying refuses
// (auth.Tokens).
type Tokens interface {
	Issue(userID, orgID string, role domain.Role) (string, error)
	// Revoke refuses the session's tokens from now on in this process; it reports whether the
	// session was not known as revoked before.
	Revoke(id string, expiresAt time.Time) bool
	// Verify checks a session token, refusing a revoked one; Revoked tells whether the
	// session id was revoked (AuthenticateSocket).
	Verify(token string) (auth.Claims, error)
	Revoked(id string) bool
}

// Lockout counts failed logins per e-mail and locks an address after too many (auth.Lockout).
type Lockout interface {
	Check(ctx context.Context, email string) (locked bool, retryAfter time.Duration, err error)
	Fail(ctx context.Context, email string) (attemptsRemaining int, locked bool, retryAfter time.Duration, err error)
	Succeed(ctx context.Context, email string) error
}

// Mailer renders the identity e-mails and enqueues them in the outbox of the transaction that
// causes them, so a rolled-back change sends nothing and a committed one is never lost.
type Mailer interface {
	Invitation(ctx context.Context, outbox store.OutboxRepo, inv *domain.Invitation, org *domain.Organization, token string) error
	Welcome(ctx context.Context, outbox store.OutboxRepo, u *domain.User, org *domain.Organization) error
	// Sent is called after a commit that enqueued mail, to wake the sender.
	Sent()
}

// RunCounter tells how many test runs an organization queued since a moment (the executions
// service).
type RunCounter interface {
	CountRunsSince(ctx context.Context, orgID string, since time.Time) (int, error)
}

// Alerts raises the usage alerts one more active member may set off, in the transaction that
// adds them (billing.Alerts). It is an interface of this package's own because billing sits
// above identity: its request-facing methods take the Principal.
type Alerts interface {
	MemberJoined(ctx context.Context, tx store.Store, org *domain.Organization, activeBefore int) error
}

// Service is the identity service.
type Service struct {
	store   store.Store
	tokens  Tokens
	lockout Lockout
	mailer  Mailer
	runs    RunCounter // the executions service
	alerts  Alerts
	// endSessions closes a user's live connections (Socket.IO) after their access changed.
	endSessions    func(userID string)
	endKeySessions func(keyID string)
	// endTokenSessions closes this replica's live connections of a revoked session.
	endTokenSessions func(tokenID string)
	socketTickets    SocketTickets
	defaultPlan      domain.Plan // of organizations created at signup
	retentionMax     domain.Retention
	breakGlass       []string // admins' addresses that may use a password where the provider is required
	clock            domain.Clock
	newID            domain.IDGen
	log              *slog.Logger

	// keyTouches is when this process last took on writing each API key's lastUsedAt (unix
	// ms, by key ID), so that concurrent requests with one key write it once per interval.
	keyTouches sync.Map

	revocations revocationFeed // what SyncRevocations has read (revocation.go)
}

// Deps are the Service's collaborators. Store, Tokens, Lockout and Mailer are required; New
// fills in the others.
type Deps struct {
	Store   store.Store
	Tokens  Tokens
	Lockout Lockout
	Mailer  Mailer
	Runs    RunCounter // the executions service; nil: no runs counted
	Alerts  Alerts     // nil: no alerts
	// EndSessions closes a user's live connections once they are suspended, deleted or moved
	// to another organization; nil: there are none to close.
	EndSessions func(userID string)
	// EndKeySessions closes the live connections opened with an API key once it is revoked.
	EndKeySessions func(keyID string)
	// EndTokenSessions closes this replica's live connections opened with a session's token
	// once it is revoked: every replica calls it for each revocation it learns of
	// (SyncRevocations), so it need not reach the others.
	EndTokenSessions func(tokenID string)
	// SocketTickets checks the dashboard pages' socket tickets (AuthenticateSocket); nil: no
	// handshake token is a ticket.
	SocketTickets SocketTickets
	// DefaultPlan is the plan of organizations created at signup; empty: free.
	DefaultPlan domain.Plan
	// RetentionMax are the server's maxima of organizations' retention (0: none).
	RetentionMax domain.Retention
	// BreakGlass are the e-mail addresses of admins the operator lets sign in with a password
	// although their organization requires its identity provider (when the provider is down).
	BreakGlass []string
	Clock      domain.Clock
	NewID      domain.IDGen
	Log        *slog.Logger
}

// New builds a Service.
func New(d Deps) *Service {
	if d.Runs == nil {
		d.Runs = noRuns{}
	}
	if d.Alerts == nil {
		d.Alerts = noAlerts{}
	}
	if d.EndSessions == nil {
		d.EndSessions = func(string) {}
	}
	if d.EndKeySessions == nil {
		d.EndKeySessions = func(string) {}
	}
	if d.EndTokenSessions == nil {
		d.EndTokenSessions = func(string) {}
	}
	if d.Clock == nil {
		d.Clock = domain.SystemClock
	}
	if d.NewID == nil {
		d.NewID = domain.NewID
	}
	if d.Log == nil {
		d.Log = slog.Default()
	}
	if d.SocketTickets == nil {
		d.SocketTickets = func(string) (SocketTicket, bool, bool) { return SocketTicket{}, false, false }
	}
	if d.DefaultPlan == "" {
		d.DefaultPlan = domain.PlanFree
	}
	return &Service{defaultPlan: d.DefaultPlan, store: d.Store, tokens: d.Tokens, lockout: d.Lockout, mailer: d.Mailer, runs: d.Runs,
		alerts: d.Alerts, endSessions: d.EndSessions, endKeySessions: d.EndKeySessions, endTokenSessions: d.EndTokenSessions,
		socketTickets: d.SocketTickets, retentionMax: d.RetentionMax, clock: d.Clock,
		breakGlass: normalizeEmails(d.BreakGlass), newID: d.NewID, log: d.Log}
}

func normalizeEmails(in []string) []string {
	out := make([]string, 0, len(in))
	for _, e := range in {
		if e = domain.NormalizeEmail(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

type noRuns struct{}

func (noRuns) CountRunsSince(context.Context, string, time.Time) (int, error) { return 0, nil }

type noAlerts struct{}

func (noAlerts) MemberJoined(context.Context, store.Store, *domain.Organization, int) error {
	return nil
}

// Principal is who is calling: the user, their organization (from the token), and the role
// as it is now in the database (re-read on every request, so a changed role applies at once).
type Principal struct {
	UserID   string
	OrgID    string
	Role     domain.Role
	User     *domain.User // the row read to authenticate this request
	APIKeyID string       // set when the call came with an API key
	// SessionID and SessionExpires are the session token's ID (auth.Claims.ID) and expiry, set
	// when the call came with a session token: RevokeSession ends that session.
	SessionID      string
	SessionExpires time.Time
}

// Automation is the principal a schedule or a source-control hook queues runs as: the
// organization's, with the developer role and no user, so the run's triggeredBy is empty and its
// trigger label (domain.TriggerLabel) says what queued it. The plan's limits apply as to anyone.
func Automation(orgID string) *Principal { return &Principal{OrgID: orgID, Role: domain.RoleDeveloper} }

// IsAdmin reports whether the caller is an admin.
func (p *Principal) IsAdmin() bool { return p.Role == domain.RoleAdmin }

// CanWrite reports whether the caller may change runs and projects (admin or developer).
func (p *Principal) CanWrite() bool {
	return p.Role == domain.RoleAdmin || p.Role == domain.RoleDeveloper
}

// errAdminOnly is the refusal of every admin-only operation, whichever service holds it.
var errAdminOnly = domain.Forbidden("Forbidden", "This action needs the admin role")

// RequireAdmin refuses a caller who is not an admin. Services call it first in each admin-only
// operation, so the route table holds no role.
func (p *Principal) RequireAdmin() error {
	if !p.IsAdmin() {
		return errAdminOnly
	}
	return nil
}

// errForbidden refuses a non-admin asking for every member's API keys.
var errForbidden = domain.Forbidden("Forbidden", "You do not have permission to do this")

// notFound turns store.ErrNotFound into the given 404 and passes other errors on.
func notFound(err error, e *domain.Error) error {
	if errors.Is(err, store.ErrNotFound) {
		return e
	}
	return err
}
