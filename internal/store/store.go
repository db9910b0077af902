// Package store holds the repository contracts. Every method that touches tenant-owned data
// takes the organization ID as a required argument: another organization's row is simply not
// found (ErrNotFound), which the API turns into 404.
package store

import (
	"context"
	"errors"
	"time"

	"verdict/internal/domain"
)

var (
	// ErrNotFound: no row, or a row of another organization.
	ErrNotFound = errors.New("store: not found")
	// ErrConflict: a unique constraint refused the write (e-mail taken, duplicate event).
	ErrConflict = errors.New("store: conflict")
	// ErrGuard: a guarded write found its condition false (last admin, limit reached).
	ErrGuard = errors.New("store: guard failed")
	// ErrUnavailable: the database could not be reached or cannot serve now (stopped,
	// restarting, connections cut, disk full); the same call may succeed later. Errors of it
	// are *domain.UnavailableError naming "database".
	ErrUnavailable = domain.ErrUnavailable
)

// Store is a database. InTx gives repositories that share one transaction; inside it,
// LockOrganization serialises writers of one organization (row lock on PostgreSQL; SQLite
// transactions already take the write lock at BEGIN).
type Store interface {
	Users() UserRepo
	Organizations() OrganizationRepo
	Invitations() InvitationRepo
	APIKeys() APIKeyRepo
	Audit() AuditRepo
	SSO() SSORepo
	Outbox() OutboxRepo
	Tests() TestRepo
	Projects() ProjectRepo
	Executions() ExecutionRepo
	Logs() LogRepo
	Analyses() AnalysisRepo
	Plans() PlanRepo
	Integrations() IntegrationRepo
	TestCases() TestCaseRepo
	BillingEvents() BillingEventRepo
	UsageAlerts() UsageAlertRepo
	RevokedTokens() RevokedTokenRepo
	Schedules() ScheduleRepo
	SourceControl() SourceControlRepo
	Notifications() NotificationRepo

	InTx(ctx context.Context, fn func(tx Store) error) error
	Ping(ctx context.Context) error
	Dialect() string // "sqlite" or "postgres"
	Close() error
}

// UserRepo stores users. GetByEmail is global because e-mail is unique across the service
// and login knows no organization yet.
type UserRepo interface {
	Create(ctx context.Context, u *domain.User) error // ErrConflict when the e-mail is taken
	Get(ctx context.Context, orgID, id string) (*domain.User, error)
	GetByEmail(ctx context.Context, email string) (*domain.User, error)
	List(ctx context.Context, orgID string) ([]domain.User, error) // oldest first
	CountActive(ctx context.Context, orgID string) (int, error)
	CountActiveByRole(ctx context.Context, orgID string, role domain.Role) (int, error) // suspended members not counted
	UpdateRole(ctx context.Context, orgID, id string, role domain.Role) error
	UpdateStatus(ctx context.Context, orgID, id string, status domain.UserStatus) error
	UpdateLastLogin(ctx context.Context, orgID, id string, at time.Time) error
	// MoveToOrganization moves a user who accepted an invitation into another organization.
	MoveToOrganization(ctx context.Context, fromOrgID, id, toOrgID string, role domain.Role) error
	Delete(ctx context.Context, orgID, id string) error
}

