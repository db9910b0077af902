package store

import (
	"context"

	"verdict/internal/domain"
)

// TestCaseFilter narrows a listing of test cases; empty fields do not filter.
type TestCaseFilter struct {
	ProjectID string
	Suite     string // exact
	Tag       string // exact: test cases having this tag
	Limit     int    // 0: no limit
	Offset    int
}

// ImportResult counts what an import wrote.
type ImportResult struct {
	Imported int // test cases added
	Updated  int // test cases that replaced one of the same project, suite and title
}

// TestCaseOptions are the distinct suites and tags of a project's test cases, each sorted by
// their bytes (so the same on every database).
type TestCaseOptions struct {
	Suites []string // without the empty suite
	Tags   []string
}

// TestCaseRepo stores manual test cases. A test case belongs to one project of its
// organization, and is unique in it by suite and title (compared exactly); deleting the project
// deletes its test cases.
type TestCaseRepo interface {
	// Create stores c. ErrNotFound when c.ProjectID is not a project of c.OrganizationID;
	// ErrConflict when the project already has a test case with c's suite and title.
	Create(ctx context.Context, c *domain.TestCase) error
	Get(ctx context.Context, orgID, id string) (*domain.TestCase, error)
	// GetMany returns the organization's test cases among ids, in the order of ids; an ID that
	// is unknown, another organization's, or repeated is left out.
	GetMany(ctx context.Context, orgID string, ids []string) ([]domain.TestCase, error)
	// List returns a page of the organization's test cases ordered by suite, title and ID (by
	// their bytes), and the filter's total.
	List(ctx context.Context, orgID string, f TestCaseFilter) ([]domain.TestCase, int, error)
	// Update replaces the suite, title, tags, priority, preconditions, steps and update time of
	// the test case c.OrganizationID/c.ID (its project, creator and creation time stay).
	// ErrNotFound when there is none; ErrConflict when another test case of its project has
	// the new suite and title.
	Update(ctx context.Context, c *domain.TestCase) error
	Delete(ctx context.Context, orgID, id string) error
	// Import writes cases into the project in one transaction, upserting by suite and title:
	// a case whose suite and title the project already has (or an earlier case of the list
	// has) replaces that test case's fields as Update does, and is counted updated; any other
	// is added (with its ID, made when empty, and its CreatedBy and times) and counted
	// imported. Each case's ID is set to the stored test case's. ErrNotFound when the project
	// is not the organization's; nothing is written on any error.
	Import(ctx context.Context, orgID, projectID string, cases []domain.TestCase) (ImportResult, error)
	// FilterOptions lists the distinct suites and tags of the project's test cases (empty for
	// a project without any, or one of another organization).
	FilterOptions(ctx context.Context, orgID, projectID string) (TestCaseOptions, error)
}
