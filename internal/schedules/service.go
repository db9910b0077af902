// Package schedules runs a project's suites on a calendar: each schedule is a 5-field cron
// expression in an IANA time zone (cron.go) with the settings of the runs it queues. The
// service checks the caller's role and the project's organization, validates and stores
// schedules with their secret variables sealed; its worker (worker.go), on every replica, fires
// each due schedule exactly once, claimed in the database, and queues the run through the
// executions service as the organization's automation.
package schedules

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"verdict/internal/crypto/secretbox"
	"verdict/internal/domain"
	"verdict/internal/executions"
	"verdict/internal/identity"
	"verdict/internal/store"
)

// Bounds and defaults.
const (
	// MaxPerProject bounds a project's schedules: each costs every replica's poll nothing until
	// it is due, but a project with hundreds would be a mistake, not a calendar.
	MaxPerProject = 50
	// DefaultGrace is how late a missed fire may still run after downtime.
	DefaultGrace = time.Hour
	// DefaultInterval is how often each replica looks for due schedules.
	DefaultInterval = 250 * time.Millisecond
	// NextRunsShown is how many fire times a schedule's view lists.
	NextRunsShown = 3
)

// Runs queues a schedule's run: the executions service.
type Runs interface {
	Queue(ctx context.Context, p *identity.Principal, in executions.QueueInput) (*domain.Execution, error)
}

// Refusals hears of a fire the plan refused (the run limit, an image no longer allowed, …),
// with the reason as recorded on the schedule. Optional.
type Refusals interface {
	ScheduleRefused(ctx context.Context, orgID, projectID, scheduleID, scheduleName, reason string) error
}

// Service is the schedules service and its worker.
type Service struct {
	store    store.Store
	box      *secretbox.Box
	runs     Runs
	refusals Refusals
	clock    domain.Clock
	newID    domain.IDGen
	log      *slog.Logger
	grace    time.Duration
	interval time.Duration
	fired    func(scheduled, queued time.Time)
}

// Deps are the Service's collaborators. Store, Box and Runs are required; New fills in the
// others.
type Deps struct {
	Store    store.Store
	Box      *secretbox.Box
	Runs     Runs
	Refusals Refusals // nil: refusals are only recorded on the schedule
	Clock    domain.Clock
	NewID    domain.IDGen
	Log      *slog.Logger
	// Grace is how late a missed fire may still run [DefaultGrace]; older ones are skipped.
	Grace time.Duration
	// Interval is the worker's poll [DefaultInterval].
	Interval time.Duration
	// Fired hears of each run queued, with the time it was due and the time it was queued (the
	// fire delay); nil: none.
	Fired func(scheduled, queued time.Time)
}

// New builds a Service.
func New(d Deps) *Service {
	if d.Clock == nil {
		d.Clock = domain.SystemClock
	}
	if d.NewID == nil {
		d.NewID = domain.NewID
	}
	if d.Log == nil {
		d.Log = slog.Default()
	}
	if d.Grace <= 0 {
		d.Grace = DefaultGrace
	}
	if d.Interval <= 0 {
		d.Interval = DefaultInterval
	}
	if d.Fired == nil {
		d.Fired = func(time.Time, time.Time) {}
	}
	return &Service{store: d.Store, box: d.Box, runs: d.Runs, refusals: d.Refusals, clock: d.Clock, newID: d.NewID,
		log: d.Log, grace: d.Grace, interval: d.Interval, fired: d.Fired}
}

var (
	errNotFound   = domain.NotFound("Schedule not found", "No such schedule in this project")
	errProject404 = domain.NotFound("Project not found", "No such project in your organization")
	errReadOnly   = domain.Forbidden("Forbidden", "Viewers cannot create, change or delete schedules")
	errTaken      = domain.Conflict("Schedule name already in use", "The project already has a schedule with this name")
	errTooMany    = domain.Forbidden("Schedule limit reached", "A project has at most 50 schedules")
)

// Input is a schedule's fields as sent; nil fields are left as they are on update. A secret
// variable sent with the value executions.Masked keeps its stored value.
type Input struct {
	Name     *string
	Cron     *string
	Timezone *string
	Folder   *string
	BaseURL  *string
	EnvVars  *[]domain.EnvVar
	Labels   *map[string]string
	Enabled  *bool
}

// View is a schedule as shown: secret values masked, with its next fire times (none while
// paused).
type View struct {
	domain.Schedule
	NextRuns []time.Time
}

