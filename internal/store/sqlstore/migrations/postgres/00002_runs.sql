-- Projects, executions (the run queue) and run logs. Timestamps are unix milliseconds;
-- booleans are BOOLEAN; list and object fields are JSON text.

-- +goose Up
CREATE TABLE projects (
    id              TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations (id),
    name            TEXT NOT NULL,
    image           TEXT NOT NULL DEFAULT '',
    target_urls     TEXT NOT NULL DEFAULT '{}',  -- JSON object: environment → URL
    default_folder  TEXT NOT NULL DEFAULT '',
    timeout_seconds INTEGER NOT NULL DEFAULT 0,
    report_folders  TEXT NOT NULL DEFAULT '[]',  -- JSON array
    env_vars        TEXT NOT NULL DEFAULT '[]',  -- JSON array of {key, value, secret}; secrets arrive encrypted
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL,
    -- Names are unique per organization (exact match); this also serves every per-organization lookup.
    UNIQUE (organization_id, name)
);

CREATE TABLE executions (
    id               TEXT PRIMARY KEY,
    organization_id  TEXT NOT NULL REFERENCES organizations (id),
    task_id          TEXT NOT NULL,
    project_id       TEXT NOT NULL DEFAULT '', -- no foreign key: a deleted project's runs stay
    image            TEXT NOT NULL,
    command          TEXT NOT NULL DEFAULT '',
    environment      TEXT NOT NULL DEFAULT '',
    base_url         TEXT NOT NULL DEFAULT '',
    folder           TEXT NOT NULL DEFAULT '',
    timeout_seconds  INTEGER NOT NULL DEFAULT 0,
    report_folders   TEXT NOT NULL DEFAULT '[]', -- JSON array
    env_cipher       TEXT NOT NULL DEFAULT '',
    env_names        TEXT NOT NULL DEFAULT '[]', -- JSON array
    triggered_by     TEXT NOT NULL DEFAULT '',   -- no foreign key: the user may be deleted, the run stays
    via_api_key      BOOLEAN NOT NULL DEFAULT FALSE,
    status           TEXT NOT NULL,
    queue_reason     TEXT NOT NULL DEFAULT '',
    error_message    TEXT NOT NULL DEFAULT '',
    exit_code        INTEGER,
    queued_at        BIGINT NOT NULL,
    started_at       BIGINT,
    finished_at      BIGINT,
    runner_id        TEXT NOT NULL DEFAULT '',
    container_id     TEXT NOT NULL DEFAULT '',
    lease_until      BIGINT,
    cancel_requested BOOLEAN NOT NULL DEFAULT FALSE,
    summary          TEXT NOT NULL DEFAULT '{}', -- JSON object
    tests            TEXT NOT NULL DEFAULT '[]', -- JSON array
    report_dirs      TEXT NOT NULL DEFAULT '[]', -- JSON array
    report_bytes     BIGINT NOT NULL DEFAULT 0,
    notes            TEXT NOT NULL DEFAULT '[]', -- JSON array
    -- A taskId names one run of one organization; another organization may use the same one.
    UNIQUE (organization_id, task_id)
);
-- Claim and ListPending: PENDING runs oldest first.
CREATE INDEX executions_status_queued ON executions (status, queued_at, id);
-- List (newest first) and CountSince.
CREATE INDEX executions_organization_queued ON executions (organization_id, queued_at, id);
-- CountActive and the claim's per-organization slot count; List with a status filter.
CREATE INDEX executions_organization_status ON executions (organization_id, status);
-- Expired: leases of RUNNING and ANALYZING runs.
CREATE INDEX executions_status_lease ON executions (status, lease_until);

CREATE TABLE execution_logs (
    execution_id TEXT NOT NULL REFERENCES executions (id) ON DELETE CASCADE,
    seq          BIGINT NOT NULL,
    chunk        BYTEA NOT NULL, -- bytes as the container wrote them (may hold NUL or invalid UTF-8)
    PRIMARY KEY (execution_id, seq)
);

-- +goose Down
DROP TABLE execution_logs;
DROP TABLE executions;
DROP TABLE projects;
