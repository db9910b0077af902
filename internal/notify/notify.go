// Package notify tells a project's receivers about its runs: Slack (an incoming webhook; a
// Block Kit message), Microsoft Teams (a workflow webhook; an Adaptive Card) and generic
// webhooks (JSON events signed with HMAC-SHA256 over a timestamp and the body). Admins add and
// remove a project's notifications, each with rules (on failure, on gate failure, on recovery,
// always); every member reads them and their recent deliveries.
//
// The service is a post-run step (control.Step, "notify"): when a run ends it records a
// delivery per event and notification and enqueues it in the durable outbox, in one
// transaction, and the outbox worker makes it through Deliver, from any replica: 5xx answers,
// timeouts and connection errors are retried with exponential backoff for a day (Retry), 4xx
// answers other than 408 and 429 are not, and a delivery the receiver answered 2xx is not made
// again. Receivers are reached only through the egress guard (no internal address, no
// redirect), and their URLs and secrets are sealed at rest, never shown whole, never logged.
package notify

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"verdict/internal/crypto/secretbox"
	"verdict/internal/domain"
	"verdict/internal/egress"
	"verdict/internal/identity"
	"verdict/internal/mail"
	"verdict/internal/store"
)

// StepName names the post-run step, and so its deliveries' outbox kind (OutboxKind).
const StepName = "notify"

// OutboxKind is the outbox kind of the notifications' deliveries: the kind control.Deliveries
// gives the step StepName, so the outbox worker hands them to Deliver.
const OutboxKind = "step:" + StepName

// Bounds.
const (
	MaxURLBytes      = 2048 // of a receiver's URL
	MinSecretBytes   = 16   // of a webhook's signing secret
	MaxSecretBytes   = 256
	MaxPerProject    = 20  // notifications of one project
	KeepDeliveries   = 100 // the newest deliveries kept per notification
	DefaultTimeout   = 10 * time.Second
	maxAnswerBytes   = 1024 // of a receiver's answer read for the delivery's error
	maxErrorText     = 500
	generatedSecretN = 32 // random bytes of a generated secret
)

// Retry is how the outbox retries a delivery: from 10 s doubling to an hour, for a day.
var Retry = mail.RetryPolicy{Base: 10 * time.Second, Max: time.Hour, Window: 24 * time.Hour}

// Deps are what New needs. Store, Box and Egress are required.
type Deps struct {
	Store store.Store
	// Box seals the receivers' URLs and secrets.
	Box *secretbox.Box
	// Egress guards every call to a receiver and checks a URL when it is saved.
	Egress *egress.Guard
	// PublicURL is where the dashboard is, for the links to a run's page ("": no link).
	PublicURL string
	// ReportURL is the absolute link to a run's report, "" when it has none; nil: no link.
	ReportURL func(ctx context.Context, e *domain.Execution) string
	// Wake tells the outbox worker that deliveries were enqueued (mail.Worker.Notify).
	Wake func()
	// Retry is the outbox's policy of the deliveries (nil: Retry); a delivery whose next try
	// would fall past its window is recorded failed.
	Retry *mail.RetryPolicy
	// Timeout bounds each call to a receiver [DefaultTimeout].
	Timeout time.Duration
	Clock   domain.Clock
	NewID   func() string
	Log     *slog.Logger
}

// Service is the notifications' service, and the post-run step that makes them.
type Service struct {
	store     store.Store
	box       *secretbox.Box
	guard     *egress.Guard
	client    *http.Client
	publicURL string
	reportURL func(ctx context.Context, e *domain.Execution) string
	wake      func()
	retry     mail.RetryPolicy
	clock     domain.Clock
	newID     func() string
	log       *slog.Logger
}

// New builds the service.
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
	if d.ReportURL == nil {
		d.ReportURL = func(context.Context, *domain.Execution) string { return "" }
	}
	if d.Wake == nil {
		d.Wake = func() {}
	}
	if d.Timeout <= 0 {
		d.Timeout = DefaultTimeout
	}
	retry := Retry
	if d.Retry != nil {
		retry = *d.Retry
	}
	return &Service{store: d.Store, box: d.Box, guard: d.Egress, client: d.Egress.Client(d.Timeout), publicURL: d.PublicURL,
		reportURL: d.ReportURL, wake: d.Wake, retry: retry, clock: d.Clock, newID: d.NewID, log: d.Log}
}

