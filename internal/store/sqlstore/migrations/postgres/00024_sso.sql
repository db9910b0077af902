-- The audit log people read, and sign-in through an organization's OpenID Connect provider.
-- The audit log gains the address a change came from and an index to filter by actor; an
-- entry is never changed once written (a trigger refuses every UPDATE; rows go only with their
-- organization). An organization's provider: issuer, client, the client secret sealed by the
-- application, the role new members get and whether passwords are refused for its members; the
-- e-mail domains it signs in, each claimed by one organization, so the sign-in page finds the
-- provider of an address it has never seen.

-- +goose Up
ALTER TABLE audit_log ADD COLUMN ip TEXT NOT NULL DEFAULT '';
CREATE INDEX audit_log_organization_actor ON audit_log (organization_id, actor_id, created_at);

-- +goose StatementBegin
CREATE FUNCTION audit_log_append_only() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'audit_log is append-only';
END;
$$ LANGUAGE plpgsql;
-- +goose StatementEnd
CREATE TRIGGER audit_log_append_only BEFORE UPDATE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();

CREATE TABLE organization_sso (
    organization_id      TEXT PRIMARY KEY REFERENCES organizations (id),
    issuer               TEXT NOT NULL,
    client_id            TEXT NOT NULL,
    client_secret_cipher TEXT NOT NULL,
    domains              TEXT NOT NULL DEFAULT '[]', -- JSON array, lower-case
    default_role         TEXT NOT NULL,
    required             BOOLEAN NOT NULL DEFAULT FALSE,
    updated_at           BIGINT NOT NULL
);

CREATE TABLE sso_domains (
    domain          TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations (id)
);
CREATE INDEX sso_domains_organization ON sso_domains (organization_id);

-- +goose Down
DROP TABLE sso_domains;
DROP TABLE organization_sso;
DROP TRIGGER audit_log_append_only ON audit_log;
DROP FUNCTION audit_log_append_only();
DROP INDEX audit_log_organization_actor;
ALTER TABLE audit_log DROP COLUMN ip;
