package executions

import (
	"context"
	"errors"
	"slices"
	"sort"
	"strconv"
	"strings"

	"verdict/internal/domain"
	"verdict/internal/identity"
	"verdict/internal/run"
	"verdict/internal/store"
)

// Get returns a run of the caller's organization.
func (s *Service) Get(ctx context.Context, p *identity.Principal, taskID string) (*domain.Execution, error) {
	if !domain.ValidTaskID(taskID) {
		return nil, errNotFound
	}
	e, err := s.store.Executions().Get(ctx, p.OrgID, taskID)
	return e, notFound(err, errNotFound)
}

// FindForReport finds a run of organization orgID for the report route, the one request that
// reaches a service without a principal: a signed report link is bound to the execution's ID,
// which only the execution found here tells, so its signature is checked after this lookup.
// The lookup is therefore as cheap as a run can be read: as listed, without its parsed results
// or analysis. The caller checks the credential before serving anything of the run.
func (s *Service) FindForReport(ctx context.Context, orgID, taskID string) (*domain.Execution, error) {
	if !domain.ValidStoredTaskID(taskID) { // a shard's reports are under its own
		return nil, errNotFound
	}
	e, err := s.store.Executions().GetListed(ctx, orgID, taskID)
	return e, notFound(err, errNotFound)
}

// GetListed returns a run of the caller's organization as the run list shows it: without its
// tests, analysis and tickets, which are not read. For answers that need a run's identity,
// status and reports only.
func (s *Service) GetListed(ctx context.Context, p *identity.Principal, taskID string) (*domain.Execution, error) {
	if !domain.ValidStoredTaskID(taskID) { // a shard's (its log, ?shard=)
		return nil, errNotFound
	}
	e, err := s.store.Executions().GetListed(ctx, p.OrgID, taskID)
	return e, notFound(err, errNotFound)
}

// List lists the organization's runs, newest first, after CheckFilter.
func (s *Service) List(ctx context.Context, p *identity.Principal, f store.ExecutionFilter) ([]domain.Execution, int, error) {
	if err := CheckFilter(&f); err != nil {
		return nil, 0, err
	}
	return s.store.Executions().List(ctx, p.OrgID, f)
}

// CheckFilter refuses a run-list filter that no run could match, as a 400 naming the filter,
// and drops repeated statuses: every part of a filter is then as small as what a run holds,
// wherever the filter goes (the query, the store's page cache, which keys on it). Statuses
// are known ones; a project ID is an object ID (24 hexadecimal characters); an image is a
// reference as a run is queued with (domain.ValidImage, at most 512 characters); labels are at
// most domain.MaxLabels well-formed key:value pairs.
func CheckFilter(f *store.ExecutionFilter) error {
	statuses := f.Statuses[:0:0]
	for _, st := range f.Statuses {
		if !st.Valid() {
			return domain.BadRequest("Validation error", "unknown status "+quote(string(st)))
		}
		if !slices.Contains(statuses, st) {
			statuses = append(statuses, st)
		}
	}
	f.Statuses = statuses
	if f.ProjectID != "" && !domain.IsObjectID(f.ProjectID) {
		return domain.BadRequest("Validation error", "projectId filter "+quote(f.ProjectID)+" is not a project ID (24 hexadecimal characters)")
	}
	if f.Image != "" && !domain.ValidImage(f.Image) {
		return domain.BadRequest("Validation error", "image filter "+quote(f.Image)+" is not a valid image reference (at most 512 characters)")
	}
	if len(f.Labels) > domain.MaxLabels {
		return domain.BadRequest("Validation error", "at most "+strconv.Itoa(domain.MaxLabels)+" label filters")
	}
	for _, l := range f.Labels {
		if _, err := domain.ParseLabelFilter(l.Key + ":" + l.Value); err != nil {
			return err
		}
	}
	return nil
}

// ReadLog passes fn the log of e (a run found with Get) from byte offset from, a stored chunk
// at a time, and stops after limit bytes (limit < 0: at its end). It returns the bytes passed.
// The log store is keyed by execution ID alone, so the run's organization is checked here.
//
// The log of a run whose files retention deleted (FilesExpiredAt) reads as the note that says
// so, one line, at the same offsets as any log.
func (s *Service) ReadLog(ctx context.Context, p *identity.Principal, e *domain.Execution, from, limit int64, fn func(chunk []byte) error) (int64, error) {
	if e.OrganizationID != p.OrgID {
		return 0, errNotFound
	}
	if e.FilesExpiredAt != nil {
		text := domain.FilesExpiredNote(*e.FilesExpiredAt) + "\n"
		if from >= int64(len(text)) || limit == 0 {
			return 0, nil
		}
		rest := text[from:]
		if limit > 0 && int64(len(rest)) > limit {
			rest = rest[:limit]
		}
		return int64(len(rest)), fn([]byte(rest))
	}
	return s.store.Logs().ReadFrom(ctx, e.ID, from, limit, fn)
}

