// Package custody is an organization's data in its admins' hands: the export of everything it
// holds as documents (members without password hashes, projects, runs with their results and
// analyses, test cases, automation plans, the audit log), read a page at a time so that memory
// stays bounded however large the organization; and its erasure (erase.go), scheduled by an
// admin at the end of a grace period and carried out by the erase job (Eraser).
package custody

import (
	"context"
	"log/slog"
	"time"

	"verdict/internal/domain"
	"verdict/internal/identity"
	"verdict/internal/store"
)

// runPage is the runs read from the list at once; each is then read whole, one at a time.
const runPage = 100

// maxPlans bounds the automation plans exported (without their Markdown: their list entries).
const maxPlans = 10000

// auditPage is the audit entries handed over at once.
const auditPage = 500

// Sink receives an export, in this order: the organization, its members, projects, runs (one
// at a time, whole), test cases, automation plans, the audit log (pages). The front door
// writes each as it comes, in its own views, so nothing of the export is held whole.
type Sink interface {
	Organization(o *domain.Organization) error
	Members(users []domain.User) error
	Projects(projects []domain.Project) error
	Run(e *domain.Execution) error
	TestCases(page int, cases []domain.TestCase) error
	Plans(plans []domain.AutomationPlan) error
	Audit(page int, entries []domain.AuditEntry) error
}

// Service exports organizations' data and schedules their erasure.
type Service struct {
	store store.Store
	grace time.Duration
	clock domain.Clock
	log   *slog.Logger
}

// Deps are what the Service needs; Store is required, New fills in Clock and Log.
type Deps struct {
	Store store.Store
	// Grace is the time between an admin's request to erase the organization and its erasure
	// (the operator's VERDICT_ERASE_GRACE); 0: the erase job's next pass erases it.
	Grace time.Duration
	Clock domain.Clock
	Log   *slog.Logger
}

// New builds the Service.
func New(d Deps) *Service {
	if d.Clock == nil {
		d.Clock = domain.SystemClock
	}
	if d.Log == nil {
		d.Log = slog.Default()
	}
	return &Service{store: d.Store, grace: d.Grace, clock: d.Clock, log: d.Log}
}

// Export hands the caller's organization's data to sink (admin only). Runs are listed a page at
// a time and each read whole on its own; the audit log and test cases go by pages. An error of
// sink (the client went away) ends the export.
func (s *Service) Export(ctx context.Context, p *identity.Principal, sink Sink) error {
	if err := p.RequireAdmin(); err != nil {
		return err
	}
	org, err := s.store.Organizations().Get(ctx, p.OrgID)
	if err != nil {
		return err
	}
	if err := sink.Organization(org); err != nil {
		return err
	}
	users, err := s.store.Users().List(ctx, p.OrgID)
	if err != nil {
		return err
	}
	for i := range users {
		users[i].PasswordHash = "" // never leaves the database
	}
	if err := sink.Members(users); err != nil {
		return err
	}
	projects, err := s.store.Projects().List(ctx, p.OrgID)
	if err != nil {
		return err
	}
	if err := sink.Projects(projects); err != nil {
		return err
	}
	// Runs, oldest pages last: a run queued meanwhile shifts the pages by one, so a run may be
	// read twice (written once per task ID by the sink's name) but none is skipped.
	seen := map[string]bool{}
	for offset := 0; ; offset += runPage {
		page, _, err := s.store.Executions().List(ctx, p.OrgID, store.ExecutionFilter{Limit: runPage, Offset: offset})
		if err != nil {
			return err
		}
		for i := range page {
			if seen[page[i].TaskID] {
				continue
			}
			seen[page[i].TaskID] = true
			e, err := s.store.Executions().Get(ctx, p.OrgID, page[i].TaskID)
			if err != nil {
				continue // deleted since it was listed
			}
			e.EnvCipher = "" // sealed variables stay sealed, and stay here
			if err := sink.Run(e); err != nil {
				return err
			}
		}
		if len(page) < runPage {
			break
		}
	}
	for n, offset := 1, 0; ; n, offset = n+1, offset+auditPage {
		cases, _, err := s.store.TestCases().List(ctx, p.OrgID, store.TestCaseFilter{Limit: auditPage, Offset: offset})
		if err != nil {
			return err
		}
		if len(cases) > 0 || n == 1 {
			if err := sink.TestCases(n, cases); err != nil {
				return err
			}
		}
		if len(cases) < auditPage {
			break
		}
	}
	plans, err := s.store.Plans().List(ctx, p.OrgID, "", maxPlans)
	if err != nil {
		return err
	}
	if err := sink.Plans(plans); err != nil {
		return err
	}
	for n, offset := 1, 0; ; n, offset = n+1, offset+auditPage {
		entries, _, err := s.store.Audit().Find(ctx, p.OrgID, domain.AuditFilter{Limit: auditPage, Offset: offset})
		if err != nil {
			return err
		}
		if len(entries) > 0 || n == 1 {
			if err := sink.Audit(n, entries); err != nil {
				return err
			}
		}
		if len(entries) < auditPage {
			return nil
		}
	}
}
