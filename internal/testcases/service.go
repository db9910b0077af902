// Package testcases is the service behind manual test cases: the tests people carry out by
// hand, kept per project, that the automation planner reads. It checks the caller's role and
// that the project is the caller's organization's, validates the fields, and imports CSV files
// exported by test-management tools (csv.go).
package testcases

import (
	"context"
	"errors"
	"log/slog"

	"verdict/internal/domain"
	"verdict/internal/identity"
	"verdict/internal/store"
)

// Service is the test cases service.
type Service struct {
	store store.Store
	clock domain.Clock
	newID domain.IDGen
	log   *slog.Logger
}

// Deps are the Service's collaborators. Store is required; New fills in the others.
type Deps struct {
	Store store.Store
	Clock domain.Clock
	NewID domain.IDGen
	Log   *slog.Logger
}

// New builds a Service.
func New(d Deps) *Service {
	if d.Clock == nil {
		d.Clock = domain.SystemClock
	}
	if d.NewID == nil {
		d.NewID = domain.NewID
	}
	if d.Log == nil {
		d.Log = slog.Default()
	}
	return &Service{store: d.Store, clock: d.Clock, newID: d.NewID, log: d.Log}
}

// Page sizes of a listing.
const (
	DefaultListLimit = 50
	MaxListLimit     = 200
)

var (
	errNotFound     = domain.NotFound("Test case not found", "No such test case in your organization")
	errProject404   = domain.NotFound("Project not found", "No such project in your organization")
	errReadOnly     = domain.Forbidden("Forbidden", "Viewers cannot create, change, import or delete test cases")
	errTaken        = domain.Conflict("Test case already exists", "The project already has a test case with this suite and title")
	errImportRace   = domain.Conflict("Import conflict", "The project's test cases changed during the import; nothing was imported, import the file again")
	errNoProjectID  = domain.BadRequest("Missing required fields", "projectId is required")
	errMissingTitle = domain.BadRequest("Missing required fields", "title is required")
)

// Input is a test case's fields as sent; nil fields are left as they are on update. ProjectID
// is for creation only.
type Input struct {
	ProjectID     string
	Title         *string
	Suite         *string
	Tags          *[]string
	Priority      *string
	Preconditions *string
	Steps         *[]domain.TestStep
}

// apply sets the fields sent.
func (in Input) apply(c *domain.TestCase) {
	if in.Title != nil {
		c.Title = *in.Title
	}
	if in.Suite != nil {
		c.Suite = *in.Suite
	}
	if in.Tags != nil {
		c.Tags = *in.Tags
	}
	if in.Priority != nil {
		c.Priority = domain.Priority(*in.Priority)
	}
	if in.Preconditions != nil {
		c.Preconditions = *in.Preconditions
	}
	if in.Steps != nil {
		c.Steps = *in.Steps
	}
}

// Create adds a test case to a project of the caller's organization (admins and developers).
func (s *Service) Create(ctx context.Context, p *identity.Principal, in Input) (*domain.TestCase, error) {
	if !p.CanWrite() {
		return nil, errReadOnly
	}
	if in.ProjectID == "" {
		return nil, errNoProjectID
	}
	if in.Title == nil {
		return nil, errMissingTitle
	}
	now := s.clock()
	c := &domain.TestCase{ID: s.newID(), OrganizationID: p.OrgID, ProjectID: in.ProjectID, CreatedBy: p.UserID,
		CreatedAt: now, UpdatedAt: now}
	in.apply(c)
	if err := c.Normalize(); err != nil {
		return nil, err
	}
	if err := s.checkProject(ctx, p, in.ProjectID); err != nil {
		return nil, err
	}
	if err := s.store.TestCases().Create(ctx, c); err != nil {
		return nil, storeErr(err, errProject404)
	}
	return c, nil
}

// Get returns a test case of the caller's organization (every role).
func (s *Service) Get(ctx context.Context, p *identity.Principal, id string) (*domain.TestCase, error) {
	c, err := s.store.TestCases().Get(ctx, p.OrgID, id)
	if err != nil {
		return nil, storeErr(err, errNotFound)
	}
	return c, nil
}

