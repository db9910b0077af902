-- Integrations with outside services, one per organization and provider: the settings (a JSON
-- document), the API key sealed by the application (never stored in the clear), and whether it
-- is on. And the tickets created in trackers from runs: a row each, so tickets created at the
-- same time are all kept, and a run's own row (and the cached list row of a finished run) is
-- never written for them.

-- +goose Up
CREATE TABLE integrations (
    organization_id TEXT NOT NULL REFERENCES organizations (id),
    provider        TEXT NOT NULL,
    key_cipher      TEXT NOT NULL,
    settings        TEXT NOT NULL DEFAULT '{}', -- JSON object
    enabled         BOOLEAN NOT NULL DEFAULT TRUE,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL,
    PRIMARY KEY (organization_id, provider)
);

CREATE TABLE execution_tickets (
    id              TEXT PRIMARY KEY,
    execution_id    TEXT NOT NULL REFERENCES executions (id) ON DELETE CASCADE,
    organization_id TEXT NOT NULL,
    provider        TEXT NOT NULL,
    external_id     TEXT NOT NULL,
    identifier      TEXT NOT NULL DEFAULT '',
    url             TEXT NOT NULL,
    title           TEXT NOT NULL DEFAULT '',
    created_by      TEXT NOT NULL DEFAULT '', -- no foreign key: the user may be deleted, the ticket stays
    created_at      BIGINT NOT NULL
);
-- A run's tickets, oldest first.
CREATE INDEX execution_tickets_by_execution ON execution_tickets (execution_id, created_at, id);

-- +goose Down
DROP TABLE execution_tickets;
DROP TABLE integrations;
