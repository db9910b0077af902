package app

import (
	"verdict/internal/control"
	"verdict/internal/domain"
	"verdict/internal/metrics"
)

// cancelCounter is the executions service's control.Events: it passes every event on and counts
// the runs that service ends itself, which are queued runs cancelled before a runner took them
// (the service announces no other final status; the run plane counts the runs it ends).
type cancelCounter struct {
	control.Events
	m *metrics.Metrics
}

func (c cancelCounter) ExecutionUpdated(e *domain.Execution) {
	if e.Status.Final() {
		c.m.RunFinished(e)
	}
	c.Events.ExecutionUpdated(e)
}