// OrganizationRepo stores organizations.
type OrganizationRepo interface {
	Create(ctx context.Context, o *domain.Organization) error
	Get(ctx context.Context, id string) (*domain.Organization, error)
	GetByCustomerID(ctx context.Context, providerCustomerID string) (*domain.Organization, error)
	// FindBySlug lists the organizations with this slug, oldest first (slugs are not unique).
	// For the operator's commands, which name an organization by ID or slug.
	FindBySlug(ctx context.Context, slug string) ([]domain.Organization, error)
	// Lock takes the organization's row lock until the transaction ends (no-op outside InTx
	// on SQLite, whose transactions are already serialised).
	Lock(ctx context.Context, id string) error
	UpdateSettings(ctx context.Context, id, name string, aiAnalysisEnabled bool, features domain.Features) error
	UpdatePlan(ctx context.Context, id string, plan domain.Plan, billing domain.Billing) error
	// SetAllowedImages replaces the organization's image patterns.
	SetAllowedImages(ctx context.Context, id string, patterns []string) error
	// SetAIConfig replaces the default model and the provider keys (sealed by the caller).
	SetAIConfig(ctx context.Context, id, defaultModel string, keys map[string]string) error
	AddStorageUsed(ctx context.Context, id string, delta int64) error
	// SetRetention replaces the organization's own retention (nil values: the plan's).
	SetRetention(ctx context.Context, id string, r domain.RetentionSetting) error
	// ListAfter lists up to limit organizations whose ID sorts after afterID, in ID order:
	// every organization, a page at a time, for the background jobs that visit them all.
	ListAfter(ctx context.Context, afterID string, limit int) ([]domain.Organization, error)

	// ScheduleErase marks the organization to be erased at at, asked by userID; ErrGuard when
	// an erasure is scheduled already.
	ScheduleErase(ctx context.Context, id string, at time.Time, userID string) error
	// CancelErase clears the organization's scheduled erasure while it is not due at now;
	// ErrNotFound when none is scheduled or it is due (the erase job may have begun).
	CancelErase(ctx context.Context, id string, now time.Time) error
	// DueErasures lists up to limit IDs of organizations whose erasure is due at now and that
	// no erase job holds (no lease, or one ended by now), the longest due first.
	DueErasures(ctx context.Context, now time.Time, limit int) ([]string, error)
	// ClaimErase takes the erasure of the organization until leaseUntil in one conditional
	// write: true for one caller, while the erasure is due and no other holds an unexpired
	// lease, so that one replica erases an organization at a time.
	ClaimErase(ctx context.Context, id string, now, leaseUntil time.Time) (bool, error)
	// RenewErase moves the lease of the organization's erasure to until (the holder renews it as
	// it goes; until now releases it); ErrNotFound when the organization is gone.
	RenewErase(ctx context.Context, id string, until time.Time) error
	// EraseStep deletes up to limit of the organization's rows, from the first of its tables
	// (in the order of the references between them) that still holds any, and names that table; once every other
	// table is empty, it deletes the organization's own row (table "organizations", 1). 0: nothing of
	// the organization is left. Each step is one statement: a short write, whatever the size.
	EraseStep(ctx context.Context, id string, limit int) (table string, deleted int, err error)
}

// InvitationRepo stores invitations; Status is the stored one (pending/accepted/revoked).
type InvitationRepo interface {
	Create(ctx context.Context, inv *domain.Invitation) error
	Get(ctx context.Context, orgID, id string) (*domain.Invitation, error)
	GetByTokenHash(ctx context.Context, tokenHash string) (*domain.Invitation, error)
	// FindPending returns a pending (maybe expired) invitation for the e-mail in the organization.
	FindPending(ctx context.Context, orgID, email string) (*domain.Invitation, error)
	List(ctx context.Context, orgID string) ([]domain.Invitation, error) // newest first
	// CountPendingUnexpired counts pending invitations that still hold a seat at now.
	CountPendingUnexpired(ctx context.Context, orgID string, now time.Time) (int, error)
	// SetStatus moves an invitation from one stored status to another; ErrNotFound when it
	// was not in from (already used or revoked), so a token is consumed once.
	SetStatus(ctx context.Context, orgID, id string, from, to domain.InvitationStatus, at time.Time) error
}

// APIKeyRepo stores API keys.
type APIKeyRepo interface {
	Create(ctx context.Context, k *domain.APIKey) error
	GetByHash(ctx context.Context, hash string) (*domain.APIKey, error)
	ListByUser(ctx context.Context, orgID, userID string) ([]domain.APIKey, error)
	List(ctx context.Context, orgID string) ([]domain.APIKey, error)
	Delete(ctx context.Context, orgID, id string) error
	TouchLastUsed(ctx context.Context, orgID, id string, at time.Time) error
}

// SSORepo holds organizations' OpenID Connect providers and the e-mail domains each claims.
type SSORepo interface {
	Get(ctx context.Context, orgID string) (*domain.SSOConfig, error)
	// Put creates or replaces the organization's provider and its domains; a domain another
	// organization claims is ErrConflict, and nothing changes.
	Put(ctx context.Context, c *domain.SSOConfig) error
	// ByDomain finds the provider that claims an e-mail domain.
	ByDomain(ctx context.Context, emailDomain string) (*domain.SSOConfig, error)
}

// AuditRepo appends audit entries and reads them; it has no method that changes or deletes one.
type AuditRepo interface {
	Append(ctx context.Context, e *domain.AuditEntry) error
	List(ctx context.Context, orgID string, limit int) ([]domain.AuditEntry, error) // newest first
	// Find returns the page of entries f selects, newest first, with their actors' names, and
	// how many entries f selects without its page.
	Find(ctx context.Context, orgID string, f domain.AuditFilter) ([]domain.AuditEntry, int, error)
}

// Mail is one outgoing e-mail in the durable outbox.
type Mail struct {
	ID string
	// Kind is "" for an e-mail; else the kind of delivery a post-run step enqueued
	// ("step:<name>"), made by that step, with its payload in Text and no recipients.
	Kind string
	// Key, when set, is unique in the outbox: a second Enqueue with it is ErrConflict.
	Key         string
	To          []string
	Subject     string
	HTML        string
	Text        string
	Attempts    int
	NextAttempt time.Time
	SentAt      *time.Time
	LastError   string
	CreatedAt   time.Time
}

