-- The runner process that claimed a run: a remote runner (`verdict runner`) draws a random
-- instance ID at each start, and only that process may report on the run (renew its lease,
-- record its container, append its log, upload its reports, settle it), even when another
-- process presents the same runner name and secret. Empty for the embedded runner.

-- +goose Up
ALTER TABLE executions ADD COLUMN runner_instance TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE executions DROP COLUMN runner_instance;
