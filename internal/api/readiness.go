package api

import (
	"log/slog"
	"sync"
	"time"
)

// readyLogEvery is how often a readiness check that goes on failing is logged again: a load
// balancer polls /readyz every few seconds, and a line per poll would bury the log.
const readyLogEvery = time.Minute

// readyLog logs what GET /readyz keeps out of its answer: a check's error is logged (warn,
// with the check's name) when the check starts failing, then at most once per readyLogEvery
// while it goes on failing; its recovery is logged once (info).
type readyLog struct {
	log     *slog.Logger
	mu      sync.Mutex
	failing map[string]readyFailure // by check name
}

// readyFailure is a check failing since since, last logged at logged.
type readyFailure struct {
	since, logged time.Time
}

// note records the outcome err of check c at now, logging it when it is news.
func (l *readyLog) note(c Checker, err error, now time.Time) {
	l.mu.Lock()
	f, was := l.failing[c.Name]
	switch {
	case err == nil && !was:
		l.mu.Unlock()
		return
	case err == nil:
		delete(l.failing, c.Name)
		l.mu.Unlock()
		l.log.Info("readiness check recovered", "check", c.Name, "failedFor", now.Sub(f.since).Round(time.Second).String())
		return
	case was && now.Sub(f.logged) < readyLogEvery:
		l.mu.Unlock()
		return
	}
	if !was {
		f.since = now
	}
	f.logged = now
	l.failing[c.Name] = f
	l.mu.Unlock()
	l.log.Warn("readiness check failed", "check", c.Name, "optional", c.Optional, "err", err,
		"failingFor", now.Sub(f.since).Round(time.Second).String())
}
