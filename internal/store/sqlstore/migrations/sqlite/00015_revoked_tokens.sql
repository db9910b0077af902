-- Session tokens ended before their expiry (signed out), by the JWT's ID. Every replica keeps
-- the list in memory and reads the rows above the highest seq it has seen, about every second;
-- a row is deleted once its token has expired. AUTOINCREMENT: a seq is never used twice, even
-- after the newest rows are deleted, so no replica skips a revocation.

-- +goose Up
CREATE TABLE revoked_tokens (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    token_id   TEXT NOT NULL UNIQUE,
    expires_at INTEGER NOT NULL,
    revoked_at INTEGER NOT NULL
);
CREATE INDEX revoked_tokens_expires ON revoked_tokens (expires_at);

-- +goose Down
DROP TABLE revoked_tokens;
