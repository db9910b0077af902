package store

import (
	"context"
	"time"

	"verdict/internal/domain"
)

// ProjectRepo stores projects.
type ProjectRepo interface {
	Create(ctx context.Context, p *domain.Project) error
	Get(ctx context.Context, orgID, id string) (*domain.Project, error)
	List(ctx context.Context, orgID string) ([]domain.Project, error) // oldest first
	Update(ctx context.Context, p *domain.Project) error              // by OrganizationID and ID
	Delete(ctx context.Context, orgID, id string) error
	Count(ctx context.Context, orgID string) (int, error)
	// GateRules returns the quality-gate rules of the organization's project, nil when it has
	// none; ErrNotFound for another organization's project.
	GateRules(ctx context.Context, orgID, id string) (*domain.GateRules, error)
	// SetGateRules replaces the project's gate rules (nil: none); ErrNotFound for another
	// organization's project.
	SetGateRules(ctx context.Context, orgID, id string, r *domain.GateRules) error
}

// BaselineQuery chooses a run's baseline: the newest run finished before Before (by finish
// time, then ID: a run finished at the same instant with a smaller BeforeID counts as before),
// in one of Statuses, of the project (of Image among runs without a project when ProjectID is
// ""), carrying every one of Labels.
type BaselineQuery struct {
	ProjectID, Image string
	Labels           []domain.Label
	Statuses         []domain.ExecStatus
	Before           time.Time
	BeforeID         string
}

// ExecutionFilter narrows a listing.
type ExecutionFilter struct {
	Statuses  []domain.ExecStatus
	ProjectID string
	Image     string
	// Labels: runs carrying every one of these labels.
	Labels []domain.Label
	Limit  int
	Offset int
}

// Finish is what a runner reports when a run ends.
type Finish struct {
	Status      domain.ExecStatus
	Error       string
	ExitCode    *int
	FinishedAt  time.Time
	Summary     domain.Summary
	Tests       []domain.TestResult
	ReportDirs  []string
	ReportBytes int64
	Notes       []string

	// ReportIndexes are those of ReportDirs holding an index.html; nil: not recorded.
	ReportIndexes []string

	// Analysis is the run's failure analysis; nil: none (left as it is when Status is ANALYZING).
	Analysis *domain.Analysis

	// QuarantinedFailures are the run's failed tests that were quarantined; nil: none.
	QuarantinedFailures []domain.QuarantinedFailure
}