// Create adds a schedule to a project of the caller's organization (admins and developers).
func (s *Service) Create(ctx context.Context, p *identity.Principal, projectID string, in Input) (*View, error) {
	if !p.CanWrite() {
		return nil, errReadOnly
	}
	for name, v := range map[string]*string{"name": in.Name, "cron": in.Cron, "timezone": in.Timezone} {
		if v == nil {
			return nil, domain.BadRequest("Missing required fields", name+" is required")
		}
	}
	if err := s.checkProject(ctx, p, projectID); err != nil {
		return nil, err
	}
	now := s.clock()
	sc := &domain.Schedule{ID: s.newID(), OrganizationID: p.OrgID, ProjectID: projectID, Enabled: true,
		EnvVars: []domain.EnvVar{}, Labels: map[string]string{}, CreatedBy: p.UserID, CreatedAt: now, UpdatedAt: now}
	c, err := s.apply(sc, in)
	if err != nil {
		return nil, err
	}
	sc.NextFireAt = nextAfter(c, now)
	err = s.store.InTx(ctx, func(tx store.Store) error {
		if err := tx.Schedules().Create(ctx, sc, MaxPerProject); err != nil {
			return err
		}
		return s.audit(ctx, tx, p, "schedule.created", sc)
	})
	switch {
	case errors.Is(err, store.ErrGuard):
		return nil, errTooMany
	case err != nil:
		return nil, storeErr(err, errProject404)
	}
	return s.view(sc, c), nil
}

// List returns a project's schedules by name (every role).
func (s *Service) List(ctx context.Context, p *identity.Principal, projectID string) ([]View, error) {
	if err := s.checkProject(ctx, p, projectID); err != nil {
		return nil, err
	}
	list, err := s.store.Schedules().List(ctx, p.OrgID, projectID)
	if err != nil {
		return nil, err
	}
	out := make([]View, 0, len(list))
	for i := range list {
		c, err := ParseCron(list[i].Cron, list[i].Timezone)
		if err != nil {
			c = nil // stored before a zone was withdrawn from the zone database: no fire times
		}
		out = append(out, *s.view(&list[i], c))
	}
	return out, nil
}

// Get returns a schedule of a project of the caller's organization (every role).
func (s *Service) Get(ctx context.Context, p *identity.Principal, projectID, id string) (*View, error) {
	sc, err := s.get(ctx, p, projectID, id)
	if err != nil {
		return nil, err
	}
	c, _ := ParseCron(sc.Cron, sc.Timezone)
	return s.view(sc, c), nil
}

// Update changes the fields sent (admins and developers). A new cron or zone, or resuming a
// paused schedule, reschedules it from now: a schedule paused over its fire times does not
// catch up on resume.
func (s *Service) Update(ctx context.Context, p *identity.Principal, projectID, id string, in Input) (*View, error) {
	if !p.CanWrite() {
		return nil, errReadOnly
	}
	sc, err := s.get(ctx, p, projectID, id)
	if err != nil {
		return nil, err
	}
	before := *sc
	c, err := s.apply(sc, in)
	if err != nil {
		return nil, err
	}
	now := s.clock()
	rescheduled := sc.Cron != before.Cron || sc.Timezone != before.Timezone || sc.Enabled && !before.Enabled
	if rescheduled {
		sc.NextFireAt = nextAfter(c, now)
	}
	sc.UpdatedAt = now
	err = s.store.InTx(ctx, func(tx store.Store) error {
		if err := tx.Schedules().Update(ctx, sc, rescheduled); err != nil {
			return err
		}
		return s.audit(ctx, tx, p, "schedule.updated", sc)
	})
	if err != nil {
		return nil, storeErr(err, errNotFound)
	}
	return s.view(sc, c), nil
}

// Delete deletes a schedule (admins and developers); the runs it queued stay.
func (s *Service) Delete(ctx context.Context, p *identity.Principal, projectID, id string) error {
	if !p.CanWrite() {
		return errReadOnly
	}
	sc, err := s.get(ctx, p, projectID, id)
	if err != nil {
		return err
	}
	return storeErr(s.store.InTx(ctx, func(tx store.Store) error {
		if err := tx.Schedules().Delete(ctx, p.OrgID, id); err != nil {
			return err
		}
		return s.audit(ctx, tx, p, "schedule.deleted", sc)
	}), errNotFound)
}

// audit records a change of a schedule (its name, cron, zone and whether it is on; never its
// variables).
func (s *Service) audit(ctx context.Context, tx store.Store, p *identity.Principal, action string, sc *domain.Schedule) error {
	return tx.Audit().Append(ctx, &domain.AuditEntry{ID: s.newID(), OrganizationID: p.OrgID, ActorID: p.UserID,
		Action: action, TargetType: "schedule", TargetID: sc.ID, Details: map[string]any{"projectId": sc.ProjectID,
			"name": sc.Name, "cron": sc.Cron, "timezone": sc.Timezone, "enabled": sc.Enabled}, CreatedAt: s.clock()})
}

