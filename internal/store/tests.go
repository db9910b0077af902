package store

import (
	"context"
	"time"

	"verdict/internal/domain"
)

// TestFilter narrows a listing of tracked tests.
type TestFilter struct {
	ProjectID string // required unless Scope is set
	Scope     string // a domain.TestScope; overrides ProjectID
	Query     string // a case-insensitive substring of the suite or name
	// Status: only tests whose newest result has it ("": any).
	Status domain.TestStatus
	// Flaky: only tests whose window is flaky (domain.Rates); Quarantined: only tests under
	// an active quarantine at Now.
	Flaky, Quarantined bool
	Now                time.Time
	Limit, Offset      int
}

// TestName is a test's identity within its scope.
type TestName struct{ Suite, Name string }

// RunResults is what recording a finished run's tests needs: the run and its outcomes, each
// with Suite and Name set (TestID is found or made by the store).
type RunResults struct {
	Run      *domain.Execution
	Outcomes []domain.TestOutcome
}

// TestRepo stores tests' histories: a tracked test per identity (organization, scope, suite,
// name) with the aggregates of its results, and every result.
type TestRepo interface {
	TestOverviewRepo // the overview's and the insights' reads (testsoverview.go)

	// Record stores a finished run's outcomes, making the tests first seen, and updates each
	// test's aggregates (domain.TrackedTest.Merge), in one transaction, and marks the run
	// recorded. Recording a run again changes nothing.
	Record(ctx context.Context, r RunResults) error
	// Unrecorded lists finished runs (any organization) whose tests are not recorded yet,
	// oldest finished first, at most limit, with their tests: the backfill's and the
	// recorder's catch-up queue.
	Unrecorded(ctx context.Context, limit int) ([]domain.Execution, error)

	// List returns a page of the organization's tests matching f, most recently seen first,
	// and the filter's total.
	List(ctx context.Context, orgID string, f TestFilter) ([]domain.TrackedTest, int, error)
	// Get returns the organization's test; ErrNotFound for another organization's.
	Get(ctx context.Context, orgID, testID string) (*domain.TrackedTest, error)
	// History returns the test's newest results, newest first, at most limit.
	History(ctx context.Context, orgID, testID string, limit int) ([]domain.TestOutcome, error)
	// ForRun returns the outcomes recorded for the organization's run (by internal ID), with
	// their tests' Suite and Name, in no particular order.
	ForRun(ctx context.Context, orgID, executionID string) ([]domain.TestOutcome, error)
	// IDs returns the IDs of the scope's tests named, by name; names without a test are left
	// out. A few statements for thousands of names.
	IDs(ctx context.Context, orgID, scope string, names []TestName) (map[TestName]string, error)
	// Quarantined returns the scope's tests under a quarantine active at now.
	Quarantined(ctx context.Context, orgID, scope string, now time.Time) ([]domain.TrackedTest, error)
	// SetQuarantine sets (q non-nil) or lifts (nil) the organization's test's quarantine;
	// ErrNotFound for another organization's test.
	SetQuarantine(ctx context.Context, orgID, testID string, q *domain.Quarantine) error

	AutoQuarantineRepo
}

// AutoQuarantineRepo keeps a project's automatic quarantine rule: the flake rate from which
// its tests are quarantined as their results are recorded (nil: off).
type AutoQuarantineRepo interface {
	// AutoQuarantineRate is the organization's project's rule; ErrNotFound for another
	// organization's project.
	AutoQuarantineRate(ctx context.Context, orgID, projectID string) (*float64, error)
	SetAutoQuarantineRate(ctx context.Context, orgID, projectID string, rate *float64) error
}