// OutboxRepo is the durable mail queue, and the post-run steps' delivery queue (Mail.Kind):
// enqueue in the same transaction as the change that causes the mail; a worker claims due
// mails with a lease so several replicas send each once.
// Bodies carry credentials (invitation links): they are kept encrypted at rest, and dropped
// once the mail is sent or given up.
type OutboxRepo interface {
	Enqueue(ctx context.Context, m *Mail) error
	// Claim leases up to n due, unsent mails until leaseUntil and returns them.
	Claim(ctx context.Context, now, leaseUntil time.Time, n int) ([]Mail, error)
	// MarkSent records the delivery; the mail's HTML and Text are emptied.
	MarkSent(ctx context.Context, id string, at time.Time) error
	// MarkFailed records an attempt's error and when to try again; giveUp stops retrying and
	// empties HTML and Text.
	MarkFailed(ctx context.Context, id string, errText string, next time.Time, giveUp bool) error
	// Defer puts a claimed mail back, due at next, without counting its claim as an attempt
	// (the worker had no room to try it).
	Defer(ctx context.Context, id string, next time.Time) error
	Get(ctx context.Context, id string) (*Mail, error)
	// Backlog counts the e-mails (Kind "") not sent yet and not given up (due or waiting for a
	// retry).
	Backlog(ctx context.Context) (int, error)
}

// Outcomes of a billing event in the webhook log.
const (
	EventSuccess = "success"
	EventError   = "error"
)

// BillingEvent is one entry of the webhook log (GET /api/billing/events).
type BillingEvent struct {
	EventID        string
	EventType      string
	OrganizationID string // empty when no organization matched
	Status         string // EventSuccess or EventError
	Error          string // empty when none
	Payload        []byte // the event as delivered (JSON)
	CreatedAt      time.Time
	ProcessedAt    time.Time
}

// BillingEventRepo is the webhook log. Recording an event's ID first in the transaction that
// applies it makes each event take effect once, however often or concurrently it is delivered.
type BillingEventRepo interface {
	// Record logs a new event; ErrConflict when its EventID is already logged. A conflict does
	// not abort the surrounding transaction.
	Record(ctx context.Context, e *BillingEvent) error
	// SetOutcome sets a recorded event's organization, status and error.
	SetOutcome(ctx context.Context, eventID, orgID, status, errText string) error
	Get(ctx context.Context, eventID string) (*BillingEvent, error)
	List(ctx context.Context, orgID string, limit int) ([]BillingEvent, error) // newest first
}

// RevokedToken is a session token ended before its expiry (signed out), by its ID (the JWT's
// jti). Seq orders revocations as they were recorded.
type RevokedToken struct {
	Seq       int64
	ID        string
	ExpiresAt time.Time
	RevokedAt time.Time
}

// RevokedTokenRepo is the revocation list every replica reads: each keeps the list in memory
// and reads what was added since it last looked (Since), so a revocation recorded by one is
// honoured by all.
type RevokedTokenRepo interface {
	// Add records that the token id is revoked until expiresAt, when it would have ended
	// anyway; adding a revoked token again changes nothing.
	Add(ctx context.Context, id string, expiresAt, at time.Time) error
	// Since returns the revocations with a Seq above seq that expire after now, in order of
	// Seq, at most limit.
	Since(ctx context.Context, seq int64, now time.Time, limit int) ([]RevokedToken, error)
	// DeleteExpired removes the revocations of tokens expired at now and says how many.
	DeleteExpired(ctx context.Context, now time.Time) (int, error)
}

// UsageAlertRepo remembers which usage alerts were raised.
type UsageAlertRepo interface {
	// Claim records that an organization's resource reached threshold percent in the billing
	// period starting at periodStart. It reports false when that was recorded before, so the
	// alert goes out once even when several replicas see the crossing at the same time.
	Claim(ctx context.Context, orgID, resource string, threshold int, periodStart, at time.Time) (bool, error)
}

// PlanRepo keeps the organizations' saved automation plans.
type PlanRepo interface {
	Create(ctx context.Context, p *domain.AutomationPlan) error
	// Get reads the organization's plan; ErrNotFound for another organization's.
	Get(ctx context.Context, orgID, id string) (*domain.AutomationPlan, error)
	// List returns the organization's newest plans (of projectID when not empty), at most
	// limit, without their Markdown.
	List(ctx context.Context, orgID, projectID string, limit int) ([]domain.AutomationPlan, error)
	// Delete removes the organization's plan; ErrNotFound when it has no such plan.
	Delete(ctx context.Context, orgID, id string) error
}

