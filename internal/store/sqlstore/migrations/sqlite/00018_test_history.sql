-- Release gates. Every parsed result of a finished run is a row of test_results, of a test of
-- tests: one per identity (organization, scope: the project, or the image of runs without one,
-- suite, name), with the aggregates kept as results are recorded (its newest results in
-- recent, a JSON array newest first, and the figures computed from them), and its
-- quarantine. A run is marked tests_recorded once its results are in; the recorder catches up
-- with finished runs not marked yet (runs from before this migration, a crash between a run's
-- end and its recording), oldest first.
-- A run also keeps its quarantined failures and its quality gate's judgement (JSON), whether
-- it is pinned (exempt from retention) and when retention deleted its files. A project keeps
-- its gate rules (JSON; '' none) and its automatic quarantine rule (a flake rate, NULL: off);
-- an organization its retention days (NULL: the plan's default).

-- +goose Up
CREATE TABLE tests (
    id                  TEXT PRIMARY KEY,
    organization_id     TEXT NOT NULL REFERENCES organizations (id),
    project_id          TEXT NOT NULL DEFAULT '',
    scope               TEXT NOT NULL,
    suite               TEXT NOT NULL,
    name                TEXT NOT NULL,
    runs                INTEGER NOT NULL DEFAULT 0,
    recent              TEXT NOT NULL DEFAULT '[]',
    last_status         TEXT NOT NULL DEFAULT '',
    pass_rate           REAL NOT NULL DEFAULT 0,
    flake_rate          REAL NOT NULL DEFAULT 0,
    flaky               INTEGER NOT NULL DEFAULT 0,
    first_seen_at       INTEGER NOT NULL,
    last_seen_at        INTEGER NOT NULL,
    last_failed_task_id TEXT NOT NULL DEFAULT '',
    last_failed_at      INTEGER NOT NULL DEFAULT 0,
    last_passed_task_id TEXT NOT NULL DEFAULT '',
    last_passed_at      INTEGER NOT NULL DEFAULT 0,
    quarantine_reason   TEXT NOT NULL DEFAULT '',
    quarantine_until    INTEGER,
    quarantine_by       TEXT NOT NULL DEFAULT '',
    quarantine_at       INTEGER,
    UNIQUE (organization_id, scope, suite, name)
);
-- The test list of a scope reads it by the unique index's prefix (organization_id, scope) and
-- sorts a scope's tests in memory: no index holds a column a run's recording changes, so those
-- updates rewrite no index entry (PostgreSQL's heap-only updates, room for which the fill
-- factor keeps in each page).
-- A finishing run's quarantined tests.
CREATE INDEX tests_quarantined ON tests (organization_id, scope, quarantine_until) WHERE quarantine_until IS NOT NULL;

CREATE TABLE test_results (
    test_id         TEXT NOT NULL REFERENCES tests (id) ON DELETE CASCADE,
    execution_id    TEXT NOT NULL REFERENCES executions (id) ON DELETE CASCADE,
    organization_id TEXT NOT NULL,
    task_id         TEXT NOT NULL,
    status          TEXT NOT NULL,
    duration_ms     INTEGER NOT NULL DEFAULT 0,
    retries         INTEGER NOT NULL DEFAULT 0,
    signature       TEXT NOT NULL DEFAULT '',
    message         TEXT NOT NULL DEFAULT '',
    branch          TEXT NOT NULL DEFAULT '',
    commit_sha      TEXT NOT NULL DEFAULT '',
    created_at      INTEGER NOT NULL
);
-- A test's history, newest first. (No primary key: a run's results are written once, in the
-- transaction that marks the run recorded, and an index fewer makes that write cheaper.)
CREATE INDEX test_results_by_test ON test_results (test_id, created_at);
-- A run's results (compare, the gate, deleting a run).
CREATE INDEX test_results_by_run ON test_results (execution_id);

ALTER TABLE executions ADD COLUMN tests_recorded INTEGER NOT NULL DEFAULT 0;
ALTER TABLE executions ADD COLUMN quarantined_failures TEXT NOT NULL DEFAULT '[]';
ALTER TABLE executions ADD COLUMN gate TEXT NOT NULL DEFAULT '';
ALTER TABLE executions ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0;
ALTER TABLE executions ADD COLUMN files_expired_at INTEGER;
-- The recorder's queue: finished runs not recorded yet.
CREATE INDEX executions_unrecorded ON executions (finished_at, id) WHERE tests_recorded = 0 AND finished_at IS NOT NULL;
-- Retention: an organization's finished runs by age.
CREATE INDEX executions_organization_finished ON executions (organization_id, finished_at);

ALTER TABLE projects ADD COLUMN gate_rules TEXT NOT NULL DEFAULT '';
ALTER TABLE projects ADD COLUMN auto_quarantine_rate REAL;

ALTER TABLE organizations ADD COLUMN retention_logs_days INTEGER;
ALTER TABLE organizations ADD COLUMN retention_runs_days INTEGER;

-- +goose Down
ALTER TABLE organizations DROP COLUMN retention_runs_days;
ALTER TABLE organizations DROP COLUMN retention_logs_days;
ALTER TABLE projects DROP COLUMN auto_quarantine_rate;
ALTER TABLE projects DROP COLUMN gate_rules;
DROP INDEX executions_organization_finished;
DROP INDEX executions_unrecorded;
ALTER TABLE executions DROP COLUMN files_expired_at;
ALTER TABLE executions DROP COLUMN pinned;
ALTER TABLE executions DROP COLUMN gate;
ALTER TABLE executions DROP COLUMN quarantined_failures;
ALTER TABLE executions DROP COLUMN tests_recorded;
DROP TABLE test_results;
DROP TABLE tests;
