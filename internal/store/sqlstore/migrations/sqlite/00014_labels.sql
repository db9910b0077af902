-- A run's labels (key:value, set when it is queued, never changed): as a JSON object on the run,
-- read with it (the list included), and a row per label for the list's label filter.

-- +goose Up
ALTER TABLE executions ADD COLUMN labels TEXT NOT NULL DEFAULT '{}';
CREATE TABLE execution_labels (
    execution_id    TEXT NOT NULL REFERENCES executions (id) ON DELETE CASCADE,
    organization_id TEXT NOT NULL,
    label_key       TEXT NOT NULL,
    label_value     TEXT NOT NULL,
    PRIMARY KEY (execution_id, label_key)
);
CREATE INDEX execution_labels_by_value ON execution_labels (organization_id, label_key, label_value);

-- +goose Down
DROP TABLE execution_labels;
ALTER TABLE executions DROP COLUMN labels;