// IntegrationRepo stores organizations' integrations with outside services (one per
// organization and provider: settings and the sealed key) and the tickets created in trackers
// from runs.
type IntegrationRepo interface {
	// Get returns the organization's integration with provider; ErrNotFound when none is stored.
	Get(ctx context.Context, orgID, provider string) (*domain.Integration, error)
	// Put stores in, replacing the organization's integration with the same provider (whose
	// CreatedAt stays).
	Put(ctx context.Context, in *domain.Integration) error
	// Delete removes the organization's integration with provider and reports whether there was
	// one. The tickets created through it stay on their runs.
	Delete(ctx context.Context, orgID, provider string) (bool, error)
	// AddTicket records a ticket on the organization's run t.ExecutionID; ErrNotFound when the
	// organization has no such run (deleted meanwhile). Each ticket is a row of its own, so
	// tickets recorded at the same time are all kept, and the run's own row is not written.
	AddTicket(ctx context.Context, t *domain.Ticket) error
	// Tickets lists the tickets of the organization's run executionID, oldest first; nil for none.
	Tickets(ctx context.Context, orgID, executionID string) ([]domain.Ticket, error)
}

// SourceControlRepo stores projects' inbound source-control hooks, the deliveries they took (by
// the host's delivery ID) and the pull-request comments Verdict keeps up to date.
type SourceControlRepo interface {
	CreateHook(ctx context.Context, h *domain.Hook) error
	// GetHook returns the organization's hook of the project; ErrNotFound for another's.
	GetHook(ctx context.Context, orgID, projectID, id string) (*domain.Hook, error)
	// FindHook returns the hook by its ID alone, for its public delivery route: the caller
	// proves it may use it with the hook's secret.
	FindHook(ctx context.Context, id string) (*domain.Hook, error)
	// ListHooks lists the organization's hooks of the project, oldest first.
	ListHooks(ctx context.Context, orgID, projectID string) ([]domain.Hook, error)
	// DeleteHook removes the organization's hook of the project; ErrNotFound when none.
	DeleteHook(ctx context.Context, orgID, projectID, id string) error
	// RecordDelivery records that the hook took the delivery deliveryID; ErrConflict when it
	// took it before (a conflict does not abort the surrounding transaction).
	RecordDelivery(ctx context.Context, hookID, deliveryID string, at time.Time) error
	// ForgetDelivery removes a recorded delivery (its run could not be queued: the host's
	// redelivery may try again).
	ForgetDelivery(ctx context.Context, hookID, deliveryID string) error
	// PruneDeliveries removes the deliveries recorded before before and says how many.
	PruneDeliveries(ctx context.Context, before time.Time) (int, error)
	// Comment returns the ID of the comment Verdict keeps on the request (pull or merge
	// request number) of repository for the project; ErrNotFound when none is known.
	Comment(ctx context.Context, orgID, projectID, provider, repository string, request int64) (string, error)
	// PutComment records (or replaces) that comment's ID.
	PutComment(ctx context.Context, orgID, projectID, provider, repository string, request int64, commentID string, at time.Time) error
}

// NotificationRepo stores projects' notifications (receivers with sealed URLs and secrets, and
// their rules) and each one's recent deliveries.
type NotificationRepo interface {
	Create(ctx context.Context, n *domain.Notification) error
	// Get returns the organization's notification id; ErrNotFound when it has none.
	Get(ctx context.Context, orgID, id string) (*domain.Notification, error)
	// List lists the notifications of the organization's project, oldest first; nil for none.
	List(ctx context.Context, orgID, projectID string) ([]domain.Notification, error)
	// Delete removes the organization's notification id with its deliveries, and reports whether
	// there was one.
	Delete(ctx context.Context, orgID, id string) (bool, error)
	// AddDelivery records d for its notification; ErrConflict when the notification has a
	// delivery of d.EventID already, ErrNotFound when the notification is gone. Only the newest
	// keep deliveries of the notification stay.
	AddDelivery(ctx context.Context, d *domain.Delivery, keep int) error
	// Delivery returns the organization's delivery id; ErrNotFound when it has none.
	Delivery(ctx context.Context, orgID, id string) (*domain.Delivery, error)
	// Deliveries lists the notification's deliveries, newest first, at most limit.
	Deliveries(ctx context.Context, orgID, notificationID string, limit int) ([]domain.Delivery, error)
	// UpdateDelivery stores d's outcome (status, status code, duration, attempts, last error and
	// times, CreatedAt included: a delivery made again is queued anew); ErrNotFound when it is gone.
	UpdateDelivery(ctx context.Context, d *domain.Delivery) error
}
