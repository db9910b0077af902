package control

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"verdict/internal/run"
	"verdict/internal/store"
)

// Outages counts the failures of the store met by this process's control plane: its runners'
// calls (Plane) and the lease reaper's sweeps. The reaper reads it to tell an outage of the
// control plane from a lost runner: a runner cannot renew its lease while the database does not
// answer, and must not lose its runs for it. The zero value is ready; one is shared by the Plane
// and the Reaper of a process.
type Outages struct{ met atomic.Uint64 }

// Met records a failure of the store.
func (o *Outages) Met() {
	if o != nil {
		o.met.Add(1)
	}
}

// count is the failures met so far.
func (o *Outages) count() uint64 {
	if o == nil {
		return 0
	}
	return o.met.Load()
}

// pingTimeout bounds the check that tells an outage from another failure.
const pingTimeout = 5 * time.Second

// unavailable returns err, a failure a runner's call met in the store, marked run.ErrUnavailable
// when the store does not answer at all (the database is down or cut off: a ping fails too), and
// records the outage for the reaper. The runner keeps what it reported and tries again. Answers
// of the store (not found, conflict, a guard) and a lost lease are returned as they are. It costs
// a ping on failures only.
func (p *Plane) unavailable(ctx context.Context, err error) error {
	if err == nil || errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrConflict) ||
		errors.Is(err, store.ErrGuard) || errors.Is(err, run.ErrLeaseLost) || errors.Is(err, run.ErrUnavailable) {
		return err
	}
	if errors.Is(err, store.ErrUnavailable) { // the store's own word for it: no ping needed
		p.Outages.Met()
		return fmt.Errorf("%w: %w", run.ErrUnavailable, err)
	}
	// The call's own context may have ended (it timed out waiting on a database that does not
	// answer): the ping gets a context of its own.
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), pingTimeout)
	defer cancel()
	if p.Store.Ping(pctx) == nil {
		return err
	}
	p.Outages.Met()
	return fmt.Errorf("%w: %w", run.ErrUnavailable, err)
}
