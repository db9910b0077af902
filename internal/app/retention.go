package app

import (
	"context"

	"verdict/internal/custody"
	"verdict/internal/domain"
	"verdict/internal/retention"
)

// retentionMax is the server's maxima of organizations' retention (config.Retention).
func (w *wiring) retentionMax() domain.Retention {
	return domain.Retention{LogsDays: w.cfg.Retention.MaxLogsDays, RunsDays: w.cfg.Retention.MaxRunsDays}
}

// retention builds the retention job over the store and the report store; App.Run starts it on
// every replica (each of its steps takes a run once, whoever runs it).
func (w *wiring) retention(context.Context) error {
	interval := w.cfg.Retention.Interval
	if w.o.RetentionInterval > 0 {
		interval = w.o.RetentionInterval
	}
	w.a.retention = &retention.Job{Store: w.st, Reports: w.reports, Max: w.retentionMax(), Interval: interval,
		Clock: w.clock, Log: w.log}
	// The erase job, beside it: on every replica, each due organization claimed by one (its
	// lease), its runs stopped through the executions service, its subscription cancelled
	// through billing, its members' live sessions ended on every replica.
	eraseInterval := w.cfg.Retention.EraseInterval
	if w.o.EraseInterval > 0 {
		eraseInterval = w.o.EraseInterval
	}
	w.a.eraser = &custody.Eraser{Store: w.st, Reports: w.reports, Runs: w.execs, Subscriptions: w.bill,
		EndSessions: w.endUser, Interval: eraseInterval, Clock: w.clock, Log: w.log}
	return nil
}