// get reads the schedule id of the caller's organization's project projectID.
func (s *Service) get(ctx context.Context, p *identity.Principal, projectID, id string) (*domain.Schedule, error) {
	if err := s.checkProject(ctx, p, projectID); err != nil {
		return nil, err
	}
	if !domain.IsObjectID(id) {
		return nil, errNotFound
	}
	sc, err := s.store.Schedules().Get(ctx, p.OrgID, id)
	if err != nil {
		return nil, storeErr(err, errNotFound)
	}
	if sc.ProjectID != projectID {
		return nil, errNotFound
	}
	return sc, nil
}

// apply validates in and applies it to sc, sealing new secrets; it returns sc's parsed cron.
func (s *Service) apply(sc *domain.Schedule, in Input) (*Cron, error) {
	if in.Name != nil {
		n := strings.TrimSpace(*in.Name)
		if !domain.ValidName(n) {
			return nil, domain.BadRequest("Validation error", "name must have 1 to 100 visible characters, without control, invisible or text-direction characters")
		}
		sc.Name = n
	}
	if in.Cron != nil {
		sc.Cron = strings.Join(strings.Fields(*in.Cron), " ")
		if len(*in.Cron) > MaxCronLen {
			sc.Cron = *in.Cron // refused below, named as sent
		}
	}
	if in.Timezone != nil {
		sc.Timezone = strings.TrimSpace(*in.Timezone)
	}
	if in.Folder != nil {
		sc.Folder = *in.Folder
	}
	if in.BaseURL != nil {
		sc.BaseURL = strings.TrimSpace(*in.BaseURL)
	}
	if in.Enabled != nil {
		sc.Enabled = *in.Enabled
	}
	if in.Labels != nil {
		labels := *in.Labels
		if labels == nil {
			labels = map[string]string{}
		}
		for _, k := range []string{domain.TriggerLabel, domain.ScheduleLabel} {
			if _, ok := labels[k]; ok {
				return nil, domain.BadRequest("Validation error", "label "+k+" is set by the schedule itself")
			}
		}
		if len(labels)+2 > domain.MaxLabels {
			return nil, domain.BadRequest("Validation error", "a schedule has at most "+strconv.Itoa(domain.MaxLabels-2)+" labels (its runs also carry trigger and schedule)")
		}
		if err := domain.ValidateLabels(labels); err != nil {
			return nil, err
		}
		sc.Labels = labels
	}
	c, err := ParseCron(sc.Cron, sc.Timezone)
	if err != nil {
		return nil, err
	}
	var vars []domain.EnvVar
	if in.EnvVars != nil {
		vars = *in.EnvVars
	}
	if err := executions.CheckRunSettings(sc.Folder, sc.BaseURL, vars); err != nil {
		return nil, err
	}
	if in.EnvVars != nil {
		sealed, err := executions.SealSecrets(s.box, vars, sc.EnvVars)
		if err != nil {
			return nil, err
		}
		sc.EnvVars = sealed
	}
	return c, nil
}

// view is sc as shown: secrets masked, and its next fire times while enabled.
func (s *Service) view(sc *domain.Schedule, c *Cron) *View {
	v := &View{Schedule: *sc, NextRuns: []time.Time{}}
	v.EnvVars = make([]domain.EnvVar, len(sc.EnvVars))
	for i, e := range sc.EnvVars {
		if e.Secret {
			e.Value = executions.Masked
		}
		v.EnvVars[i] = e
	}
	if sc.Enabled && c != nil {
		v.NextRuns = append(v.NextRuns, sc.NextFireAt)
		v.NextRuns = append(v.NextRuns, c.NextRuns(sc.NextFireAt, NextRunsShown-1)...)
	}
	return v
}

// checkProject answers 404 unless the project is the caller's organization's.
func (s *Service) checkProject(ctx context.Context, p *identity.Principal, projectID string) error {
	if !domain.IsObjectID(projectID) {
		return errProject404
	}
	_, err := s.store.Projects().Get(ctx, p.OrgID, projectID)
	return storeErr(err, errProject404)
}

// never is the NextFireAt of a schedule with no fire left within the parser's five years.
var never = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

// nextAfter is c's first fire after t, or never.
func nextAfter(c *Cron, t time.Time) time.Time {
	if n := c.Next(t); !n.IsZero() {
		return n
	}
	return never
}

func storeErr(err error, notFound *domain.Error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrNotFound):
		return notFound
	case errors.Is(err, store.ErrConflict):
		return errTaken
	}
	return err
}
