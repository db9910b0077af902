package app

import (
	"context"

	"verdict/internal/schedules"
)

// schedules builds the projects' schedules service over the store, queueing runs through the
// executions service and telling a refused fire to the project's notifications
// (schedule.refused); App.Run starts its worker on every replica (each fire is claimed once in
// the database, whoever polls).
func (w *wiring) schedules(context.Context) error {
	clock := w.clock
	if w.o.ScheduleClock != nil {
		clock = w.o.ScheduleClock
	}
	var refusals schedules.Refusals
	if w.notify != nil {
		refusals = w.notify
	}
	w.a.schedules = schedules.New(schedules.Deps{Store: w.st, Box: w.box, Runs: w.execs, Clock: clock, Log: w.log,
		Grace: w.cfg.Schedules.Grace, Interval: w.o.ScheduleInterval, Refusals: refusals})
	return nil
}
