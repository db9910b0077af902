package domain

import "time"

// Kinds of notification: where a project's notifications go.
const (
	NotifySlack   = "slack"   // a Slack incoming webhook: a Block Kit message
	NotifyTeams   = "teams"   // a Microsoft Teams workflow webhook: an Adaptive Card
	NotifyWebhook = "webhook" // any HTTPS endpoint: signed JSON events
)

// Rules of a notification: which runs it is told about.
const (
	NotifyOnFailure    = "failure"     // a run that ended FAILED or ERROR (and a refused schedule)
	NotifyOnGateFailed = "gate_failed" // a run whose quality gate failed
	NotifyOnRecovery   = "recovery"    // the first passing run of the project after failures
	NotifyOnAlways     = "always"      // every finished run (and every refused schedule)
)

// Events a notification delivers (the webhook's "type").
const (
	EventRunFinished     = "run.finished"
	EventRunGateFailed   = "run.gate_failed"
	EventTestNewFailure  = "test.new_failure"
	EventScheduleRefused = "schedule.refused"
)

// Notification is a project's notification: a receiver (its URL and signing secret sealed by the
// notifications' service, never stored in the clear) and the rules that choose its events.
type Notification struct {
	ID, OrganizationID, ProjectID string
	Kind                          string
	URLCipher                     string // the sealed URL
	Host                          string // the URL's host, the only part ever shown
	SecretCipher                  string // the sealed signing secret of a webhook; "" for Slack and Teams
	On                            []string
	CreatedBy                     string
	CreatedAt                     time.Time
}

// Statuses of a notification's delivery.
const (
	DeliveryPending   = "pending"   // not tried yet, or being retried
	DeliveryDelivered = "delivered" // the receiver answered 2xx
	DeliveryFailed    = "failed"    // given up: refused (4xx) or retried past its window
)

// Delivery is one event sent (or to be sent) to one notification's receiver, with its latest
// attempt's outcome. Body is what the receiver gets (without the signature, made per attempt).
type Delivery struct {
	ID, OrganizationID, NotificationID string
	EventID, Event                     string
	Body                               string
	Status                             string
	StatusCode                         int   // of the latest attempt; 0: no answer
	DurationMs                         int64 // of the latest attempt
	Attempts                           int
	LastError                          string
	CreatedAt                          time.Time
	LastAttemptAt, DeliveredAt         *time.Time
}