// ExecutionRepo stores executions and is the run queue.
type ExecutionRepo interface {
	// Create queues an execution; ErrConflict when the organization already has its TaskID.
	Create(ctx context.Context, e *domain.Execution) error
	// Get returns the organization's run taskID whole, with its Tickets.
	Get(ctx context.Context, orgID, taskID string) (*domain.Execution, error)
	// GetListed returns the organization's run taskID as List shows it: without Tests,
	// EnvCipher, ReportFolders, Analysis and Tickets, which are not read. For the routes that
	// need a run's identity, status and reports, never its results (the report route, which
	// reads it before its credential can be checked).
	GetListed(ctx context.Context, orgID, taskID string) (*domain.Execution, error)
	// GetByID finds an execution by internal ID across organizations, whole, with its Tickets:
	// for the run plane only, which acts on runs it was handed, never on a tenant's request.
	GetByID(ctx context.Context, id string) (*domain.Execution, error)
	// List returns a page of the organization's runs, newest first, without Tests, EnvCipher,
	// ReportFolders, Analysis and Tickets, and the filter's total. The page may be shared with other callers
	// (a cache's): read it, do not change it.
	List(ctx context.Context, orgID string, f ExecutionFilter) ([]domain.Execution, int, error)
	CountSince(ctx context.Context, orgID string, since time.Time) (int, error) // runs queued since
	CountActive(ctx context.Context, orgID string) (int, error)                 // RUNNING or ANALYZING
	// ActiveByRunner counts the organization's runs going (RUNNING or ANALYZING) by the runner
	// ID that holds them; runners holding none of them are absent.
	ActiveByRunner(ctx context.Context, orgID string) (map[string]int, error)
	// CancelRequested tells which of ids, runs held by process instance of runner runnerID, a
	// user asked to cancel, in the order of ids: one query for the ids a runner holds (unknown
	// ids and other runners' runs are left out), for the run plane only.
	CancelRequested(ctx context.Context, runnerID, instance string, ids []string) ([]string, error)
	// ActiveCounts counts every organization's runs waiting (PENDING) and going (RUNNING or
	// ANALYZING), for the metrics; one indexed query.
	ActiveCounts(ctx context.Context) (pending, running int, err error)

	// Claim atomically moves a PENDING execution to RUNNING for runnerID and its process
	// instance (recorded as RunnerInstance; "" for the embedded runner), with a lease until
	// leaseUntil: among organizations with a free run slot, one with the fewest runs going, and
	// its oldest run (fair share: a long-running tenant never holds every slot as others queue).
	// Slots per organization come from limitFor(plan). FIFO within an organization; an
	// organization at its limit is skipped, so its backlog never blocks another's. Nil, nil
	// when nothing is claimable. claim, the remote runner's key for this ask ("" for none), is
	// kept with the run for Claimed.
	Claim(ctx context.Context, runnerID, instance, claim string, now, leaseUntil time.Time, limitFor func(domain.Plan) int) (*domain.Execution, error)
	// Claimed is the run that runnerID's process instance claimed under claim, while it holds
	// it (RUNNING or ANALYZING): the answer to an ask repeated after its answer was lost, on
	// whichever replica it reaches. ErrNotFound otherwise.
	Claimed(ctx context.Context, runnerID, instance, claim string) (*domain.Execution, error)
	// SetQueueReason records why a PENDING run waits.
	SetQueueReason(ctx context.Context, id, reason string) error
	// Heartbeat extends the lease of a RUNNING execution held by runnerID and reports whether a
	// cancel was requested. ErrNotFound when the run is no longer this runner's.
	Heartbeat(ctx context.Context, id, runnerID string, leaseUntil time.Time) (cancel bool, err error)
	SetContainer(ctx context.Context, id, containerID string) error
	// Finish ends a RUNNING execution held by runnerID; ErrNotFound when it was already ended.
	Finish(ctx context.Context, id, runnerID string, f Finish) error
	// SetAnalysis replaces the analysis of the organization's run id if it is FAILED or
	// UNSTABLE (analysed again on request); ErrNotFound otherwise.
	SetAnalysis(ctx context.Context, orgID, id string, a *domain.Analysis) error
	// SetGate records the quality gate's judgement of the organization's run (by internal ID);
	// nil clears it. ErrNotFound for another organization's run.
	SetGate(ctx context.Context, orgID, id string, g *domain.Gate) error
	// Baseline returns the organization's run that q chooses, whole but for its Tickets (it is
	// read to be compared with); nil, nil when there is none. One query on the organization's
	// runs by finish time.
	Baseline(ctx context.Context, orgID string, q BaselineQuery) (*domain.Execution, error)
	// Expired lists RUNNING executions whose lease ended before now.
	Expired(ctx context.Context, now time.Time) ([]domain.Execution, error)
	// ExtendLeases moves the lease of every RUNNING or ANALYZING run that ends before until to
	// until, in one conditional write (a longer lease is left as it is), and returns how many
	// it moved: after an outage of the database the reaper gives every runner time to renew.
	ExtendLeases(ctx context.Context, until time.Time) (int, error)
	// EndExpired ends an execution whose lease expired as ERROR with reason (no-op if renewed).
	EndExpired(ctx context.Context, id string, now time.Time, reason string) (bool, error)
	// SettleExpired ends an ANALYZING run whose lease ended before now with status (the verdict
	// it had reached) and analysis, keeping the outcome it recorded; false, nil when a
	// heartbeat renewed the lease first or the run is not ANALYZING.
	SettleExpired(ctx context.Context, id string, now time.Time, status domain.ExecStatus, a *domain.Analysis) (bool, error)
	// Shards lists the records of a sharded run's containers (its shards, then its retry
	// containers), by the run's internal ID.
	Shards(ctx context.Context, parentID string) ([]domain.Execution, error)
	// ClaimMerge makes holder the one that settles the RUNNING sharded run parentID (its last
	// container ended), with a lease until leaseUntil for the reaper; false when another did.
	ClaimMerge(ctx context.Context, parentID, holder string, leaseUntil time.Time) (bool, error)
	// Stranded lists the sharded runs still RUNNING, not being settled, whose containers have
	// all ended (their last shard's end was not followed by the run's settling), by ID.
	Stranded(ctx context.Context) ([]string, error)
	// RequeueLost puts a shard whose lease expired before now, and that was never started
	// again, back to PENDING for another runner (its log so far dropped, Attempt 1); false
	// when it was renewed, ended or started again already.
	RequeueLost(ctx context.Context, id string, now time.Time, reason string) (bool, error)
	// RequestCancel cancels a PENDING run at once (true) or flags a RUNNING one for its runner.
	// A sharded run's shards are cancelled or flagged with it.
	RequestCancel(ctx context.Context, orgID, taskID string, now time.Time) (cancelledNow bool, err error)
	Delete(ctx context.Context, orgID, taskID string) error
	// ListPending lists PENDING executions oldest first (to explain why they wait).
	ListPending(ctx context.Context, limit int) ([]domain.Execution, error)
	// ListFinishedForImage lists an organization's finished runs of an image, newest first (the
	// analyser's history of an image).
	// Their tests are read newest first up to a bound of 16 MiB of stored results; the runs
	// past it come without them.
	ListFinishedForImage(ctx context.Context, orgID, image string, limit int) ([]domain.Execution, error)
	// SetPinned pins (exempts from retention) or unpins the organization's run taskID, whatever
	// its status; ErrNotFound when the organization has no such run.
	SetPinned(ctx context.Context, orgID, taskID string, pinned bool) error
	// ExpireFiles marks the files of up to limit of the organization's runs expired at at: runs
	// in a final status that finished before finishedBefore, not pinned, their files not expired
	// yet, oldest first. Each is marked in one conditional write with FilesExpiredAt = at, its
	// ReportBytes 0, its ReportDirs and ReportIndexes empty and note appended to its Notes, and
	// the organization's storage goes down by the report bytes of the runs marked, in the same
	// transaction: a run is marked (and its bytes released) once, however many callers race.
	// It returns the runs it marked, with the report bytes they held; their log and report
	// files are the caller's to delete.
	ExpireFiles(ctx context.Context, orgID string, finishedBefore, at time.Time, note string, limit int) ([]RunFiles, error)
	// ListExpired lists up to limit of the organization's runs that finished before
	// finishedBefore, not pinned, whose files have expired, oldest first: the runs retention
	// deletes.
	ListExpired(ctx context.Context, orgID string, finishedBefore time.Time, limit int) ([]RunFiles, error)
	// DeleteExpired deletes those of the organization's runs ids that still qualify as
	// ListExpired lists them at finishedBefore (a run pinned meanwhile stays), with everything
	// that references them, and returns how many it deleted. The run ledger keeps them.
	DeleteExpired(ctx context.Context, orgID string, ids []string, finishedBefore time.Time) (int, error)
	// Outcomes lists the organization's runs queued at or after since that ended PASSED,
	// FAILED, UNSTABLE or ERROR (not CANCELLED, not still going), newest queued first, at most
	// limit (limit <= 0: none), with only what the run-health overview reads (their tests are
	// read from their tests' histories: TestRepo).
	Outcomes(ctx context.Context, orgID string, since time.Time, limit int) ([]RunOutcome, error)
	// ImageOutcomes lists the organization's runs of image in a final status (CANCELLED and
	// ERROR included), newest queued first, at most limit (limit <= 0: none), as Outcomes
	// reads them: an image's insights.
	ImageOutcomes(ctx context.Context, orgID, image string, limit int) ([]RunOutcome, error)
}