var errPinReadOnly = domain.Forbidden("Forbidden", "Viewers cannot pin or unpin runs")

// Pin pins the organization's run taskID (pinned true), which exempts it from retention until
// it is unpinned, or unpins it; admins and developers may. The change is audit-logged, in the
// transaction that makes it, and announced like any change of the run.
func (s *Service) Pin(ctx context.Context, p *identity.Principal, taskID string, pinned bool) (*domain.Execution, error) {
	if !p.CanWrite() {
		return nil, errPinReadOnly
	}
	e, err := s.GetListed(ctx, p, taskID)
	if err != nil {
		return nil, err
	}
	action := "execution.unpinned"
	if pinned {
		action = "execution.pinned"
	}
	err = s.store.InTx(ctx, func(tx store.Store) error {
		if err := tx.Executions().SetPinned(ctx, p.OrgID, taskID, pinned); err != nil {
			return notFound(err, errNotFound)
		}
		return tx.Audit().Append(ctx, &domain.AuditEntry{ID: s.newID(), OrganizationID: p.OrgID, ActorID: p.UserID,
			Action: action, TargetType: "execution", TargetID: e.ID, Details: map[string]any{"taskId": taskID}, CreatedAt: s.clock()})
	})
	if err != nil {
		return nil, err
	}
	if e, err = s.store.Executions().Get(ctx, p.OrgID, taskID); err != nil {
		return nil, notFound(err, errNotFound)
	}
	s.events.ExecutionUpdated(e)
	return e, nil
}

// Cancel cancels a pending run at once, or asks the runner of a running one to stop it.
func (s *Service) Cancel(ctx context.Context, p *identity.Principal, taskID string) (*domain.Execution, error) {
	if !p.CanWrite() {
		return nil, errReadOnly
	}
	e, err := s.Get(ctx, p, taskID)
	if err != nil {
		return nil, err
	}
	now, err := s.store.Executions().RequestCancel(ctx, p.OrgID, taskID, s.clock())
	switch {
	case errors.Is(err, store.ErrGuard):
		return nil, domain.Conflict("Execution already finished", "The execution has already ended with "+string(e.Status))
	case err != nil:
		return nil, notFound(err, errNotFound)
	}
	if !now {
		s.stop(e.ID)
		for _, part := range e.Parts { // a sharded run's containers, at once where they are this server's
			s.stop(part.ID)
		}
	}
	if e, err = s.store.Executions().Get(ctx, p.OrgID, taskID); err != nil {
		return nil, err
	}
	if now {
		s.events.ExecutionUpdated(e)
	}
	return e, nil
}

// Delete removes a run (cancelling it first when it is active), its logs and its reports,
// and gives the storage back. The run still counts against the period's maxTestRuns.
func (s *Service) Delete(ctx context.Context, p *identity.Principal, taskID string) error {
	if !p.CanWrite() {
		return errReadOnly
	}
	e, err := s.Get(ctx, p, taskID)
	if err != nil {
		return err
	}
	if !e.Status.Final() {
		if _, err := s.store.Executions().RequestCancel(ctx, p.OrgID, taskID, s.clock()); err != nil && !errors.Is(err, store.ErrGuard) {
			return err
		}
		s.stop(e.ID)
		for _, part := range e.Parts {
			s.stop(part.ID)
		}
	}
	for _, id := range append([]string{e.ID}, partIDs(e)...) {
		if err := s.store.Logs().DeleteAll(ctx, id); err != nil {
			return err
		}
	}
	if err := s.store.Executions().Delete(ctx, p.OrgID, taskID); err != nil {
		return notFound(err, errNotFound)
	}
	freed, err := s.reports.Delete(ctx, p.OrgID, taskID)
	if err != nil {
		s.log.Warn("deleting a run's reports failed", "task", taskID, "err", err)
	}
	for _, part := range e.Parts { // a sharded run's containers keep their reports under their own task IDs
		n, err := s.reports.Delete(ctx, p.OrgID, part.TaskID)
		if err != nil {
			s.log.Warn("deleting a shard's reports failed", "task", part.TaskID, "err", err)
		}
		freed += n
	}
	if freed > 0 {
		if err := s.store.Organizations().AddStorageUsed(ctx, p.OrgID, -freed); err != nil {
			return err
		}
	}
	return nil
}

// Insights are the performance insights of an image's recent runs.
type Insights struct {
	SampleSize        int
	AverageDurationMs int64
	LastRunDurationMs int64
	PassRate          float64 // percent of finished runs that passed (UNSTABLE counts as passed)
	IsRegression      bool    // the last run failed after a passing one, or took over 1.5× the average
	// FlakyTests are the tests of those runs that passed only on a retry in one of them, or
	// are flaky by their window (domain.Rates), as "suite › name", sorted.
	FlakyTests []string
}

// metricsSample is how many recent runs the insights look at.
const metricsSample = 20

