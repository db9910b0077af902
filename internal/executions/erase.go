package executions

import (
	"context"
	"errors"

	"verdict/internal/domain"
	"verdict/internal/store"
)

// errErasing refuses a new run of an organization whose erasure is scheduled.
func errErasing(org *domain.Organization) error {
	return domain.Forbidden("Organization scheduled for erasure",
		"The organization is erased at "+org.EraseAt.UTC().Format("2006-01-02 15:04 MST")+
			" and queues no new run; an admin can cancel the erasure (POST /api/organization/erase/cancel)")
}

// cancelPage is how many of an organization's active runs StopAll reads at a time.
const cancelPage = 100

// StopAll cancels every run of the organization that has not ended, for its erasure: a pending
// run at once, a running one through its runner (as Cancel does). It returns how many are
// still going (RUNNING or ANALYZING): the erasure waits until none is, so no runner writes to a
// run being erased. The organization's new runs are refused already (its erasure is due).
func (s *Service) StopAll(ctx context.Context, orgID string) (going int, err error) {
	f := store.ExecutionFilter{Statuses: []domain.ExecStatus{domain.ExecPending, domain.ExecRunning, domain.ExecAnalyzing},
		Limit: cancelPage}
	for {
		page, _, err := s.store.Executions().List(ctx, orgID, f)
		if err != nil {
			return 0, err
		}
		stayed := 0 // the runs of the page still in the list: a cancelled pending run leaves it
		for _, listed := range page {
			e, err := s.store.Executions().Get(ctx, orgID, listed.TaskID)
			if errors.Is(err, store.ErrNotFound) {
				continue
			}
			if err != nil {
				return 0, err
			}
			now, err := s.store.Executions().RequestCancel(ctx, orgID, e.TaskID, s.clock())
			if err != nil && !errors.Is(err, store.ErrGuard) && !errors.Is(err, store.ErrNotFound) {
				return 0, err
			}
			if err == nil && now {
				continue
			}
			stayed++
			if err == nil {
				s.stop(e.ID)
				for _, part := range e.Parts {
					s.stop(part.ID)
				}
			}
		}
		// A run that ends meanwhile shifts the pages too, and one may be passed over: the
		// erasure calls StopAll again until nothing is going.
		if len(page) < cancelPage {
			break
		}
		f.Offset += stayed
	}
	return s.store.Executions().CountActive(ctx, orgID)
}
