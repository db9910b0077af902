package billing

import (
	"context"
	"log/slog"
	"time"

	"verdict/internal/domain"
	"verdict/internal/mail"
	"verdict/internal/store"
)

// Resources that usage alerts watch, named as in the usage route's alerts.
const (
	ResourceTestRuns = "testRuns"
	ResourceUsers    = "users"
	ResourceProjects = "projects"
	ResourceStorage  = "storage"
)

var resourceNames = map[string]string{ResourceTestRuns: "test runs", ResourceUsers: "users",
	ResourceProjects: "projects", ResourceStorage: "storage"}

// Usage is one resource's consumption, checked for alerts after a change.
type Usage struct {
	Resource    string
	Used, Limit int64
	// Before is the figure before the change. Thresholds it had already reached were raised
	// by the change that reached them, so they are not claimed again: once usage is past a
	// threshold, adding to it costs no write. Zero checks every threshold (after a plan change).
	Before int64
	// Refused says something was just refused for passing the limit (reports dropped): the
	// alert is raised as reached (critical) whatever Used says, with Note in the e-mail.
	Refused bool
	Note    string
}

// Alerts raises usage alerts: each threshold (50, 80, 90, 100 %) of each resource once per
// organization and billing period, e-mailed to the organization's admins. The claim and the
// e-mail are written in the caller's transaction, so an alert exists exactly when the change
// that caused it commits, and replicas that see the same crossing agree on one e-mail.
// A nil *Alerts raises nothing.
type Alerts struct {
	renderer *mail.Renderer
	notify   func()
	clock    domain.Clock
	log      *slog.Logger
}

// AlertsDeps are what Alerts needs. Renderer is required; NewAlerts fills in the others.
type AlertsDeps struct {
	Renderer *mail.Renderer
	Notify   func() // wakes the mail sender; nil to wait for its next poll
	Clock    domain.Clock
	Log      *slog.Logger
}

// NewAlerts builds the usage alerts.
func NewAlerts(d AlertsDeps) *Alerts {
	if d.Notify == nil {
		d.Notify = func() {}
	}
	if d.Clock == nil {
		d.Clock = domain.SystemClock
	}
	if d.Log == nil {
		d.Log = slog.Default()
	}
	return &Alerts{renderer: d.Renderer, notify: d.Notify, clock: d.Clock, log: d.Log}
}

// Check raises the alerts u has reached that were not raised yet this billing period. Only the
// highest newly reached threshold is e-mailed; lower ones are marked raised with it.
func (a *Alerts) Check(ctx context.Context, tx store.Store, org *domain.Organization, u Usage) error {
	if a == nil || u.Limit == domain.Unlimited {
		return nil
	}
	reached, was := domain.CrossedThreshold(u.Used, u.Limit), domain.CrossedThreshold(u.Before, u.Limit)
	if u.Refused {
		reached, was = 100, 0
	}
	if reached <= was {
		return nil // no threshold newly reached: the common case, without a query
	}
	now := a.clock()
	period, _ := domain.BillingPeriod(org, now)
	highest := 0
	for _, t := range domain.AlertThresholds {
		if t > reached {
			break
		}
		claimed, err := tx.UsageAlerts().Claim(ctx, org.ID, u.Resource, t, period, now)
		if err != nil {
			return err
		}
		if claimed {
			highest = t
		}
	}
	if highest == 0 {
		return nil
	}
	a.log.Info("usage alert", "org", org.ID, "resource", u.Resource, "threshold", highest, "used", u.Used, "limit", u.Limit)
	c, err := a.renderer.UsageAlert(mail.UsageAlertData{OrganizationName: org.Name, Resource: resourceNames[u.Resource],
		Percent: highest, Used: u.Used, Limit: u.Limit, Bytes: u.Resource == ResourceStorage, Plan: org.Plan, Note: u.Note})
	if err != nil {
		return err
	}
	return mailAdmins(ctx, tx, org.ID, c, now, a.notify)
}

// MemberJoined raises the users alerts that one more active member, after activeBefore, may
// set off (identity.Alerts).
func (a *Alerts) MemberJoined(ctx context.Context, tx store.Store, org *domain.Organization, activeBefore int) error {
	return a.Check(ctx, tx, org, Usage{Resource: ResourceUsers, Used: int64(activeBefore + 1),
		Before: int64(activeBefore), Limit: int64(org.Limits().MaxUsers)})
}

// CheckAll checks every resource, e.g. after a plan change moved the limits.
func (a *Alerts) CheckAll(ctx context.Context, tx store.Store, org *domain.Organization) error {
	if a == nil {
		return nil
	}
	start, _ := domain.BillingPeriod(org, a.clock())
	runs, err := tx.Executions().CountSince(ctx, org.ID, start)
	if err != nil {
		return err
	}
	users, err := tx.Users().CountActive(ctx, org.ID)
	if err != nil {
		return err
	}
	projects, err := tx.Projects().Count(ctx, org.ID)
	if err != nil {
		return err
	}
	l := org.Limits()
	for _, u := range []Usage{
		{Resource: ResourceTestRuns, Used: int64(runs), Limit: int64(l.MaxTestRuns)},
		{Resource: ResourceUsers, Used: int64(users), Limit: int64(l.MaxUsers)},
		{Resource: ResourceProjects, Used: int64(projects), Limit: int64(l.MaxProjects)},
		{Resource: ResourceStorage, Used: org.StorageUsedBytes, Limit: l.MaxStorageBytes},
	} {
		if err := a.Check(ctx, tx, org, u); err != nil {
			return err
		}
	}
	return nil
}

// mailAdmins puts one e-mail to the organization's active admins in the outbox.
func mailAdmins(ctx context.Context, tx store.Store, orgID string, c mail.Content, now time.Time, notify func()) error {
	users, err := tx.Users().List(ctx, orgID)
	if err != nil {
		return err
	}
	var to []string
	for _, u := range users {
		if u.Role == domain.RoleAdmin && u.Status == domain.UserActive {
			to = append(to, u.Email)
		}
	}
	if len(to) == 0 {
		return nil
	}
	if err := mail.Enqueue(ctx, tx.Outbox(), c.Message(to...), now); err != nil {
		return err
	}
	notify() // the sender's claim waits for this transaction on SQLite, or finds it on its next poll
	return nil
}