// Insights computes them over the organization's last finished runs of an image
// (ExecutionRepo.ImageOutcomes) and those runs' results in their tests' histories
// (TestRepo.FlakyInRuns), never the runs' stored tests.
func (s *Service) Insights(ctx context.Context, p *identity.Principal, image string) (*Insights, error) {
	runs, err := s.store.Executions().ImageOutcomes(ctx, p.OrgID, image, metricsSample)
	if err != nil {
		return nil, err
	}
	m := &Insights{SampleSize: len(runs), FlakyTests: []string{}}
	if len(runs) == 0 {
		return m, nil
	}
	now := s.clock()
	var total int64
	passed := 0
	ids := make([]string, len(runs))
	for i := range runs {
		ids[i] = runs[i].ID
		total += runs[i].DurationMs(now)
		if runs[i].Status == domain.ExecPassed || runs[i].Status == domain.ExecUnstable {
			passed++
		}
	}
	m.AverageDurationMs = total / int64(len(runs))
	m.LastRunDurationMs = runs[0].DurationMs(now)
	m.PassRate = float64(passed*1000/len(runs)) / 10
	lastFailed := runs[0].Status == domain.ExecFailed || runs[0].Status == domain.ExecError
	prevPassed := len(runs) > 1 && (runs[1].Status == domain.ExecPassed || runs[1].Status == domain.ExecUnstable)
	m.IsRegression = (lastFailed && prevPassed) || (len(runs) > 2 && m.LastRunDurationMs*2 > m.AverageDurationMs*3)
	tests, err := s.store.Tests().FlakyInRuns(ctx, p.OrgID, ids)
	if err != nil {
		return nil, err
	}
	flaky := map[string]bool{} // a test of runs of two projects is listed once
	for _, t := range tests {
		if name := strings.TrimPrefix(t.Suite+" › "+t.Name, " › "); !flaky[name] {
			flaky[name] = true
			m.FlakyTests = append(m.FlakyTests, name)
		}
	}
	sort.Strings(m.FlakyTests)
	return m, nil
}

// TestsStructure is what GET /api/tests-structure answers.
type TestsStructure struct {
	Image   string
	Folders []string
	Note    string // why no folders were found, when none were
}

// TestsStructure lists the test folders under /app/tests of an image (or a project's image),
// read from the image without running it. The image must pass the image policy. Only members
// who may run suites make the engine pull an image it lacks: a viewer's request never reaches a
// registry. The engine's own error text goes to the log, never to the caller (it can tell an
// open port from a closed one).
func (s *Service) TestsStructure(ctx context.Context, p *identity.Principal, image, projectID string) (*TestsStructure, error) {
	if projectID != "" {
		proj, err := s.store.Projects().Get(ctx, p.OrgID, projectID)
		if err != nil {
			return nil, notFound(err, errProject404)
		}
		if image == "" {
			image = proj.Image
		}
	}
	if image == "" {
		image = s.defaultImage
	}
	if image == "" {
		return nil, domain.BadRequest("Missing required fields", "image or projectId is required")
	}
	if !domain.ValidImage(image) {
		return nil, domain.BadRequest("Validation error", "image "+quote(image)+" is not a valid image reference")
	}
	org, err := s.store.Organizations().Get(ctx, p.OrgID)
	if err != nil {
		return nil, err
	}
	if !s.imageAllowed(image, org) {
		return nil, errImageNotAllowed(image)
	}
	if s.backend == nil {
		return nil, domain.Unavailable("Runner unavailable", "No run backend is configured")
	}
	const root = "/app/tests"
	engine := run.Describe(s.backend) // "the Docker engine"
	dirs, err := s.backend.ListDir(ctx, image, root, p.CanWrite())
	switch {
	case errors.Is(err, run.ErrPathNotFound):
		return &TestsStructure{Image: image, Folders: []string{}, Note: "The image has no " + root + " folder"}, nil
	case errors.Is(err, run.ErrImageNotFound):
		if !p.CanWrite() {
			return nil, domain.NotFound("Image not found", "The image "+quote(image)+" is not on "+engine+" (viewers cannot make it pull images)")
		}
		return nil, domain.NotFound("Image not found", "The image "+quote(image)+" is not on "+engine+" and could not be pulled")
	case err != nil:
		s.log.Warn("reading an image's test folders failed", "image", image, "err", err)
		return nil, domain.Upstream("Image inspection failed", sentence(engine)+" could not read the test folders of "+quote(image))
	}
	out := &TestsStructure{Image: image, Folders: dirs}
	if len(dirs) == 0 {
		out.Note = "The " + root + " folder of the image has no sub-folders"
	}
	return out, nil
}

// sentence is s with its first letter in capitals, to begin a sentence.
func sentence(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// partIDs are the internal IDs of a sharded run's containers' records.
func partIDs(e *domain.Execution) []string {
	ids := make([]string, len(e.Parts))
	for i, part := range e.Parts {
		ids[i] = part.ID
	}
	return ids
}
