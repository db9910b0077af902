-- Manual test cases: the tests people carry out by hand, per project, that the automation
-- planner reads. A test case is unique in its project by suite and title (exact match), which
-- is what a CSV import upserts on; deleting the project deletes its test cases.
--
-- Tags are kept twice: in order as a JSON array in test_cases.tags (what a read returns, without
-- a join), and one row per tag in test_case_tags, which the tag filter and the list of a
-- project's distinct tags read through an index (a JSON column would need a scan, and a LIKE on
-- its text would also match part of a tag). The repository writes both in one transaction.
--
-- Suites, titles and tags sort by their bytes (COLLATE "C"), as SQLite sorts them, so lists
-- come in the same order on both databases, and the indexes serve that order.

-- +goose Up
CREATE TABLE test_cases (
    id              TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations (id),
    project_id      TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    suite           TEXT COLLATE "C" NOT NULL DEFAULT '',
    title           TEXT COLLATE "C" NOT NULL,
    tags            TEXT NOT NULL DEFAULT '[]',  -- JSON array of strings, in order
    priority        TEXT NOT NULL DEFAULT '',    -- critical, high, medium, low or empty
    preconditions   TEXT NOT NULL DEFAULT '',
    steps           TEXT NOT NULL DEFAULT '[]',  -- JSON array of {action, expected}
    created_by      TEXT NOT NULL,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL,
    -- The upsert key; also serves listing a project's test cases by suite and title.
    UNIQUE (organization_id, project_id, suite, title)
);

CREATE TABLE test_case_tags (
    test_case_id    TEXT NOT NULL REFERENCES test_cases (id) ON DELETE CASCADE,
    organization_id TEXT NOT NULL,
    project_id      TEXT NOT NULL,
    tag             TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (test_case_id, tag)
);
CREATE INDEX test_case_tags_by_tag ON test_case_tags (organization_id, project_id, tag);

-- +goose Down
DROP TABLE test_case_tags;
DROP TABLE test_cases;
