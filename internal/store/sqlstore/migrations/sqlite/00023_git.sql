-- Source control: a project's repository (where its runs' commit statuses go: "owner/name" on
-- GitHub, a project's path on GitLab; '' for none); the inbound hooks of projects (a secret
-- sealed by the application, since GitHub's signature needs the secret itself; the branch globs
-- and events that queue a run; the base URL template of the runs it queues); the deliveries a
-- hook took, by the host's delivery ID, so a delivery repeated queues nothing more (kept for a
-- bounded time, then pruned); and the one pull-request comment or merge-request note Verdict
-- keeps per project, repository and request, updated in place by later runs.

-- +goose Up
ALTER TABLE projects ADD COLUMN repository TEXT NOT NULL DEFAULT '';

CREATE TABLE scm_hooks (
    id                TEXT PRIMARY KEY,
    organization_id   TEXT NOT NULL REFERENCES organizations (id),
    project_id        TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    provider          TEXT NOT NULL,
    secret_cipher     TEXT NOT NULL,
    branches          TEXT NOT NULL DEFAULT '[]', -- JSON array of globs
    events            TEXT NOT NULL DEFAULT '[]', -- JSON array
    base_url_template TEXT NOT NULL DEFAULT '',
    created_at        BIGINT NOT NULL
);
CREATE INDEX scm_hooks_by_project ON scm_hooks (organization_id, project_id, created_at);

CREATE TABLE scm_hook_deliveries (
    hook_id     TEXT NOT NULL REFERENCES scm_hooks (id) ON DELETE CASCADE,
    delivery_id TEXT NOT NULL,
    received_at BIGINT NOT NULL,
    PRIMARY KEY (hook_id, delivery_id)
);
CREATE INDEX scm_hook_deliveries_by_time ON scm_hook_deliveries (received_at);

CREATE TABLE scm_comments (
    organization_id TEXT NOT NULL,
    project_id      TEXT NOT NULL,
    provider        TEXT NOT NULL,
    repository      TEXT NOT NULL,
    request         BIGINT NOT NULL, -- the pull or merge request's number
    comment_id      TEXT NOT NULL,
    updated_at      BIGINT NOT NULL,
    PRIMARY KEY (organization_id, project_id, provider, repository, request)
);

-- +goose Down
DROP TABLE scm_comments;
DROP TABLE scm_hook_deliveries;
DROP TABLE scm_hooks;
ALTER TABLE projects DROP COLUMN repository;
