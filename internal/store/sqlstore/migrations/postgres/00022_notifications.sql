-- Projects' notifications (Slack, Microsoft Teams, signed webhooks): the receiver's URL and signing
-- secret sealed by the application (never stored in the clear; host is the only part shown), and
-- the rules choosing its events (a JSON array). And their deliveries: one row per event and
-- notification (event_id unique within it, so an event reported twice is delivered once), the
-- body the receiver gets and the latest attempt's outcome; only the newest are kept.

-- +goose Up
CREATE TABLE notifications (
    id              TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations (id),
    project_id      TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    kind            TEXT NOT NULL,
    url_cipher      TEXT NOT NULL,
    host            TEXT NOT NULL,
    secret_cipher   TEXT NOT NULL DEFAULT '',
    rules           TEXT NOT NULL DEFAULT '[]', -- JSON array
    created_by      TEXT NOT NULL DEFAULT '',
    created_at      BIGINT NOT NULL
);
CREATE INDEX notifications_by_project ON notifications (organization_id, project_id, created_at, id);

CREATE TABLE notification_deliveries (
    id              TEXT PRIMARY KEY,
    notification_id TEXT NOT NULL REFERENCES notifications (id) ON DELETE CASCADE,
    organization_id TEXT NOT NULL,
    event_id        TEXT NOT NULL,
    event           TEXT NOT NULL,
    body            TEXT NOT NULL,
    status          TEXT NOT NULL,
    status_code     INTEGER NOT NULL DEFAULT 0,
    duration_ms     BIGINT NOT NULL DEFAULT 0,
    attempts        INTEGER NOT NULL DEFAULT 0,
    last_error      TEXT NOT NULL DEFAULT '',
    created_at      BIGINT NOT NULL,
    last_attempt_at BIGINT,
    delivered_at    BIGINT
);
CREATE UNIQUE INDEX notification_deliveries_event ON notification_deliveries (notification_id, event_id);
-- A notification's deliveries, newest first.
CREATE INDEX notification_deliveries_by_notification ON notification_deliveries (notification_id, created_at, id);

-- +goose Down
DROP TABLE notification_deliveries;
DROP TABLE notifications;
