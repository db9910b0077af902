package run

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"
)

// ErrUnavailable: the control plane could not be reached (its database does not answer, or the
// server is down or cut off). Nothing was refused: the runner keeps what it had to report and
// tries again.
var ErrUnavailable = errors.New("the control plane is unavailable")

// Retry waits: a report the control plane did not take is tried again after firstRetry (the
// Runner's RetryWait), the wait doubling up to 20 times that, so a runner reaches the plane within
// 5 s of its return (the lease reaper's grace after an outage is longer than that).
const firstRetry = 250 * time.Millisecond

func (r *Runner) maxRetry() time.Duration { return 20 * r.RetryWait }

// claim is a run as its runner holds it, for what the runner still has to report about it.
type claim struct {
	// lost ends, with cause ErrLeaseLost, once the control plane said the runner no longer
	// holds the run: every report about it stops at once.
	lost context.Context
	// stopping is closed when the runner stops: reports are tried once more, not retried.
	stopping <-chan struct{}
}

// deliver calls send until the control plane takes what it reports, with backoff, for as long
// as the runner may still hold the run: the run's outcome, log lines and reports are the
// runner's alone, and an outage of the control plane (its database, or the server) must not
// lose them. It stops at ErrLeaseLost (the reaper ended the run, or another runner holds it;
// also when c.lost ends) and when the runner stops. ErrUnavailable is retried without end, the
// lease being renewed meanwhile (the reaper does not count an outage of the control plane
// against a runner), and so is a try that timed out; any other error for one lease, then it is
// returned.
func (r *Runner) deliver(c claim, log *slog.Logger, what string, send func() error) error {
	wait := r.RetryWait
	var failing time.Time
	for tries := 1; ; tries++ {
		err := send()
		if err == nil {
			if tries > 1 {
				log.Info(what+": done after the control plane answered again", "tries", tries)
			}
			return nil
		}
		if errors.Is(err, ErrLeaseLost) || c.lost.Err() != nil {
			return ErrLeaseLost
		}
		if failing.IsZero() {
			failing = time.Now()
		}
		select {
		case <-c.stopping:
			return err
		default:
		}
		// A try that timed out met a control plane that did not answer in time: an outage too.
		outage := errors.Is(err, ErrUnavailable) || errors.Is(err, context.DeadlineExceeded)
		if !outage && time.Since(failing) >= r.Lease {
			return err
		}
		if tries == 1 {
			log.Warn(what+" failed; kept, and tried again until the control plane takes it", "err", err)
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-c.lost.Done():
			t.Stop()
			return ErrLeaseLost
		case <-c.stopping:
			t.Stop()
			return err
		}
		wait = min(2*wait, r.maxRetry())
	}
}

// delivery tells whether a run's log pump is handing lines to the control plane, and when it
// last finished doing so: the wait for the engine's log stream after the container exited
// does not count the time the control plane takes (or is away).
type delivery struct {
	mu     sync.Mutex
	busy   bool
	lastAt time.Time
}

func (d *delivery) start() {
	d.mu.Lock()
	d.busy = true
	d.mu.Unlock()
}

func (d *delivery) end() {
	d.mu.Lock()
	d.busy, d.lastAt = false, time.Now()
	d.mu.Unlock()
}

// idle is how long the pump has waited on the engine since its last delivery; 0 while it
// delivers.
func (d *delivery) idle() time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.busy {
		return 0
	}
	return time.Since(d.lastAt)
}

// awaitLogs waits for the log pump to end (done) after the container exited. A stream the
// engine does not end within grace of the pump's own waiting is stopped (stop), and the
// pump is still waited for: the lines it already read are delivered before the run is settled,
// so no stored line comes after the final status.
func awaitLogs(done <-chan struct{}, d *delivery, stop func(), grace time.Duration, log *slog.Logger) {
	t := time.NewTimer(grace)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		if idle := d.idle(); idle < grace {
			t.Reset(grace - idle)
			continue
		}
		log.Warn("log stream did not end after the container exited")
		stop()
		<-done
		return
	}
}