var (
	errProject404      = domain.NotFound("Project not found", "No such project in your organization")
	errNotification404 = domain.NotFound("Notification not found", "No such notification in this project")
	errDelivery404     = domain.NotFound("Delivery not found", "No such delivery of this notification")
)

// View is a notification as the API shows it: its receiver's host only, never its URL or secret.
type View struct {
	ID        string    `json:"id"`
	ProjectID string    `json:"projectId"`
	Kind      string    `json:"kind"`
	Host      string    `json:"host"`
	On        []string  `json:"on"`
	Signed    bool      `json:"signed"` // a webhook with a signing secret
	CreatedAt time.Time `json:"createdAt"`
}

// Created is a notification just created: its signing secret is shown this once (a webhook's,
// the one given or generated), never again.
type Created struct {
	View
	Secret string `json:"secret,omitempty"`
}

// DeliveryView is a delivery as the API shows it.
type DeliveryView struct {
	ID            string     `json:"id"`
	EventID       string     `json:"eventId"`
	Event         string     `json:"event"`
	Status        string     `json:"status"`
	StatusCode    int        `json:"statusCode"`
	DurationMs    int64      `json:"durationMs"`
	Attempts      int        `json:"attempts"`
	Error         string     `json:"error"`
	CreatedAt     time.Time  `json:"createdAt"`
	LastAttemptAt *time.Time `json:"lastAttemptAt"`
	DeliveredAt   *time.Time `json:"deliveredAt"`
}

func view(n *domain.Notification) View {
	return View{ID: n.ID, ProjectID: n.ProjectID, Kind: n.Kind, Host: n.Host, On: n.On, Signed: n.SecretCipher != "",
		CreatedAt: n.CreatedAt}
}

func deliveryView(d *domain.Delivery) DeliveryView {
	return DeliveryView{ID: d.ID, EventID: d.EventID, Event: d.Event, Status: d.Status, StatusCode: d.StatusCode,
		DurationMs: d.DurationMs, Attempts: d.Attempts, Error: d.LastError, CreatedAt: d.CreatedAt,
		LastAttemptAt: d.LastAttemptAt, DeliveredAt: d.DeliveredAt}
}

// project checks that the organization of p has the project.
func (s *Service) project(ctx context.Context, p *identity.Principal, projectID string) (*domain.Project, error) {
	pr, err := s.store.Projects().Get(ctx, p.OrgID, projectID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errProject404
	}
	return pr, err
}

// notification is the organization's notification nid of the project; 404 otherwise.
func (s *Service) notification(ctx context.Context, p *identity.Principal, projectID, nid string) (*domain.Notification, error) {
	n, err := s.store.Notifications().Get(ctx, p.OrgID, nid)
	if errors.Is(err, store.ErrNotFound) || (err == nil && n.ProjectID != projectID) {
		return nil, errNotification404
	}
	return n, err
}

// List lists the project's notifications (every member).
func (s *Service) List(ctx context.Context, p *identity.Principal, projectID string) ([]View, error) {
	if _, err := s.project(ctx, p, projectID); err != nil {
		return nil, err
	}
	list, err := s.store.Notifications().List(ctx, p.OrgID, projectID)
	if err != nil {
		return nil, err
	}
	out := make([]View, 0, len(list))
	for i := range list {
		out = append(out, view(&list[i]))
	}
	return out, nil
}

// Create adds a notification to the project (admins); its URL is checked (and refused when it
// names an internal address), then sealed with its secret. A webhook without a secret gets a
// generated one, shown once in the answer.
func (s *Service) Create(ctx context.Context, p *identity.Principal, projectID string, in Input) (*Created, error) {
	if err := p.RequireAdmin(); err != nil {
		return nil, err
	}
	if _, err := s.project(ctx, p, projectID); err != nil {
		return nil, err
	}
	in, err := Check(s.guard, in)
	if err != nil {
		return nil, err
	}
	secret := ""
	if in.Kind == domain.NotifyWebhook {
		secret = in.Secret
		if secret == "" {
			secret = "whsec_" + domain.RandomHex(generatedSecretN)
		}
	}
	u, _ := url.Parse(in.URL) // Check parsed it
	n := &domain.Notification{ID: s.newID(), OrganizationID: p.OrgID, ProjectID: projectID, Kind: in.Kind, Host: u.Hostname(),
		On: in.On, CreatedBy: p.UserID, CreatedAt: s.clock()}
	if n.URLCipher, err = s.box.Seal([]byte(in.URL)); err != nil {
		return nil, err
	}
	if secret != "" {
		if n.SecretCipher, err = s.box.Seal([]byte(secret)); err != nil {
			return nil, err
		}
	}
	err = s.store.InTx(ctx, func(tx store.Store) error {
		if err := tx.Organizations().Lock(ctx, p.OrgID); err != nil {
			return err
		}
		list, err := tx.Notifications().List(ctx, p.OrgID, projectID)
		if err != nil {
			return err
		}
		if len(list) >= MaxPerProject {
			return domain.Conflict("Too many notifications", "A project has at most 20 notifications: delete one first")
		}
		if err := tx.Notifications().Create(ctx, n); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return errProject404 // deleted meanwhile
			}
			return err
		}
		return s.audit(ctx, tx, p, "notification.created", n.ID, map[string]any{"projectId": projectID, "kind": n.Kind,
			"host": n.Host, "on": n.On})
	})
	if err != nil {
		return nil, err
	}
	return &Created{View: view(n), Secret: secret}, nil
}

