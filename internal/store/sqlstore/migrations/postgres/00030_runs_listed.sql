-- The run list's page of IDs, versions and total (executionRepo.List) from one index alone:
-- the organization's top-level runs (a sharded run's containers are not listed) in the list's
-- order, with each run's version beside its ID. Read through executions_organization_queued,
-- a page read every top-level run's row to filter it and count it (the runs of a busy
-- organization, hundreds of heap rows a read) and then each listed run's row again for its
-- version. An index-only scan needs the table's pages marked all-visible, which autovacuum
-- keeps up with on a live table; a page written since is read from the heap as before.
-- (SQLite keeps whole pages in memory between its writes and has no INCLUDE.)

-- +goose Up
CREATE INDEX executions_listed ON executions (organization_id, queued_at DESC, id DESC) INCLUDE (version)
	WHERE parent_id = '';

-- +goose Down
DROP INDEX executions_listed;
