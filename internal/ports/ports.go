// Package ports declares the services Verdict's two front doors call: the API (internal/api)
// and the dashboard (internal/web). Each interface is declared once, under one name, holding
// the methods either door calls, so a handler test can stand a few lines in for a service and
// internal/app hands both doors the same real ones (*identity.Service, *executions.Service,
// *billing.Service, *testcases.Service, *analysis.Service, *planning.Service,
// *integrations.Service, *history.Service).
//
// Every method a request reaches with a principal takes it, and the service decides what that
// principal may do (roles included): the routes and pages only authenticate. The methods
// without one serve requests that have no principal yet: authentication itself, signup and
// login, an invitation's validation, the payment provider's webhook, and the report route's
// lookup.
package ports

import (
	"context"
	"time"

	"verdict/internal/ai/planner"
	"verdict/internal/analysis"
	"verdict/internal/auth"
	"verdict/internal/billing"
	"verdict/internal/domain"
	"verdict/internal/executions"
	"verdict/internal/history"
	"verdict/internal/identity"
	"verdict/internal/integrations"
	"verdict/internal/planning"
	"verdict/internal/store"
	"verdict/internal/testcases"
)

// TokenVerifier checks a session JWT (the API's bearer token, the dashboard's cookie).
type TokenVerifier interface {
	Verify(token string) (auth.Claims, error)
}

// Identity is the identity service: accounts, members, the organization, invitations, API
// keys, and the authentication of every request.
type Identity interface {
	AuthenticateClaims(ctx context.Context, userID, orgID string) (*identity.Principal, error)
	AuthenticateKey(ctx context.Context, value string) (*identity.Principal, error)

	Signup(ctx context.Context, in identity.SignupInput) (*identity.Session, error)
	Login(ctx context.Context, email, password string) (*identity.Session, error)
	Me(ctx context.Context, p *identity.Principal) (*domain.User, *domain.Organization, int, error)
	CreateAPIKey(ctx context.Context, p *identity.Principal, name string) (*domain.APIKey, string, error)
	ListAPIKeys(ctx context.Context, p *identity.Principal, all bool) ([]domain.APIKey, error)
	RevokeAPIKey(ctx context.Context, p *identity.Principal, id string) error
	// RevokeSession ends the session p came with (signing out).
	RevokeSession(ctx context.Context, p *identity.Principal) error

	ListUsers(ctx context.Context, p *identity.Principal) ([]domain.User, error)
	GetUser(ctx context.Context, p *identity.Principal, id string) (*domain.User, error)
	ChangeRole(ctx context.Context, p *identity.Principal, id string, role domain.Role) (*domain.User, error)
	SetStatus(ctx context.Context, p *identity.Principal, id string, status domain.UserStatus) (*domain.User, error)
	DeleteUser(ctx context.Context, p *identity.Principal, id string) error

	Organization(ctx context.Context, p *identity.Principal) (*domain.Organization, int, error)
	UpdateOrganization(ctx context.Context, p *identity.Principal, patch identity.OrganizationPatch) (*domain.Organization, error)
	AuditLog(ctx context.Context, p *identity.Principal, f domain.AuditFilter) ([]domain.AuditEntry, int, error)
	ExportAudit(ctx context.Context, p *identity.Principal, f domain.AuditFilter, emit func(*domain.AuditEntry) error) error
	Usage(ctx context.Context, p *identity.Principal) (*identity.Usage, error)
	Retention(ctx context.Context, p *identity.Principal) (*identity.RetentionSettings, error)
	UpdateRetention(ctx context.Context, p *identity.Principal, patch identity.RetentionPatch) (*identity.RetentionSettings, error)

	Invite(ctx context.Context, p *identity.Principal, email string, role domain.Role) (*identity.CreatedInvitation, error)
	ListInvitations(ctx context.Context, p *identity.Principal) ([]domain.Invitation, error)
	RevokeInvitation(ctx context.Context, p *identity.Principal, id string) error
	ValidateInvitation(ctx context.Context, token string) (*identity.InvitationPreview, error)
	AcceptInvitation(ctx context.Context, p *identity.Principal, token string) (*identity.Accepted, error)
}

// Executions is the executions service: runs, their logs, projects, and the insights.
type Executions interface {
	Queue(ctx context.Context, p *identity.Principal, in executions.QueueInput) (*domain.Execution, error)
	List(ctx context.Context, p *identity.Principal, f store.ExecutionFilter) ([]domain.Execution, int, error)
	Get(ctx context.Context, p *identity.Principal, taskID string) (*domain.Execution, error)
	// GetListed is Get without the run's tests, analysis and tickets, which it does not read.
	GetListed(ctx context.Context, p *identity.Principal, taskID string) (*domain.Execution, error)
	ReadLog(ctx context.Context, p *identity.Principal, e *domain.Execution, from, limit int64, fn func([]byte) error) (int64, error)
	Cancel(ctx context.Context, p *identity.Principal, taskID string) (*domain.Execution, error)
	Delete(ctx context.Context, p *identity.Principal, taskID string) error
	// Pin pins (exempts from retention) or unpins a run.
	Pin(ctx context.Context, p *identity.Principal, taskID string, pinned bool) (*domain.Execution, error)
	FindForReport(ctx context.Context, orgID, taskID string) (*domain.Execution, error)

	Defaults(ctx context.Context, p *identity.Principal) (*executions.Defaults, error)
	TestsStructure(ctx context.Context, p *identity.Principal, image, projectID string) (*executions.TestsStructure, error)
	Insights(ctx context.Context, p *identity.Principal, image string) (*executions.Insights, error)
	// Overview is the organization's run health (the dashboard's /overview).
	Overview(ctx context.Context, p *identity.Principal) (*executions.Overview, error)

	CreateProject(ctx context.Context, p *identity.Principal, in executions.ProjectInput) (*domain.Project, error)
	ListProjects(ctx context.Context, p *identity.Principal) ([]domain.Project, error)
	GetProject(ctx context.Context, p *identity.Principal, id string) (*domain.Project, error)
	UpdateProject(ctx context.Context, p *identity.Principal, id string, in executions.ProjectInput) (*domain.Project, error)
	DeleteProject(ctx context.Context, p *identity.Principal, id string) error
}