// Delete removes the project's notification with its deliveries (admins). A delivery of it
// still in the outbox is dropped when its turn comes.
func (s *Service) Delete(ctx context.Context, p *identity.Principal, projectID, nid string) error {
	if err := p.RequireAdmin(); err != nil {
		return err
	}
	n, err := s.notification(ctx, p, projectID, nid)
	if err != nil {
		return err
	}
	return s.store.InTx(ctx, func(tx store.Store) error {
		if ok, err := tx.Notifications().Delete(ctx, p.OrgID, n.ID); err != nil || !ok {
			if err == nil {
				err = errNotification404
			}
			return err
		}
		return s.audit(ctx, tx, p, "notification.deleted", n.ID, map[string]any{"projectId": projectID, "kind": n.Kind,
			"host": n.Host})
	})
}

// Deliveries lists the notification's recent deliveries, newest first (every member).
func (s *Service) Deliveries(ctx context.Context, p *identity.Principal, projectID, nid string) ([]DeliveryView, error) {
	n, err := s.notification(ctx, p, projectID, nid)
	if err != nil {
		return nil, err
	}
	list, err := s.store.Notifications().Deliveries(ctx, p.OrgID, n.ID, KeepDeliveries)
	if err != nil {
		return nil, err
	}
	out := make([]DeliveryView, 0, len(list))
	for i := range list {
		out = append(out, deliveryView(&list[i]))
	}
	return out, nil
}

// Redeliver makes the delivery again (admins): the same event, with the same event ID, queued
// anew (pending, its attempts counted from zero, retried as a new one would be).
func (s *Service) Redeliver(ctx context.Context, p *identity.Principal, projectID, nid, did string) (*DeliveryView, error) {
	if err := p.RequireAdmin(); err != nil {
		return nil, err
	}
	n, err := s.notification(ctx, p, projectID, nid)
	if err != nil {
		return nil, err
	}
	var d *domain.Delivery
	err = s.store.InTx(ctx, func(tx store.Store) error {
		var err error
		d, err = tx.Notifications().Delivery(ctx, p.OrgID, did)
		if errors.Is(err, store.ErrNotFound) || (err == nil && d.NotificationID != n.ID) {
			return errDelivery404
		}
		if err != nil {
			return err
		}
		now := s.clock()
		d.Status, d.Attempts, d.CreatedAt, d.DeliveredAt = domain.DeliveryPending, 0, now, nil
		if err := tx.Notifications().UpdateDelivery(ctx, d); err != nil {
			return err
		}
		if err := enqueue(ctx, tx, d, now); err != nil {
			return err
		}
		return s.audit(ctx, tx, p, "notification.redelivered", n.ID, map[string]any{"projectId": projectID,
			"deliveryId": d.ID, "eventId": d.EventID})
	})
	if err != nil {
		return nil, err
	}
	s.wake()
	v := deliveryView(d)
	return &v, nil
}

// audit records an admin's change of a notification.
func (s *Service) audit(ctx context.Context, tx store.Store, p *identity.Principal, action, nid string, details map[string]any) error {
	return tx.Audit().Append(ctx, &domain.AuditEntry{ID: s.newID(), OrganizationID: p.OrgID, ActorID: p.UserID,
		Action: action, TargetType: "notification", TargetID: nid, Details: details, CreatedAt: s.clock()})
}
