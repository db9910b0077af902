// Package history is the service behind tests' histories and release gates: every finished
// run's results recorded as rows (recorder.go, with the catch-up of runs not recorded yet),
// tests listed and read with their figures, quarantine (quarantine.go), the quality gate of a
// project's runs against their baseline (gate.go) and two runs compared (compare.go).
package history

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"time"

	"verdict/internal/domain"
	"verdict/internal/identity"
	"verdict/internal/store"
)

// Service is the history service.
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

// Bounds of the routes.
const (
	DefaultListLimit = 50
	MaxListLimit     = 200
	// HistoryLimit is how many of a test's newest results its page reads.
	HistoryLimit = 100
)

var (
	errTest404    = domain.NotFound("Test not found", "No such test in your organization")
	errProject404 = domain.NotFound("Project not found", "No such project in your organization")
	errReadOnly   = domain.Forbidden("Forbidden", "Viewers cannot quarantine tests")
)

// Filter is a listing's query as sent.
type Filter struct {
	ProjectID   string
	Image       string // the tests of runs of this image without a project, when ProjectID is ""
	Query       string
	Status      string
	Flaky       bool
	Quarantined bool
	Limit       int
	Offset      int
}

// List returns a page of the organization's tests matching f, most recently seen first, and
// the filter's total. Every member may read them.
func (s *Service) List(ctx context.Context, p *identity.Principal, f Filter) ([]domain.TrackedTest, int, error) {
	if f.Limit <= 0 {
		f.Limit = DefaultListLimit
	}
	if f.Limit > MaxListLimit {
		return nil, 0, domain.BadRequest("Validation error", "limit must be at most 200")
	}
	if f.Offset < 0 {
		return nil, 0, domain.BadRequest("Validation error", "offset must not be negative")
	}
	sf := store.TestFilter{Query: f.Query, Flaky: f.Flaky, Quarantined: f.Quarantined, Now: s.clock(),
		Limit: f.Limit, Offset: f.Offset}
	if len([]rune(f.Query)) > 200 {
		return nil, 0, domain.BadRequest("Validation error", "q must be at most 200 characters")
	}
	if f.Status != "" {
		st := domain.TestStatus(f.Status)
		if !slices.Contains([]domain.TestStatus{domain.TestPassed, domain.TestFailed, domain.TestFlaky, domain.TestSkipped}, st) {
			return nil, 0, domain.BadRequest("Validation error", "status must be one of passed, failed, flaky, skipped")
		}
		sf.Status = st
	}
	switch {
	case f.ProjectID != "":
		if _, err := s.store.Projects().Get(ctx, p.OrgID, f.ProjectID); err != nil {
			return nil, 0, notFound(err, errProject404)
		}
		sf.ProjectID = f.ProjectID
	case f.Image != "":
		sf.Scope = domain.TestScope("", f.Image)
	}
	return s.store.Tests().List(ctx, p.OrgID, sf)
}

// Detail is a test with its newest results and its figures.
type Detail struct {
	Test    *domain.TrackedTest
	History []domain.TestOutcome // newest first, at most HistoryLimit
	Stats   Stats
}

// Stats are a test's figures: the rates over its window (domain.Rates), durations over the
// results read (HistoryLimit), skipped results left out.
type Stats struct {
	domain.TestRates
	MedianMs, P90Ms                    int64
	FirstSeenAt                        time.Time
	LastFailedTaskID, LastPassedTaskID string
}

// Get returns the organization's test with its history and figures. Every member may read it.
func (s *Service) Get(ctx context.Context, p *identity.Principal, testID string) (*Detail, error) {
	t, err := s.store.Tests().Get(ctx, p.OrgID, testID)
	if err != nil {
		return nil, notFound(err, errTest404)
	}
	s.expire(t)
	hist, err := s.store.Tests().History(ctx, p.OrgID, testID, HistoryLimit)
	if err != nil {
		return nil, err
	}
	st := Stats{TestRates: domain.Rates(t.Recent), FirstSeenAt: t.FirstSeenAt,
		LastFailedTaskID: t.LastFailedTaskID, LastPassedTaskID: t.LastPassedTaskID}
	var ms []int64
	for _, o := range hist {
		if o.Status != domain.TestSkipped {
			ms = append(ms, o.DurationMs)
		}
	}
	st.MedianMs, st.P90Ms = Percentile(ms, 50), Percentile(ms, 90)
	return &Detail{Test: t, History: hist, Stats: st}, nil
}

// expire reads an expired quarantine as none: it lifted itself.
func (s *Service) expire(t *domain.TrackedTest) {
	if t.Quarantine != nil && !t.Quarantine.Active(s.clock()) {
		t.Quarantine = nil
	}
}

// Expire is expire for the tests of a page.
func (s *Service) Expire(tests []domain.TrackedTest) {
	for i := range tests {
		s.expire(&tests[i])
	}
}

// Percentile is the nearest-rank percentile pct (1..100) of values; 0 for none.
func Percentile(values []int64, pct int) int64 {
	if len(values) == 0 {
		return 0
	}
	sorted := slices.Clone(values)
	slices.Sort(sorted)
	rank := (pct*len(sorted) + 99) / 100 // ceil(pct/100 * n)
	return sorted[max(rank, 1)-1]
}

func notFound(err error, e *domain.Error) error {
	if errors.Is(err, store.ErrNotFound) {
		return e
	}
	return err
}

// RunTestIDs maps the tests of the caller's organization's run (by internal ID) to their
// tracked tests' IDs, by suite and name ("suite\x00name"): the run page links its tests to
// their histories. Empty until the run is recorded.
func (s *Service) RunTestIDs(ctx context.Context, p *identity.Principal, run *domain.Execution) (map[string]string, error) {
	if run.OrganizationID != p.OrgID {
		return nil, errTest404
	}
	outs, err := s.store.Tests().ForRun(ctx, p.OrgID, run.ID)
	if err != nil {
		return nil, err
	}
	m := make(map[string]string, len(outs))
	for _, o := range outs {
		m[o.Suite+"\x00"+o.Name] = o.TestID
	}
	return m, nil
}
