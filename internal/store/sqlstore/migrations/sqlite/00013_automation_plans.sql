-- Saved automation plans: the planner's Markdown documents, per organization, opened again
-- without a model call.

-- +goose Up
CREATE TABLE automation_plans (
    id              TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations (id),
    project_id      TEXT NOT NULL,   -- no foreign key: a plan outlives its project
    framework       TEXT NOT NULL,
    design_pattern  TEXT NOT NULL,
    test_ids        TEXT NOT NULL,   -- JSON array
    markdown        TEXT NOT NULL,
    provider        TEXT NOT NULL,
    model           TEXT NOT NULL,
    created_by      TEXT NOT NULL,
    created_at      BIGINT NOT NULL
);
CREATE INDEX automation_plans_by_org ON automation_plans (organization_id, created_at);
CREATE INDEX automation_plans_by_project ON automation_plans (organization_id, project_id, created_at);

-- +goose Down
DROP TABLE automation_plans;
