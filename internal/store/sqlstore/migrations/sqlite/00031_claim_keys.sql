-- A remote runner names each of its asks for a run with a random claim key and asks again with
-- the same key when the answer is lost (the replica died, the connection broke). The key is
-- kept with the run it claimed, so that any replica answers the repeated ask with that run
-- while the runner's process holds it, instead of claiming another and leaving the first to
-- wait out its lease. A run's held rows are few (RUNNING or ANALYZING, found through
-- executions_status_queued), so the lookup needs no index of its own.

-- +goose Up
ALTER TABLE executions ADD COLUMN claim_key TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE executions DROP COLUMN claim_key;
