-- Every replica keeps pages of the run list in memory while it hears of every write to runs.
-- A write to an organization's runs, by any replica or by hand, notifies the channel
-- verdict_runs with the organization's ID when its transaction commits (PostgreSQL folds the
-- same payload to one notification per transaction); each replica listens and drops that
-- organization's pages. A TRUNCATE notifies '*': every organization's.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION verdict_runs_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP <> 'INSERT' THEN
		PERFORM pg_notify('verdict_runs', OLD.organization_id);
	END IF;
	IF TG_OP <> 'DELETE' AND (TG_OP = 'INSERT' OR NEW.organization_id <> OLD.organization_id) THEN
		PERFORM pg_notify('verdict_runs', NEW.organization_id);
	END IF;
	RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER runs_changed AFTER INSERT OR UPDATE OR DELETE ON executions
	FOR EACH ROW EXECUTE FUNCTION verdict_runs_changed();

-- +goose StatementBegin
CREATE FUNCTION verdict_runs_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	PERFORM pg_notify('verdict_runs', '*');
	RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER runs_truncated AFTER TRUNCATE ON executions
	FOR EACH STATEMENT EXECUTE FUNCTION verdict_runs_truncated();

-- +goose Down
DROP TRIGGER runs_truncated ON executions;
DROP FUNCTION verdict_runs_truncated();
DROP TRIGGER runs_changed ON executions;
DROP FUNCTION verdict_runs_changed();
