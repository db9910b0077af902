package notify

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"verdict/internal/control"
	"verdict/internal/domain"
	"verdict/internal/store"
)

// Name is the post-run step's name (control.Step).
func (s *Service) Name() string { return StepName }

// happening is what a run's end (or a refused schedule) tells the notifications: the events it
// raises, each with what the rules need to choose it.
type happening struct {
	orgID, projectID string
	run              *domain.Execution // nil for a refused schedule
	failed           bool              // FAILED or ERROR (a refused schedule counts as a failure)
	recovered        bool              // the first passing run after a failed one
	gateFailed       bool
	newFailures      *domain.GateRule // the gate's failed noNewFailures rule; nil: none
	schedule         *scheduleRefusal
}

type scheduleRefusal struct{ id, name, reason string }

// After records and enqueues the deliveries of the run's events for each notification of its
// project whose rules take them, in one transaction (a run reported ended twice is delivered
// once: a delivery is one per event and notification), then wakes the outbox worker. It reads
// the project's notifications and, for a passing run with a recovery rule to serve, the run
// before it; nothing else.
func (s *Service) After(ctx context.Context, run *domain.Execution, _ control.Outbox) error {
	if run.ProjectID == "" || run.Status == domain.ExecCancelled {
		return nil
	}
	list, err := s.store.Notifications().List(ctx, run.OrganizationID, run.ProjectID)
	if err != nil || len(list) == 0 {
		return err
	}
	h := happening{orgID: run.OrganizationID, projectID: run.ProjectID, run: run,
		failed:     run.Status == domain.ExecFailed || run.Status == domain.ExecError,
		gateFailed: run.Gate != nil && run.Gate.Status == domain.GateFailed}
	if run.Gate != nil {
		for i, r := range run.Gate.Rules {
			if r.Rule == domain.RuleNoNewFailures && !r.Passed {
				h.newFailures = &run.Gate.Rules[i]
			}
		}
	}
	wantsRecovery := slices.ContainsFunc(list, func(n domain.Notification) bool {
		return slices.Contains(n.On, domain.NotifyOnRecovery)
	})
	if wantsRecovery && (run.Status == domain.ExecPassed || run.Status == domain.ExecUnstable) && run.FinishedAt != nil {
		prev, err := s.store.Executions().Baseline(ctx, run.OrganizationID, store.BaselineQuery{ProjectID: run.ProjectID,
			Statuses: []domain.ExecStatus{domain.ExecPassed, domain.ExecUnstable, domain.ExecFailed, domain.ExecError},
			Before:   *run.FinishedAt, BeforeID: run.ID})
		if err != nil {
			return err
		}
		h.recovered = prev != nil && (prev.Status == domain.ExecFailed || prev.Status == domain.ExecError)
	}
	return s.raise(ctx, h, list)
}

// ScheduleRefused notifies the project's notifications that take failures (failure, always)
// that its schedule scheduleName could not queue a run, and why (a schedule.refused event). The
// schedules call it once per refused fire.
func (s *Service) ScheduleRefused(ctx context.Context, orgID, projectID, scheduleID, scheduleName, reason string) error {
	list, err := s.store.Notifications().List(ctx, orgID, projectID)
	if err != nil || len(list) == 0 {
		return err
	}
	return s.raise(ctx, happening{orgID: orgID, projectID: projectID, failed: true,
		schedule: &scheduleRefusal{id: scheduleID, name: scheduleName, reason: reason}}, list)
}

// events are the events h raises for n, in order: for Slack and Teams at most one message (the
// run's end, else its gate's failure), for a webhook each event its rules take.
func (h happening) events(n *domain.Notification) []string {
	on := func(r string) bool { return slices.Contains(n.On, r) }
	always, failure := on(domain.NotifyOnAlways), on(domain.NotifyOnFailure)
	if h.schedule != nil {
		if always || failure {
			return []string{domain.EventScheduleRefused}
		}
		return nil
	}
	var out []string
	if always || (failure && h.failed) || (on(domain.NotifyOnRecovery) && h.recovered) {
		out = append(out, domain.EventRunFinished)
	}
	if h.gateFailed && (always || on(domain.NotifyOnGateFailed)) {
		out = append(out, domain.EventRunGateFailed)
	}
	if n.Kind != domain.NotifyWebhook {
		return out[:min(len(out), 1)]
	}
	if h.newFailures != nil && (always || failure || on(domain.NotifyOnGateFailed)) {
		out = append(out, domain.EventTestNewFailure)
	}
	return out
}

// eventID is the ID of an event: the same for every notification and every report of the same
// run's end, so a receiver dedupes on it.
func eventID(subject, event string) string {
	sum := sha256.Sum256([]byte(subject + "\x00" + event))
	return "evt_" + hex.EncodeToString(sum[:12])
}

// raise records and enqueues h's deliveries to list's notifications.
func (s *Service) raise(ctx context.Context, h happening, list []domain.Notification) error {
	now := s.clock()
	var project *domain.Project
	var reportURL string
	enqueued := 0
	err := s.store.InTx(ctx, func(tx store.Store) error {
		for i := range list {
			n := &list[i]
			for _, ev := range h.events(n) {
				if project == nil {
					p, err := tx.Projects().Get(ctx, h.orgID, h.projectID)
					if err != nil {
						return err
					}
					project = p
					if h.run != nil {
						reportURL = s.reportURL(ctx, h.run)
					}
				}
				subject := s.newID() // a refused schedule's events are new each time
				if h.run != nil {
					subject = h.run.ID
				}
				e := s.event(h, ev, eventID(subject, ev), project, reportURL, now)
				body, err := e.body(n.Kind)
				if err != nil {
					return err
				}
				d := &domain.Delivery{ID: s.newID(), OrganizationID: h.orgID, NotificationID: n.ID, EventID: e.ID, Event: ev,
					Body: body, Status: domain.DeliveryPending, CreatedAt: now}
				err = tx.Notifications().AddDelivery(ctx, d, KeepDeliveries)
				if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound) {
					continue // delivered already (the run's end reported again), or deleted meanwhile
				}
				if err != nil {
					return err
				}
				if err := enqueue(ctx, tx, d, now); err != nil {
					return err
				}
				enqueued++
			}
		}
		return nil
	})
	if err == nil && enqueued > 0 {
		s.wake()
	}
	return err
}

// enqueue puts d's next attempt in the outbox, due at now. The payload names the delivery
// ("<organization>/<notification>/<delivery>"), never its receiver.
func enqueue(ctx context.Context, tx store.Store, d *domain.Delivery, now time.Time) error {
	return tx.Outbox().Enqueue(ctx, &store.Mail{Kind: OutboxKind, To: []string{}, Text: Payload(d), NextAttempt: now,
		CreatedAt: now})
}

// Payload is the outbox payload of delivery d (Deliver makes the delivery it names): its
// organization, notification and ID, never its receiver.
func Payload(d *domain.Delivery) string {
	return d.OrganizationID + "/" + d.NotificationID + "/" + d.ID
}

// Lane is the outbox lane of a delivery's payload: its notification, so one slow receiver
// holds back no other (mail.Worker.Lanes).
func Lane(payload string) string {
	parts := strings.SplitN(payload, "/", 3)
	if len(parts) != 3 {
		return ""
	}
	return parts[1]
}

func splitPayload(payload string) (orgID, nid, did string, err error) {
	parts := strings.SplitN(payload, "/", 3)
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return "", "", "", fmt.Errorf("notify: malformed delivery payload")
	}
	return parts[0], parts[1], parts[2], nil
}
