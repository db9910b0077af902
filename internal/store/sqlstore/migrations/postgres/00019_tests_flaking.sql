-- The run-health overview's flaky tests: an organization's tests with a flake event among their
-- newest results (flake_rate above 0), found without reading its other tests
-- (TestRepo.Flaking writes the same condition, then keeps those seen in its window). The index
-- holds no column a run's recording changes on every test (last_seen_at, runs, recent): a
-- test whose flake rate stays 0, as most do, is still updated in place (PostgreSQL's heap-only
-- updates), and only a test whose flake rate changes writes an entry here.

-- +goose Up
CREATE INDEX tests_flaking ON tests (organization_id) WHERE flake_rate > 0;

-- +goose Down
DROP INDEX tests_flaking;
