-- Release gates: a scope's flaky tests, which the gate's noNewFlaky rule and compare read for
-- every run they judge, found without reading every test of the scope (a test's row is
-- rewritten by every run that records it, so a scan of them all meets every version not yet
-- vacuumed).

-- +goose Up
CREATE INDEX tests_flaky ON tests (organization_id, scope) WHERE flaky = TRUE;

-- +goose Down
DROP INDEX tests_flaky;