// List returns a page of a project's test cases, ordered by suite and title, and the total the
// filter matches (every role). f.ProjectID is required; a limit of 0 is DefaultListLimit, and
// one above MaxListLimit is brought down to it.
func (s *Service) List(ctx context.Context, p *identity.Principal, f store.TestCaseFilter) ([]domain.TestCase, int, error) {
	if f.ProjectID == "" {
		return nil, 0, errNoProjectID
	}
	if err := s.checkProject(ctx, p, f.ProjectID); err != nil {
		return nil, 0, err
	}
	switch {
	case f.Limit <= 0:
		f.Limit = DefaultListLimit
	case f.Limit > MaxListLimit:
		f.Limit = MaxListLimit
	}
	f.Offset = max(f.Offset, 0)
	return s.store.TestCases().List(ctx, p.OrgID, f)
}

// Update changes the fields sent of a test case (admins and developers); its project stays.
func (s *Service) Update(ctx context.Context, p *identity.Principal, id string, in Input) (*domain.TestCase, error) {
	if !p.CanWrite() {
		return nil, errReadOnly
	}
	c, err := s.store.TestCases().Get(ctx, p.OrgID, id)
	if err != nil {
		return nil, storeErr(err, errNotFound)
	}
	in.apply(c)
	if err := c.Normalize(); err != nil {
		return nil, err
	}
	c.UpdatedAt = s.clock()
	if err := s.store.TestCases().Update(ctx, c); err != nil {
		return nil, storeErr(err, errNotFound)
	}
	return c, nil
}

// Delete deletes a test case (admins and developers).
func (s *Service) Delete(ctx context.Context, p *identity.Principal, id string) error {
	if !p.CanWrite() {
		return errReadOnly
	}
	return storeErr(s.store.TestCases().Delete(ctx, p.OrgID, id), errNotFound)
}

// ImportResult is what an import did: test cases added, test cases of the same suite and
// title replaced, and the records skipped.
type ImportResult struct {
	Imported int
	Updated  int
	Skipped  []Skip
}

// Import reads a CSV file (see csv.go) into a project of the caller's organization (admins and
// developers), in one transaction: a test case whose suite and title the project has replaces
// that one's fields, any other is added; a malformed file stores nothing. The caller bounds the
// file to MaxImportBytes.
func (s *Service) Import(ctx context.Context, p *identity.Principal, projectID string, file []byte) (*ImportResult, error) {
	if !p.CanWrite() {
		return nil, errReadOnly
	}
	if projectID == "" {
		return nil, errNoProjectID
	}
	if err := s.checkProject(ctx, p, projectID); err != nil {
		return nil, err
	}
	parsed, err := ParseCSV(file)
	if err != nil {
		return nil, err
	}
	out := &ImportResult{Skipped: parsed.Skipped}
	if len(parsed.Rows) == 0 {
		return out, nil
	}
	now := s.clock()
	cases := make([]domain.TestCase, len(parsed.Rows))
	for i, r := range parsed.Rows {
		c := r.Case
		c.ID, c.OrganizationID, c.ProjectID, c.CreatedBy, c.CreatedAt, c.UpdatedAt = s.newID(), p.OrgID, projectID, p.UserID, now, now
		cases[i] = c
	}
	res, err := s.store.TestCases().Import(ctx, p.OrgID, projectID, cases)
	switch {
	case errors.Is(err, store.ErrConflict):
		return nil, errImportRace
	case err != nil:
		return nil, storeErr(err, errProject404)
	}
	out.Imported, out.Updated = res.Imported, res.Updated
	s.log.LogAttrs(ctx, slog.LevelInfo, "test cases imported", slog.String("organization", p.OrgID),
		slog.String("project", projectID), slog.Int("imported", res.Imported), slog.Int("updated", res.Updated),
		slog.Int("skipped", len(parsed.Skipped)))
	return out, nil
}

// checkProject answers 404 unless the project is the caller's organization's.
func (s *Service) checkProject(ctx context.Context, p *identity.Principal, projectID string) error {
	if !domain.IsObjectID(projectID) {
		return errProject404
	}
	_, err := s.store.Projects().Get(ctx, p.OrgID, projectID)
	return storeErr(err, errProject404)
}

// storeErr turns the store's not-found into notFound and its conflict into errTaken.
func storeErr(err error, notFound *domain.Error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrNotFound):
		return notFound
	case errors.Is(err, store.ErrConflict):
		return errTaken
	}
	return err
}
