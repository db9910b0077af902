-- Identity and tenancy. Timestamps are unix milliseconds; booleans are BOOLEAN.

-- +goose Up
CREATE TABLE organizations (
    id                   TEXT PRIMARY KEY,
    name                 TEXT NOT NULL,
    slug                 TEXT NOT NULL,
    plan                 TEXT NOT NULL,
    ai_analysis_enabled  BOOLEAN NOT NULL DEFAULT FALSE,
    features             TEXT NOT NULL DEFAULT '{}',
    -- Kept out of the billing JSON so webhooks can find the organization by index.
    provider_customer_id TEXT,
    billing              TEXT NOT NULL DEFAULT '{}',
    storage_used_bytes   BIGINT NOT NULL DEFAULT 0,
    created_at           BIGINT NOT NULL
);
CREATE UNIQUE INDEX organizations_provider_customer_id ON organizations (provider_customer_id)
    WHERE provider_customer_id IS NOT NULL;

CREATE TABLE users (
    id              TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations (id),
    email           TEXT NOT NULL UNIQUE, -- lower-cased by the store
    name            TEXT NOT NULL,
    password_hash   TEXT NOT NULL,
    role            TEXT NOT NULL,
    status          TEXT NOT NULL,
    last_login_at   BIGINT,
    created_at      BIGINT NOT NULL,
    -- Target of api_keys' foreign key: a key can only belong to a user of its own organization.
    UNIQUE (organization_id, id)
);
CREATE INDEX users_organization_created ON users (organization_id, created_at);

CREATE TABLE invitations (
    id              TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations (id),
    email           TEXT NOT NULL,
    role            TEXT NOT NULL,
    status          TEXT NOT NULL,
    token_hash      TEXT NOT NULL UNIQUE,
    invited_by      TEXT NOT NULL, -- no foreign key: the inviter may be deleted, the record stays
    invited_by_name TEXT NOT NULL,
    expires_at      BIGINT NOT NULL,
    created_at      BIGINT NOT NULL,
    accepted_at     BIGINT
);
CREATE INDEX invitations_organization_created ON invitations (organization_id, created_at);
CREATE INDEX invitations_organization_email ON invitations (organization_id, email);

CREATE TABLE api_keys (
    id              TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL,
    user_id         TEXT NOT NULL,
    name            TEXT NOT NULL,
    prefix          TEXT NOT NULL,
    hash            TEXT NOT NULL UNIQUE,
    created_at      BIGINT NOT NULL,
    last_used_at    BIGINT,
    -- A credential dies with its owner (unlike historical records, which keep the user's ID).
    FOREIGN KEY (organization_id, user_id) REFERENCES users (organization_id, id) ON DELETE CASCADE
);
CREATE INDEX api_keys_organization_user ON api_keys (organization_id, user_id);

CREATE TABLE audit_log (
    seq             BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, -- insertion order, to order entries of the same millisecond
    id              TEXT NOT NULL UNIQUE,
    organization_id TEXT NOT NULL REFERENCES organizations (id),
    actor_id        TEXT NOT NULL, -- no foreign key: the actor may be deleted, the entry stays
    action          TEXT NOT NULL,
    target_type     TEXT NOT NULL,
    target_id       TEXT NOT NULL,
    details         TEXT NOT NULL DEFAULT '{}',
    created_at      BIGINT NOT NULL
);
CREATE INDEX audit_log_organization_created ON audit_log (organization_id, created_at, seq);

CREATE TABLE mail_outbox (
    id           TEXT PRIMARY KEY,
    recipients   TEXT NOT NULL, -- JSON array
    subject      TEXT NOT NULL,
    body_html    TEXT NOT NULL,
    body_text    TEXT NOT NULL,
    attempts     INTEGER NOT NULL DEFAULT 0,
    next_attempt BIGINT NOT NULL,
    sent_at      BIGINT,
    given_up     BOOLEAN NOT NULL DEFAULT FALSE,
    last_error   TEXT NOT NULL DEFAULT '',
    created_at   BIGINT NOT NULL
);
CREATE INDEX mail_outbox_due ON mail_outbox (next_attempt) WHERE sent_at IS NULL AND NOT given_up;

-- +goose Down
DROP TABLE mail_outbox;
DROP TABLE audit_log;
DROP TABLE api_keys;
DROP TABLE invitations;
DROP TABLE users;
DROP TABLE organizations;
