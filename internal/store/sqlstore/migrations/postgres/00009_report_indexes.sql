-- The report folders of a run that hold an index.html (JSON array), recorded when the reports
-- are stored, so an execution's links name only folders that open. NULL: not recorded (runs
-- stored before this column), which readers check against the report store instead.

-- +goose Up
ALTER TABLE executions ADD COLUMN report_indexes TEXT;

-- +goose Down
ALTER TABLE executions DROP COLUMN report_indexes;
