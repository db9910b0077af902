package executions

import (
	"context"

	"verdict/internal/identity"
)

// RunnersBusy counts, for an organization's admin's list of the runners (GET /api/runners),
// the organization's runs going on each runner, by runner ID. The runners serve every
// organization, so only an admin sees them (else Forbidden, before anything is read), and a
// runner's busy count there is the organization's own runs on it, read from the runs, never
// from the runner's report. heard lists the runners heard from and says how many there are;
// with none (or its error), no run is read and the answer is nil.
func (s *Service) RunnersBusy(ctx context.Context, p *identity.Principal, heard func(context.Context) (int, error)) (map[string]int, error) {
	if err := p.RequireAdmin(); err != nil {
		return nil, err
	}
	if n, err := heard(ctx); err != nil || n == 0 {
		return nil, err
	}
	return s.store.Executions().ActiveByRunner(ctx, p.OrgID)
}
