-- Billing: the webhook log that makes each payment-provider event take effect once
-- (by its event ID), and the record of usage alerts already raised, so each threshold of each
-- resource alerts once per billing period however many replicas see it cross.

-- +goose Up
CREATE TABLE billing_events (
    event_id        TEXT PRIMARY KEY, -- the provider's event ID: a second delivery finds it taken
    event_type      TEXT NOT NULL,
    organization_id TEXT,             -- NULL when no organization matched
    status          TEXT NOT NULL,    -- success or error
    error           TEXT,
    payload         TEXT NOT NULL,    -- the event as delivered
    created_at      BIGINT NOT NULL,  -- the provider's creation time of the event
    processed_at    BIGINT NOT NULL
);
CREATE INDEX billing_events_org ON billing_events (organization_id, processed_at);

CREATE TABLE usage_alerts (
    organization_id TEXT NOT NULL,
    resource        TEXT NOT NULL,
    threshold       INTEGER NOT NULL,
    period_start    BIGINT NOT NULL,
    created_at      BIGINT NOT NULL,
    PRIMARY KEY (organization_id, resource, threshold, period_start)
);

-- +goose Down
DROP TABLE usage_alerts;
DROP TABLE billing_events;
