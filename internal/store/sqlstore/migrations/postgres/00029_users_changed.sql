-- Every replica keeps the users it authenticates requests with in memory (the caller of every
-- request). A write to users, by any replica or by hand, notifies the channel verdict_users
-- when its transaction commits; each replica listens and drops what it keeps. One notification
-- per statement, with an empty payload, which PostgreSQL folds to one per transaction.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION verdict_users_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	PERFORM pg_notify('verdict_users', '');
	RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER users_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON users
	FOR EACH STATEMENT EXECUTE FUNCTION verdict_users_changed();

-- +goose Down
DROP TRIGGER users_changed ON users;
DROP FUNCTION verdict_users_changed();
