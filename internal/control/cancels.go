package control

import "context"

// Cancelled tells the runner routes which of a remote runner process's runs a user asked to
// cancel: the runs' own records, read in one query (the heartbeat is what writes). It is asked
// about every run a runner holds, again every poll of a waiting cancels call, so it never reads
// a run at a time.
func (p *Plane) Cancelled(ctx context.Context, runnerID, instance string, ids []string) ([]string, error) {
	return p.Store.Executions().CancelRequested(ctx, runnerID, instance, ids)
}
