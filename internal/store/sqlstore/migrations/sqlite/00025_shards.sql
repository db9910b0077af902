-- Sharded runs: a run spread over several containers keeps its own record (the parent, shown by
-- the API, with shards > 0) and one record per container (its shards and retry containers,
-- parent_id naming the parent), which the runners claim like any run. The parent is never
-- claimed and holds no run slot; its shards each hold one. assigned is the JSON list of tests
-- or test files a container runs (on the parent: all those assigned). attempt counts a shard
-- started again after its runner was lost. A project keeps its runs' default shards and retries.

-- +goose Up
ALTER TABLE executions ADD COLUMN parent_id TEXT NOT NULL DEFAULT '';
ALTER TABLE executions ADD COLUMN shards INTEGER NOT NULL DEFAULT 0;
ALTER TABLE executions ADD COLUMN retries INTEGER NOT NULL DEFAULT 0;
ALTER TABLE executions ADD COLUMN shard_index INTEGER NOT NULL DEFAULT 0;
ALTER TABLE executions ADD COLUMN retry_round INTEGER NOT NULL DEFAULT 0;
ALTER TABLE executions ADD COLUMN attempt INTEGER NOT NULL DEFAULT 0;
ALTER TABLE executions ADD COLUMN assigned TEXT;
CREATE INDEX executions_by_parent ON executions (parent_id) WHERE parent_id <> '';
ALTER TABLE projects ADD COLUMN shards INTEGER NOT NULL DEFAULT 0;
ALTER TABLE projects ADD COLUMN retries INTEGER NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE projects DROP COLUMN retries;
ALTER TABLE projects DROP COLUMN shards;
DROP INDEX executions_by_parent;
ALTER TABLE executions DROP COLUMN assigned;
ALTER TABLE executions DROP COLUMN attempt;
ALTER TABLE executions DROP COLUMN retry_round;
ALTER TABLE executions DROP COLUMN shard_index;
ALTER TABLE executions DROP COLUMN retries;
ALTER TABLE executions DROP COLUMN shards;
ALTER TABLE executions DROP COLUMN parent_id;
