-- A run's results are written in the transaction that marks the run recorded and makes or reads
-- their tests, so their references to the run and to the tests are known good when written.
-- Checking them cost a third of recording a run of 2,000 tests: each result locked its test's
-- row and its run's (FOR KEY SHARE, a write to the row and to the WAL), 75 to 160 ms a run on
-- the 10-million-result bench. Without the references, a run's results are deleted with the run
-- by the statements that delete runs (after the run, so that a recording that held the run's row
-- has committed and its results are seen), and tests are deleted only with their organization.
-- (SQLite keeps both references: it checks them by an index lookup, without writing.)

-- +goose Up
ALTER TABLE test_results DROP CONSTRAINT test_results_test_id_fkey;
ALTER TABLE test_results DROP CONSTRAINT test_results_execution_id_fkey;

-- +goose Down
ALTER TABLE test_results ADD CONSTRAINT test_results_execution_id_fkey FOREIGN KEY (execution_id) REFERENCES executions (id) ON DELETE CASCADE;
ALTER TABLE test_results ADD CONSTRAINT test_results_test_id_fkey FOREIGN KEY (test_id) REFERENCES tests (id) ON DELETE CASCADE;
