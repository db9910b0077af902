// Package executions is the service behind projects and runs: it applies the queueing rules
// (plan limits, project defaults, the container contract's reserved names), keeps secrets
// sealed, and hands runs to the run plane through the executions table.
package executions

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"time"

	"verdict/internal/billing"
	"verdict/internal/control"
	"verdict/internal/crypto/secretbox"
	"verdict/internal/domain"
	"verdict/internal/identity"
	"verdict/internal/report"
	"verdict/internal/run"
	"verdict/internal/store"
)

// Service is the executions service.
type Service struct {
	store          store.Store
	box            *secretbox.Box
	backend        run.Backend
	reports        report.Store
	events         control.Events
	wake           func()
	stop           func(executionID string)
	queued         func(ctx context.Context, tx store.Store, e *domain.Execution) error
	alerts         *billing.Alerts
	clock          domain.Clock
	newID          domain.IDGen
	log            *slog.Logger
	defaultImage   string
	defaultBaseURL string
	allowedImages  []string
	planTimeouts   map[domain.Plan]time.Duration
	maxShards      map[domain.Plan]int
}

// Deps are the Service's collaborators and settings. Store, Box, Reports and Events are
// required; New fills in the others.
type Deps struct {
	Store   store.Store
	Box     *secretbox.Box
	Backend run.Backend // the embedded runner's, for tests-structure; nil when this server runs no suites
	Reports report.Store
	Events  control.Events
	Wake    func()                   // wakes the embedded runner after a run is queued; nil: none
	Stop    func(executionID string) // stops a run held by the embedded runner at once; nil: none
	Alerts  *billing.Alerts          // usage alerts as runs and projects are added; nil: none
	Clock   domain.Clock
	NewID   domain.IDGen
	Log     *slog.Logger
	// Defaults for runs that name neither image nor project.
	DefaultImage   string
	DefaultBaseURL string
	// AllowedImages are the server's image patterns (empty: every image); an organization's own
	// narrow them (domain.ImageAllowed).
	AllowedImages []string
	// PlanTimeouts cap a run's timeout per plan; a plan without an entry is capped at 24 h.
	PlanTimeouts map[domain.Plan]time.Duration
	// MaxShards caps a run's shards per plan; nil: domain.DefaultMaxShards.
	MaxShards map[domain.Plan]int
	// Queued is told of each run queued, in the transaction that stores it (a commit's pending
	// status enqueued in the outbox with it); its error fails the queueing. nil: none.
	Queued func(ctx context.Context, tx store.Store, e *domain.Execution) error
}

