-- The run-health overview's flaky tests: an organization's tests with a flake event among their
-- newest results (flake_rate above 0), most recently seen first, found without reading its
-- other tests (TestRepo.Flaking writes the same condition).

-- +goose Up
CREATE INDEX tests_flaking ON tests (organization_id, last_seen_at, id) WHERE flake_rate > 0;

-- +goose Down
DROP INDEX tests_flaking;
