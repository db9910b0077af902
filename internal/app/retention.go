package app

import (
	"context"

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
	return nil
}