// New builds a Service.
func New(d Deps) *Service {
	if d.Wake == nil {
		d.Wake = func() {}
	}
	if d.Stop == nil {
		d.Stop = func(string) {}
	}
	if d.Queued == nil {
		d.Queued = func(context.Context, store.Store, *domain.Execution) error { return nil }
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
	if d.MaxShards == nil {
		d.MaxShards = domain.DefaultMaxShards
	}
	return &Service{maxShards: d.MaxShards, store: d.Store, box: d.Box, backend: d.Backend, reports: d.Reports, events: d.Events,
		wake: d.Wake, stop: d.Stop, queued: d.Queued, alerts: d.Alerts, clock: d.Clock, newID: d.NewID, log: d.Log,
		defaultImage: d.DefaultImage, defaultBaseURL: d.DefaultBaseURL, allowedImages: d.AllowedImages,
		planTimeouts: d.PlanTimeouts}
}

var (
	errNotFound     = domain.NotFound("Execution not found", "No such execution in your organization")
	errProject404   = domain.NotFound("Project not found", "No such project in your organization")
	errReadOnly     = domain.Forbidden("Forbidden", "Viewers cannot start, cancel or delete runs, or change projects")
	errReservedName = "is reserved by the container contract (BASE_URL, TASK_ID, CI, FRAMEWORK_AGNOSTIC)"
)

// errImageNotAllowed says which rule refused an image without telling which images are allowed.
func errImageNotAllowed(image string) *domain.Error {
	return domain.Forbidden("Image not allowed", "The image "+quote(image)+" is not allowed by this server's or your organization's image policy")
}

// imageAllowed applies the server's and the organization's image policy.
func (s *Service) imageAllowed(image string, org *domain.Organization) bool {
	return domain.ImageAllowed(image, s.allowedImages, org.AllowedImages)
}

// timeoutCap is the longest timeout a run of the plan may have.
func (s *Service) timeoutCap(plan domain.Plan) time.Duration {
	if d, ok := s.planTimeouts[plan]; ok {
		return d
	}
	return maxTimeoutSeconds * time.Second
}

// defaultTimeout is the timeout of a run that sets none: the house default, within the plan's cap.
func (s *Service) defaultTimeout(plan domain.Plan) time.Duration {
	return min(domain.DefaultTimeout, s.timeoutCap(plan))
}

// Defaults are what a run that names neither image nor project gets, for the caller's
// organization.
type Defaults struct {
	Image   string
	BaseURL string
	Timeout time.Duration // within the plan's cap
}

// Defaults answers the run defaults for the caller's organization (every role).
func (s *Service) Defaults(ctx context.Context, p *identity.Principal) (*Defaults, error) {
	org, err := s.store.Organizations().Get(ctx, p.OrgID)
	if err != nil {
		return nil, err
	}
	return &Defaults{Image: s.defaultImage, BaseURL: s.defaultBaseURL, Timeout: s.defaultTimeout(org.Plan)}, nil
}

// CountRunsSince counts the runs an organization queued since a moment (plan usage).
func (s *Service) CountRunsSince(ctx context.Context, orgID string, since time.Time) (int, error) {
	return s.store.Executions().CountSince(ctx, orgID, since)
}

// QueueInput is the body of POST /api/executions.
type QueueInput struct {
	Image          string
	Command        string
	Environment    string
	BaseURL        string
	Folder         string
	ProjectID      string
	EnvVars        map[string]string
	TaskID         string
	TimeoutSeconds int
	// Labels are the run's key:value labels (domain.ValidateLabels).
	Labels map[string]string
	// Shards is the number of containers the run is spread over (0: the project's, else 1);
	// Retries how many retry containers its failed tests get (nil: the project's, else 0).
	Shards  int
	Retries *int
	// SecretVars names the variables of EnvVars whose values are masked in the run's log like
	// a project's secrets (a schedule's secret variables).
	SecretVars []string
}

// Bounds of a queued run.
const (
	maxTimeoutSeconds = 24 * 60 * 60
	maxFieldLen       = 2048
	maxEnvVars        = 100
	maxEnvValueLen    = 32 << 10
)

// Queue validates and queues a run. It counts against the plan's maxTestRuns when queued (403
// past it); past maxConcurrentRuns it is not refused but waits PENDING with a queueReason; a
// taskId in use is 409; a project fills in what the request leaves out (applyProject). Its
// steps, in this order (which decides which refusal a request with several faults gets): the
// role, the request's own fields (checkQueueInput), the run drafted from them and the project
// (draft), its variables sealed (sealVariables), then, with the organization locked, the
// admission rules (admit).
func (s *Service) Queue(ctx context.Context, p *identity.Principal, in QueueInput) (*domain.Execution, error) {
	if !p.CanWrite() {
		return nil, errReadOnly
	}
	if err := checkQueueInput(in); err != nil {
		return nil, err
	}
	e, env, err := s.draft(ctx, p, in)
	if err != nil {
		return nil, err
	}
	if err := s.sealVariables(e, env, in.EnvVars, in.SecretVars); err != nil {
		return nil, err
	}
	generated := e.TaskID == ""
	s.shardDraft(e, in)
	parts, err := s.planShards(ctx, e, in.Shards)
	if err != nil {
		return nil, err
	}
	err = s.store.InTx(ctx, func(tx store.Store) error {
		if err := tx.Organizations().Lock(ctx, p.OrgID); err != nil {
			return err
		}
		if err := s.admit(ctx, tx, p.OrgID, e, in.TimeoutSeconds, generated); err != nil {
			return err
		}
		return s.createShards(ctx, tx, e, parts)
	})
	if err != nil {
		return nil, err
	}
	s.events.ExecutionUpdated(e)
	s.wake()
	return e, nil
}

// checkQueueInput checks the request's own fields, before anything is read.
func checkQueueInput(in QueueInput) error {
	for name, v := range map[string]string{"image": in.Image, "command": in.Command, "environment": in.Environment, "baseUrl": in.BaseURL, "folder": in.Folder} {
		if len(v) > maxFieldLen {
			return domain.BadRequest("Validation error", name+" is too long")
		}
	}
	// The runner splits the command the same way; a malformed one never reaches it.
	if _, err := run.ParseCommand(in.Command); err != nil {
		return domain.BadRequest("Validation error", err.Error())
	}
	if in.TaskID != "" && !domain.ValidTaskID(in.TaskID) {
		return domain.BadRequest("Invalid taskId", "taskId must be 1 to 64 characters of A-Z, a-z, 0-9, _ and -")
	}
	if in.TimeoutSeconds < 0 || in.TimeoutSeconds > maxTimeoutSeconds {
		return domain.BadRequest("Validation error", fmt.Sprintf("timeoutSeconds must be between 1 and %d", maxTimeoutSeconds))
	}
	if err := validateFolder(in.Folder); err != nil {
		return err
	}
	if in.BaseURL != "" && !validURL(in.BaseURL) {
		return domain.BadRequest("Validation error", "baseUrl must be an http(s) URL")
	}
	if len(in.EnvVars) > maxEnvVars {
		return domain.BadRequest("Validation error", fmt.Sprintf("at most %d envVars", maxEnvVars))
	}
	if err := checkShards(in.Shards, 0); in.Shards != 0 && err != nil {
		return err
	}
	if in.Retries != nil {
		if err := checkRetries(*in.Retries); err != nil {
			return err
		}
	}
	return domain.ValidateLabels(in.Labels)
}

// draft is the PENDING run the request describes: the project's settings for what it leaves
// out (with the project's variables in env), then the server's default image and target URL.
func (s *Service) draft(ctx context.Context, p *identity.Principal, in QueueInput) (*domain.Execution, run.RunEnv, error) {
	env := run.RunEnv{Vars: map[string]string{}}
	e := &domain.Execution{ID: s.newID(), OrganizationID: p.OrgID, TaskID: in.TaskID, Image: strings.TrimSpace(in.Image),
		Command: in.Command, Environment: in.Environment, BaseURL: in.BaseURL, Folder: in.Folder,
		TimeoutSeconds: in.TimeoutSeconds, TriggeredBy: p.UserID, ViaAPIKey: p.APIKeyID != "",
		Labels: in.Labels, Status: domain.ExecPending, QueuedAt: s.clock()}
	if in.ProjectID != "" {
		proj, err := s.store.Projects().Get(ctx, p.OrgID, in.ProjectID)
		if err != nil {
			return nil, env, notFound(err, errProject404)
		}
		if err := s.applyProject(e, proj, &env); err != nil {
			return nil, env, err
		}
	}
	if in.Environment != "" && !validEnvironment(in.Environment) {
		return nil, env, domain.BadRequest("Validation error", "environment must be development, staging or production")
	}
	if e.Image == "" {
		e.Image = s.defaultImage
	}
	if e.Image == "" {
		return nil, env, domain.BadRequest("Missing required fields", "image is required unless projectId names a project with an image")
	}
	if !domain.ValidImage(e.Image) {
		return nil, env, domain.BadRequest("Validation error", "image "+quote(e.Image)+" is not a valid image reference (e.g. registry.example.com/team/suite:1.2)")
	}
	if e.BaseURL == "" {
		e.BaseURL = s.defaultBaseURL
	}
	return e, env, nil
}

// sealVariables checks the request's variables, lays them over the project's in env, and
// seals them all into the run; only their names stay readable.
func (s *Service) sealVariables(e *domain.Execution, env run.RunEnv, vars map[string]string, secrets []string) error {
	for k, v := range vars {
		if err := validateEnv(k, v); err != nil {
			return err
		}
		// A request value that replaces a project secret stays masked like the secret.
		env.Vars[k] = v
	}
	for _, k := range secrets {
		if _, ok := vars[k]; ok && !slices.Contains(env.Secrets, k) {
			env.Secrets = append(env.Secrets, k)
		}
	}
	for k := range env.Vars {
		e.EnvNames = append(e.EnvNames, k)
	}
	sort.Strings(e.EnvNames)
	cipher, err := control.SealEnv(s.box, env)
	if err != nil {
		return err
	}
	e.EnvCipher = cipher
	return nil
}

// admit applies the admission rules to e in tx, with the organization locked, and stores it:
// the image policy, the plan's timeout cap (requested is the request's own timeout), the
// plan's maxTestRuns, the queueReason its maxConcurrentRuns gives, then the taskId (made
// again for a generated one in use), and the usage alert of the run counted.
func (s *Service) admit(ctx context.Context, tx store.Store, orgID string, e *domain.Execution, requested int, generated bool) error {
	org, err := tx.Organizations().Get(ctx, orgID)
	if err != nil {
		return err
	}
	if org.EraseAt != nil {
		return errErasing(org)
	}
	if !s.imageAllowed(e.Image, org) {
		return errImageNotAllowed(e.Image)
	}
	if err := s.capTimeout(e, requested, org.Plan); err != nil {
		return err
	}
	start, _ := domain.BillingPeriod(org, e.QueuedAt)
	used, err := tx.Executions().CountSince(ctx, orgID, start)
	if err != nil {
		return err
	}
	limits := org.Limits()
	if !domain.Allows(int64(limits.MaxTestRuns), int64(used)) {
		return domain.Forbidden("Test run limit exceeded",
			fmt.Sprintf("The %s plan allows %d test runs per billing period", org.Plan, limits.MaxTestRuns)).
			With("usage", map[string]any{"used": used, "limit": limits.MaxTestRuns, "percentUsed": domain.PercentUsed(int64(used), int64(limits.MaxTestRuns))})
	}
	if e.QueueReason, err = queueReason(ctx, tx, orgID, limits); err != nil {
		return err
	}
	if err := s.create(ctx, tx, e, generated); err != nil {
		return err
	}
	if err := s.queued(ctx, tx, e); err != nil {
		return err
	}
	return s.alerts.Check(ctx, tx, org, billing.Usage{Resource: billing.ResourceTestRuns,
		Used: int64(used + 1), Before: int64(used), Limit: int64(limits.MaxTestRuns)})
}

// capTimeout brings e's timeout within the plan's cap: an explicit timeout (requested) past it
// is refused; one from the project or the default is brought within it.
func (s *Service) capTimeout(e *domain.Execution, requested int, plan domain.Plan) error {
	limit := int(s.timeoutCap(plan) / time.Second)
	switch {
	case requested > limit:
		return domain.BadRequest("Validation error", fmt.Sprintf("timeoutSeconds must be at most %d on the %s plan", limit, plan))
	case e.TimeoutSeconds == 0:
		e.TimeoutSeconds = int(s.defaultTimeout(plan) / time.Second)
	case e.TimeoutSeconds > limit:
		e.TimeoutSeconds = limit
	}
	return nil
}

// queueReason says why a new run of the organization waits: a free run slot past its plan's
// maxConcurrentRuns (which never refuses a run), else a runner.
func queueReason(ctx context.Context, tx store.Store, orgID string, limits domain.Limits) (string, error) {
	active, err := tx.Executions().CountActive(ctx, orgID)
	if err != nil {
		return "", err
	}
	if limits.MaxConcurrentRuns != domain.Unlimited && active >= limits.MaxConcurrentRuns {
		return fmt.Sprintf("waiting for a free run slot: %d of %d in use", active, limits.MaxConcurrentRuns), nil
	}
	return "waiting for a runner", nil
}

// create stores e; a taskId in use is 409, unless the server made it: then it makes another,
// up to three times.
func (s *Service) create(ctx context.Context, tx store.Store, e *domain.Execution, generated bool) error {
	for attempt := 0; ; attempt++ {
		if generated {
			e.TaskID = newTaskID(s.newID())
		}
		err := tx.Executions().Create(ctx, e)
		if errors.Is(err, store.ErrConflict) {
			if generated && attempt < 3 {
				continue
			}
			return domain.Conflict("Task ID already in use", "An execution with this taskId exists in your organization")
		}
		return err
	}
}

// newTaskID makes a readable server-side task ID.
func newTaskID(id string) string { return "run-" + id }

// applyProject takes a project's image, folder, timeout, report folders, target URL and
// variables for what the request leaves out.
func (s *Service) applyProject(e *domain.Execution, proj *domain.Project, env *run.RunEnv) error {
	e.ProjectID = proj.ID
	if e.Image == "" {
		e.Image = proj.Image
	}
	if e.Folder == "" {
		e.Folder = proj.DefaultFolder
	}
	if e.TimeoutSeconds == 0 {
		e.TimeoutSeconds = proj.TimeoutSeconds
	}
	e.ReportFolders = proj.ReportFolders
	e.Shards, e.Retries = proj.Shards, proj.Retries // the request's replace them (shardDraft)
	if e.BaseURL == "" && e.Environment != "" {
		e.BaseURL = proj.TargetURLs[e.Environment]
	}
	for _, v := range proj.EnvVars {
		val := v.Value
		if v.Secret {
			plain, err := s.box.Open(v.Value)
			if err != nil {
				return fmt.Errorf("project secret %s: %w", v.Key, err)
			}
			val = string(plain)
			env.Secrets = append(env.Secrets, v.Key)
		}
		env.Vars[v.Key] = val
	}
	return nil
}

func notFound(err error, e *domain.Error) error {
	if errors.Is(err, store.ErrNotFound) {
		return e
	}
	return err
}
