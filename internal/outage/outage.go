// Package outage answers the requests that meet a dependency that is away (the database,
// stopped or cut off): a 503 with Retry-After instead of a 500, so that clients wait and
// retry instead of reporting a failure; each is counted, and the log says what is away
// without a line per request. The API and the dashboard share one Reporter.
package outage

import (
	"errors"
	"log/slog"
	"sync"
	"time"

	"verdict/internal/domain"
)

// RetryAfter is the wait the refusal suggests: about what a database restart or a failover
// takes, and short enough that a client polling a run sees it again soon.
const RetryAfter = 5 * time.Second

// LogEvery is how often a dependency that stays away is logged again.
const LogEvery = 10 * time.Second

// Reporter turns dependency errors into refusals. The zero value logs to slog.Default and
// counts nowhere.
type Reporter struct {
	Log   *slog.Logger
	Count func(dependency string) // one refused request; nil: none
	Clock domain.Clock            // [time.Now]

	mu    sync.Mutex
	state map[string]*away // by dependency
}

// away is a dependency seen away: refused requests since the last log line.
type away struct {
	logged  time.Time
	refused int
}

// Refusal reports whether err is a dependency's absence (domain.ErrUnavailable) and, if so,
// notes it and returns the answer: 503 "Service unavailable", naming what is away, with
// retryAfter (seconds) for the Retry-After header.
func (r *Reporter) Refusal(err error) (*domain.Error, bool) {
	if !errors.Is(err, domain.ErrUnavailable) {
		return nil, false
	}
	dep := "a service it depends on"
	var ue *domain.UnavailableError
	if errors.As(err, &ue) && ue.Dependency != "" {
		dep = ue.Dependency
	}
	r.note(dep, err)
	return domain.Unavailable("Service unavailable",
		"The "+dep+" is unavailable right now; try again in a few seconds").
		With("retryAfter", int(RetryAfter/time.Second)), true
}

func (r *Reporter) note(dep string, err error) {
	if r.Count != nil {
		r.Count(dep)
	}
	now := time.Now()
	if r.Clock != nil {
		now = r.Clock()
	}
	r.mu.Lock()
	if r.state == nil {
		r.state = map[string]*away{}
	}
	a := r.state[dep]
	if a == nil {
		a = &away{}
		r.state[dep] = a
	}
	a.refused++
	if !a.logged.IsZero() && now.Sub(a.logged) < LogEvery {
		r.mu.Unlock()
		return
	}
	n := a.refused
	a.logged, a.refused = now, 0
	r.mu.Unlock()
	log := r.Log
	if log == nil {
		log = slog.Default()
	}
	log.Warn("dependency unavailable: answering 503", "dependency", dep, "refused", n, "err", err)
}
