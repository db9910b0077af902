-- Session tokens ended before their expiry (signed out), by the JWT's ID. Every replica keeps
-- the list in memory and reads the rows above the highest seq it has seen, about every second;
-- a row is deleted once its token has expired. Sequence values can commit out of order, so
-- readers read a few seconds back (identity.Service.SyncRevocations).

-- +goose Up
CREATE TABLE revoked_tokens (
    seq        BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    token_id   TEXT NOT NULL UNIQUE,
    expires_at BIGINT NOT NULL,
    revoked_at BIGINT NOT NULL
);
CREATE INDEX revoked_tokens_expires ON revoked_tokens (expires_at);

-- +goose Down
DROP TABLE revoked_tokens;
