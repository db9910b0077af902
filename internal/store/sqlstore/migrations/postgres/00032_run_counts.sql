-- The run list's total, kept beside the runs: each organization's count of top-level runs (a
-- sharded run's containers are not listed), moved by triggers in the transaction that adds or
-- deletes runs, however they are added or deleted (the API, retention, an erasure, by hand).
-- The unfiltered list, which every dashboard reads first, reads its total here instead of
-- counting every run of the organization on each read: a count grows with the organization's
-- history, and the newest runs' rows, written moments ago, are read from the table rather
-- than from the index alone (their pages are not yet marked all-visible). Filtered lists still
-- count. Statement triggers with transition tables: a retention batch of thousands of runs
-- moves each organization's count once. (SQLite keeps whole pages of the list in memory
-- between its writes.)

-- +goose Up
CREATE TABLE execution_counts (
	organization_id TEXT PRIMARY KEY REFERENCES organizations (id) ON DELETE CASCADE,
	runs BIGINT NOT NULL
);
INSERT INTO execution_counts (organization_id, runs)
	SELECT organization_id, COUNT(*) FROM executions WHERE parent_id = '' GROUP BY organization_id;

-- +goose StatementBegin
CREATE FUNCTION verdict_runs_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO execution_counts AS c (organization_id, runs)
		SELECT organization_id, COUNT(*) FROM added WHERE parent_id = '' GROUP BY organization_id
		ON CONFLICT (organization_id) DO UPDATE SET runs = c.runs + EXCLUDED.runs;
	RETURN NULL;
END
$$;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE FUNCTION verdict_runs_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	UPDATE execution_counts AS c SET runs = c.runs - d.n
		FROM (SELECT organization_id, COUNT(*) AS n FROM deleted WHERE parent_id = '' GROUP BY organization_id) d
		WHERE c.organization_id = d.organization_id;
	RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER executions_added AFTER INSERT ON executions
	REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION verdict_runs_added();
CREATE TRIGGER executions_deleted AFTER DELETE ON executions
	REFERENCING OLD TABLE AS deleted FOR EACH STATEMENT EXECUTE FUNCTION verdict_runs_deleted();

-- +goose Down
DROP TRIGGER executions_deleted ON executions;
DROP TRIGGER executions_added ON executions;
DROP FUNCTION verdict_runs_deleted();
DROP FUNCTION verdict_runs_added();
DROP TABLE execution_counts;