// RunFiles names a run whose files retention handles: its IDs and the report bytes its
// reports counted in the organization's storage.
type RunFiles struct {
	ID          string
	TaskID      string
	ReportBytes int64
}

// RunOutcome is a finished run as the run-health overview and an image's insights read it:
// its project, verdict and times; nothing of its tests, variables, reports or analysis.
type RunOutcome struct {
	ID         string // internal: its results in TestRepo are by it
	TaskID     string
	ProjectID  string
	Status     domain.ExecStatus
	Error      string
	QueuedAt   time.Time
	StartedAt  *time.Time
	FinishedAt *time.Time
}

// DurationMs is the run's start-to-finish time in milliseconds (to now while it runs; 0 for a
// run that never started), as domain.Execution.DurationMs.
func (r *RunOutcome) DurationMs(now time.Time) int64 {
	if r.StartedAt == nil {
		return 0
	}
	end := now
	if r.FinishedAt != nil {
		end = *r.FinishedAt
	}
	return end.Sub(*r.StartedAt).Milliseconds()
}

// LogRepo stores run logs as ordered chunks, each at its byte offset in the log. A run's
// chunks come from one writer (its runner), in increasing seq order.
type LogRepo interface {
	// Append stores chunk after the last one. A seq not above the last stored one is
	// ErrConflict (a retried append can treat that as done); an unknown run, or one that has
	// reached its final status (its log is complete), is ErrNotFound.
	Append(ctx context.Context, executionID string, seq int, chunk string) error
	// ReadFrom passes fn the log's bytes from byte offset from, in order, a chunk (or part of
	// one) at a time, and stops after limit bytes (limit < 0: at the end). p is valid only
	// during the call. It returns the bytes passed; fn's error stops the read and is returned.
	ReadFrom(ctx context.Context, executionID string, from, limit int64, fn func(p []byte) error) (int64, error)
	// Read returns the whole log so far, in memory: for tests and small logs (serve logs with
	// ReadFrom).
	Read(ctx context.Context, executionID string) (string, error)
	// Size is the log's length in bytes so far (0 for none), where ReadFrom of a tail starts.
	Size(ctx context.Context, executionID string) (int64, error)
	DeleteAll(ctx context.Context, executionID string) error
	// DeleteChunks deletes up to limit log chunks of the runs executionIDs (a bounded write:
	// call it again until it deletes fewer than limit) and says how many it deleted.
	DeleteChunks(ctx context.Context, executionIDs []string, limit int) (int, error)
}

// FailureOccurrence is one failed test of a run, by its signature.
type FailureOccurrence struct {
	Signature string
	Test      string
}

// SignatureHistory is how often a failure signature occurred in an organization's runs.
type SignatureHistory struct {
	Failures    int    // failed tests with the signature, over all the runs
	FirstTaskID string // the taskId of the earliest queued run with it
}

// AnalysisRepo keeps what failure analysis learns across an organization's runs.
type AnalysisRepo interface {
	// RecordFailures sets the failure signatures of a run (replacing those recorded for it
	// before); they go when the run is deleted.
	RecordFailures(ctx context.Context, orgID, executionID, taskID string, queuedAt time.Time, failures []FailureOccurrence) error
	// History tells, for each of signatures seen in the organization's runs, how often and
	// since which run; signatures never seen are absent. excludeID leaves out one run (the one
	// being analysed, when it is analysed again).
	History(ctx context.Context, orgID, excludeID string, signatures []string) (map[string]SignatureHistory, error)
	// AddTriages records people's categories for failure signatures.
	AddTriages(ctx context.Context, ts []domain.Triage) error
	// Triages lists the organization's triages, newest first, at most limit.
	Triages(ctx context.Context, orgID string, limit int) ([]domain.Triage, error)
}
