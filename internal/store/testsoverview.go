package store

import (
	"context"
	"time"

	"verdict/internal/domain"
)

// TestOverviewRepo reads tests' histories for the run-health overview and an image's insights:
// the bounded, indexed reads that stand in for reading many runs' stored tests.
type TestOverviewRepo interface {
	// Flaking returns the organization's tests seen at or after since whose window holds a
	// flake event (a flake rate above 0: domain.Rates), most recently seen first, at most
	// limit: the run-health overview's flaky tests are among them.
	Flaking(ctx context.Context, orgID string, since time.Time, limit int) ([]domain.TrackedTest, error)
	// ResultsFrom returns the organization's results of each test of from at or after its
	// time, in no particular order: from a test's window's oldest point on, the results its
	// window was made from (with what the window does not keep: retries, messages).
	ResultsFrom(ctx context.Context, orgID string, from []TestFrom) ([]domain.TestOutcome, error)
	// FirstFailed returns, for each of the organization's runs named (by internal ID) with a
	// failed result, its first failed test by suite then name (bytewise), with Suite and Name;
	// in no particular order.
	FirstFailed(ctx context.Context, orgID string, executionIDs []string) ([]domain.TestOutcome, error)
	// FlakyInRuns returns the organization's tests with a result in the runs named (by
	// internal ID) that are flaky by their window (domain.Rates) or passed only on a retry in
	// one of those runs, each once, in no particular order.
	FlakyInRuns(ctx context.Context, orgID string, executionIDs []string) ([]domain.TrackedTest, error)
}

// TestFrom names a test's results from a time on (TestRepo.ResultsFrom).
type TestFrom struct {
	TestID string
	From   time.Time
}
