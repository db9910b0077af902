-- Schedules: a project's recurring runs, a cron expression in a time zone. next_fire_at is the
-- next time a schedule is due; every replica polls the due ones through schedules_due (enabled
-- first, so the poll reads only enabled rows in time order) and claims a fire by moving
-- next_fire_at on with a conditional UPDATE, so each fire is taken by one replica. The claim also
-- marks the fire pending (pending_fire_at, until pending_until): recording what the fire did
-- clears it, and a fire still pending past its lease (the replica died before it queued the run)
-- is taken again through schedules_pending by another replica. Deleting the project deletes its
-- schedules.

-- +goose Up
CREATE TABLE schedules (
    id              TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations (id),
    project_id      TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    name            TEXT NOT NULL,
    cron            TEXT NOT NULL,
    timezone        TEXT NOT NULL,
    folder          TEXT NOT NULL DEFAULT '',
    base_url        TEXT NOT NULL DEFAULT '',
    env_vars        TEXT NOT NULL DEFAULT '[]',  -- JSON array of {key, value, secret}; secrets sealed
    labels          TEXT NOT NULL DEFAULT '{}',  -- JSON object
    enabled         BOOLEAN NOT NULL,
    next_fire_at    BIGINT NOT NULL,
    last_fire_at    BIGINT,
    last_task_id    TEXT NOT NULL DEFAULT '',
    last_error      TEXT NOT NULL DEFAULT '',
    last_refused_at BIGINT,
    missed_fires    INTEGER NOT NULL DEFAULT 0,
    last_missed_at  BIGINT,
    pending_fire_at BIGINT,          -- the fire claimed and not yet recorded
    pending_until   BIGINT,          -- its lease; NULL when no fire is pending
    created_by      TEXT NOT NULL DEFAULT '',
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL,
    UNIQUE (organization_id, project_id, name)
);
CREATE INDEX schedules_due ON schedules (enabled, next_fire_at);
CREATE INDEX schedules_pending ON schedules (pending_until) WHERE pending_until IS NOT NULL;

-- +goose Down
DROP TABLE schedules;
