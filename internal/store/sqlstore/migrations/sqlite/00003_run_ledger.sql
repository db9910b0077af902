-- The run ledger: one row per queued run, never deleted with the run, so that deleting an
-- execution does not give its run back to the billing period's maxTestRuns.

-- +goose Up
CREATE TABLE run_ledger (
    execution_id    TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL,
    queued_at       BIGINT NOT NULL
);
CREATE INDEX run_ledger_org_time ON run_ledger (organization_id, queued_at);
INSERT INTO run_ledger (execution_id, organization_id, queued_at)
    SELECT id, organization_id, queued_at FROM executions;

-- +goose Down
DROP TABLE run_ledger;
