-- The outbox also queues the post-run steps' deliveries (a chat message, a webhook call): kind
-- is '' for an e-mail, else the kind of delivery ("step:<name>"), which the worker hands to
-- that step. dedupe_key, when set, keeps one row per key: a step enqueues once per run however
-- often the run's end is reported.

-- +goose Up
ALTER TABLE mail_outbox ADD COLUMN kind TEXT NOT NULL DEFAULT '';
ALTER TABLE mail_outbox ADD COLUMN dedupe_key TEXT;
CREATE UNIQUE INDEX mail_outbox_dedupe ON mail_outbox (dedupe_key);

-- +goose Down
DROP INDEX mail_outbox_dedupe;
ALTER TABLE mail_outbox DROP COLUMN dedupe_key;
ALTER TABLE mail_outbox DROP COLUMN kind;
