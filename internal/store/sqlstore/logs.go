package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"verdict/internal/domain"
	"verdict/internal/store"
)

// Logs returns the run log repository.
func (s *Store) Logs() store.LogRepo { return logRepo{s} }

// logRepo keeps a run's log as numbered chunks, each at its byte offset in the log. Chunks are
// stored as bytes (BLOB/BYTEA), not text: a container may write NUL or invalid UTF-8, which a
// PostgreSQL text column refuses, and a log line must never be lost for that. The log's tenancy
// is its execution's: callers reach a log through an execution they found with the
// organization ID.
type logRepo struct{ s *Store }

// Append stores one chunk with one INSERT, at the offset where the run's last chunk ends. A
// seq not above the last stored one inserts nothing and is ErrConflict (a retried append can
// treat that as done); an unknown (or deleted) execution is ErrNotFound.
func (r logRepo) Append(ctx context.Context, executionID string, seq int, chunk string) error {
	// A run that has ended takes no more lines: a runner that lost its lease (frozen, cut off)
	// may still send some, which would land after the final status its followers were shown.
	res, err := r.s.exec(ctx, `INSERT INTO execution_logs (execution_id, seq, byte_offset, chunk)
		SELECT ?, ?, COALESCE((SELECT byte_offset + length(chunk) FROM execution_logs
			WHERE execution_id = ? ORDER BY seq DESC LIMIT 1), 0), ?
		WHERE NOT EXISTS (SELECT 1 FROM execution_logs WHERE execution_id = ? AND seq >= ?)
		AND NOT EXISTS (SELECT 1 FROM executions WHERE id = ? AND status IN (?, ?, ?, ?, ?))`,
		executionID, seq, executionID, []byte(chunk), executionID, seq,
		executionID, domain.ExecPassed, domain.ExecFailed, domain.ExecUnstable, domain.ExecError, domain.ExecCancelled)
	if isForeignKeyViolation(err) {
		return fmt.Errorf("%w: execution %s: %v", store.ErrNotFound, executionID, err)
	}
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		var status domain.ExecStatus
		err := r.s.q.QueryRowContext(ctx, r.s.d.rebind(`SELECT status FROM executions WHERE id = ?`), executionID).Scan(&status)
		if err == nil && status.Final() {
			return fmt.Errorf("%w: execution %s has ended (%s): its log takes no more lines", store.ErrNotFound, executionID, status)
		}
		return fmt.Errorf("%w: execution %s already has a log chunk at or after seq %d", store.ErrConflict, executionID, seq)
	}
	return nil
}

// ReadFrom reads the chunks that overlap the wanted bytes through the (execution_id,
// byte_offset) index, one row at a time: memory is a chunk, whatever the log's size.
func (r logRepo) ReadFrom(ctx context.Context, executionID string, from, limit int64, fn func(p []byte) error) (int64, error) {
	if from < 0 {
		return 0, fmt.Errorf("sqlstore: negative log offset %d", from)
	}
	if limit == 0 {
		return 0, nil
	}
	// The first chunk is the last one starting at or before from.
	q := `SELECT byte_offset, chunk FROM execution_logs WHERE execution_id = ? AND byte_offset >= COALESCE(
		(SELECT MAX(byte_offset) FROM execution_logs WHERE execution_id = ? AND byte_offset <= ?), 0)`
	args := []any{executionID, executionID, from}
	if limit > 0 {
		q += ` AND byte_offset < ?`
		args = append(args, from+limit)
	}
	q += ` ORDER BY byte_offset`
	// The read pool: a log streams to a client at the client's pace, which must not hold the
	// writer.
	rows, err := r.s.on(q).QueryContext(ctx, r.s.d.rebind(q), args...)
	if err != nil {
		return 0, r.s.mapErr(err)
	}
	defer rows.Close()
	var (
		n     int64
		off   int64
		chunk sql.RawBytes // the driver's buffer, valid until the next row: no copy per row
	)
	for rows.Next() {
		if err := rows.Scan(&off, &chunk); err != nil {
			return n, r.s.mapErr(err)
		}
		p := []byte(chunk)
		if skip := from - off; skip > 0 {
			p = p[min(skip, int64(len(p))):]
		}
		if limit > 0 && int64(len(p)) > limit-n {
			p = p[:limit-n]
		}
		if len(p) == 0 {
			continue
		}
		if err := fn(p); err != nil {
			return n, err
		}
		// Offsets are contiguous, so after the first chunk every byte is wanted.
		from, n = from+int64(len(p)), n+int64(len(p))
		if limit > 0 && n == limit {
			break
		}
	}
	return n, r.s.mapErr(rows.Err())
}

// Read concatenates the chunks in order; an execution without chunks (or unknown) has "".
func (r logRepo) Read(ctx context.Context, executionID string) (string, error) {
	var b strings.Builder
	_, err := r.ReadFrom(ctx, executionID, 0, -1, func(p []byte) error { b.Write(p); return nil })
	if err != nil {
		return "", err
	}
	return b.String(), nil
}

// Size is where the last chunk ends: one row through the (execution_id, seq) key.
func (r logRepo) Size(ctx context.Context, executionID string) (int64, error) {
	const q = `SELECT COALESCE((SELECT byte_offset + length(chunk) FROM execution_logs
		WHERE execution_id = ? ORDER BY seq DESC LIMIT 1), 0)`
	var n int64
	err := r.s.on(q).QueryRowContext(ctx, r.s.d.rebind(q), executionID).Scan(&n)
	return n, r.s.mapErr(err)
}

// DeleteAll removes every chunk of the execution (none is not an error). Deleting the
// execution removes them too, by cascade.
func (r logRepo) DeleteAll(ctx context.Context, executionID string) error {
	_, err := r.s.exec(ctx, `DELETE FROM execution_logs WHERE execution_id = ?`, executionID)
	return err
}

// DeleteChunks deletes up to limit chunks of the runs executionIDs in one statement, by their
// primary key, and says how many it deleted.
func (r logRepo) DeleteChunks(ctx context.Context, executionIDs []string, limit int) (int, error) {
	if len(executionIDs) == 0 || limit <= 0 {
		return 0, nil
	}
	args := make([]any, 0, len(executionIDs)+1)
	for _, id := range executionIDs {
		args = append(args, id)
	}
	res, err := r.s.exec(ctx, `DELETE FROM execution_logs WHERE (execution_id, seq) IN (SELECT execution_id, seq
		FROM execution_logs WHERE execution_id IN (`+placeholders(len(executionIDs))+`) LIMIT ?)`, append(args, limit)...)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// isForeignKeyViolation reports a refused reference (SQLite needs foreign_keys on, which every
// connection of the store has). It belongs with the dialect's isUnique.
func isForeignKeyViolation(err error) bool {
	if err == nil {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "23503" // foreign_key_violation
	}
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code() == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY
}
