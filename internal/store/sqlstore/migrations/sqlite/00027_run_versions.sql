-- A run's version counts the writes to its row: every UPDATE of executions adds one (a test of
-- the store holds every such statement to it). The run list reads its page's IDs with their
-- versions and serves each run it keeps at the same version from memory, finished or not, on
-- every replica: a run's row changes only by an UPDATE, which moves its version.

-- +goose Up
ALTER TABLE executions ADD COLUMN version INTEGER NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE executions DROP COLUMN version;
