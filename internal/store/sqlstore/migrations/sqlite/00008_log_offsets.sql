-- Each log chunk's byte offset in its run's log: a log is read from any offset (paged, or
-- streamed a window at a time) without reading what comes before it.

-- +goose Up
ALTER TABLE execution_logs ADD COLUMN byte_offset INTEGER NOT NULL DEFAULT 0;
-- Existing chunks: the bytes of the run's earlier chunks (CAST: length() counts characters of
-- a TEXT value, and bytes only of a BLOB).
UPDATE execution_logs SET byte_offset = o.byte_offset
FROM (SELECT execution_id, seq,
             SUM(length(CAST(chunk AS BLOB))) OVER (PARTITION BY execution_id ORDER BY seq)
             - length(CAST(chunk AS BLOB)) AS byte_offset
      FROM execution_logs) AS o
WHERE execution_logs.execution_id = o.execution_id AND execution_logs.seq = o.seq;
CREATE INDEX execution_logs_offset ON execution_logs (execution_id, byte_offset);

-- +goose Down
DROP INDEX execution_logs_offset;
ALTER TABLE execution_logs DROP COLUMN byte_offset;