// Billing is the billing service: checkout, portal, subscription, and the provider's events.
type Billing interface {
	Configured() bool
	WebhookConfigured() bool
	StartCheckout(ctx context.Context, p *identity.Principal, priceID, planID string) (*billing.Checkout, error)
	OpenPortal(ctx context.Context, p *identity.Principal) (string, error)
	Subscription(ctx context.Context, p *identity.Principal) (*billing.Subscription, error)
	Events(ctx context.Context, p *identity.Principal, limit int) ([]store.BillingEvent, error)
	HandleWebhook(ctx context.Context, payload []byte, signature string) (*billing.WebhookResult, error)
}

// TestCases is the manual test cases service: a project's test cases and their CSV import.
type TestCases interface {
	Create(ctx context.Context, p *identity.Principal, in testcases.Input) (*domain.TestCase, error)
	Get(ctx context.Context, p *identity.Principal, id string) (*domain.TestCase, error)
	List(ctx context.Context, p *identity.Principal, f store.TestCaseFilter) ([]domain.TestCase, int, error)
	Update(ctx context.Context, p *identity.Principal, id string, in testcases.Input) (*domain.TestCase, error)
	Delete(ctx context.Context, p *identity.Principal, id string) error
	Import(ctx context.Context, p *identity.Principal, projectID string, file []byte) (*testcases.ImportResult, error)
}

// Analyst is the failure analyst: analyses on request, people's triages, and the
// organization's model settings (its default model and own provider keys).
type Analyst interface {
	Reanalyse(ctx context.Context, p *identity.Principal, taskID string) error
	Triage(ctx context.Context, p *identity.Principal, taskID, category string) (*domain.Execution, error)
	Config(ctx context.Context, p *identity.Principal) (*analysis.Config, error)
	UpdateConfig(ctx context.Context, p *identity.Principal, patch analysis.ConfigPatch) (*analysis.Config, error)
}

// Planner is the automation planner's service: plans discovered, generated, saved, listed,
// opened and deleted.
type Planner interface {
	Discover(ctx context.Context, p *identity.Principal, in planning.DiscoverInput) (*planner.Discovery, error)
	Generate(ctx context.Context, p *identity.Principal, in planning.GenerateInput) (*domain.AutomationPlan, error)
	History(ctx context.Context, p *identity.Principal, projectID string) ([]domain.AutomationPlan, error)
	Open(ctx context.Context, p *identity.Principal, planID string) (*domain.AutomationPlan, error)
	Delete(ctx context.Context, p *identity.Principal, planID string) error
	FilterOptions(ctx context.Context, p *identity.Principal, projectID string) (*store.TestCaseOptions, error)
}

// Trackers is the tracker integrations' service: the organization's settings of each
// registered tracker (integrations.Trackers), unlinking any integration provider, and tickets
// created from runs. provider names the tracker ("linear").
type Trackers interface {
	Settings(ctx context.Context, p *identity.Principal, provider string) (*integrations.Settings, error)
	Save(ctx context.Context, p *identity.Principal, provider string, in integrations.Input) (*integrations.Settings, error)
	Remove(ctx context.Context, p *identity.Principal, provider string) (bool, error)
	CreateTicket(ctx context.Context, p *identity.Principal, provider string, in integrations.TicketInput) (*integrations.Created, error)
}

// Histories are tests' histories: a project's tests with their figures, a test's results, and
// quarantine.
type Histories interface {
	List(ctx context.Context, p *identity.Principal, f history.Filter) ([]domain.TrackedTest, int, error)
	Get(ctx context.Context, p *identity.Principal, testID string) (*history.Detail, error)
	Quarantine(ctx context.Context, p *identity.Principal, testID, reason string, until time.Time) (*domain.TrackedTest, error)
	Unquarantine(ctx context.Context, p *identity.Principal, testID string) (*domain.TrackedTest, error)
	RunTestIDs(ctx context.Context, p *identity.Principal, run *domain.Execution) (map[string]string, error)
	AutoQuarantine(ctx context.Context, p *identity.Principal, projectID string) (*float64, error)
	SetAutoQuarantine(ctx context.Context, p *identity.Principal, projectID string, rate *float64) error
}

// The real services satisfy the interfaces.
var (
	_ TokenVerifier = (*auth.Tokens)(nil)
	_ Identity      = (*identity.Service)(nil)
	_ Executions    = (*executions.Service)(nil)
	_ Billing       = (*billing.Service)(nil)
	_ TestCases     = (*testcases.Service)(nil)
	_ Analyst       = (*analysis.Service)(nil)
	_ Planner       = (*planning.Service)(nil)
	_ Trackers      = (*integrations.Service)(nil)
	_ Histories     = (*history.Service)(nil)
)
