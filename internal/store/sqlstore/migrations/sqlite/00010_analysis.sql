-- Failure analysis: the analysis of a run, the failure signatures seen in each organization's
-- runs (their history), people's triages (what the built-in analyser learns from), and each
-- organization's choice of model and own provider keys (sealed).

-- +goose Up
ALTER TABLE executions ADD COLUMN analysis TEXT;

CREATE TABLE failure_occurrences (
    execution_id    TEXT NOT NULL REFERENCES executions (id) ON DELETE CASCADE,
    organization_id TEXT NOT NULL,
    signature       TEXT NOT NULL,
    task_id         TEXT NOT NULL,
    test_name       TEXT NOT NULL,  -- the first failed test with it
    failures        INTEGER NOT NULL, -- the run's failed tests with it
    queued_at       BIGINT NOT NULL,
    PRIMARY KEY (execution_id, signature)
);
CREATE INDEX failure_occurrences_by_signature ON failure_occurrences (organization_id, signature, queued_at);

-- No foreign key to executions: a person's triage outlives the run it was given on.
CREATE TABLE triages (
    id              TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations (id),
    execution_id    TEXT NOT NULL,
    task_id         TEXT NOT NULL,
    signature       TEXT NOT NULL,
    normalized      TEXT NOT NULL,
    category        TEXT NOT NULL,
    user_id         TEXT NOT NULL,
    user_name       TEXT NOT NULL,
    created_at      BIGINT NOT NULL
);
CREATE INDEX triages_by_org ON triages (organization_id, created_at);

ALTER TABLE organizations ADD COLUMN ai_default_model TEXT NOT NULL DEFAULT '';
ALTER TABLE organizations ADD COLUMN ai_keys TEXT NOT NULL DEFAULT '{}';

-- +goose Down
ALTER TABLE organizations DROP COLUMN ai_keys;
ALTER TABLE organizations DROP COLUMN ai_default_model;
DROP TABLE triages;
DROP TABLE failure_occurrences;
ALTER TABLE executions DROP COLUMN analysis;
