package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"verdict/internal/store"
)

// Logs returns the run log repository.
func (s *Store) Logs() store.LogRepo { return logRepo{s} }

// logRepo keeps a run's log as numbered chunks. Chunks are stored as bytes (BLOB/BYTEA), not
// text: a container may write NUL or invalid UTF-8, which a PostgreSQL text column refuses, and
// a log line must never be lost for that. The log's tenancy is its execution's: callers reach a
// log through an execution they found with the organization ID.
type logRepo struct{ s *Store }

// Append stores one chunk with one INSERT. A seq already stored for the execution is
// ErrConflict (a retried append can treat that as done); an unknown (or deleted) execution is
// ErrNotFound.
func (r logRepo) Append(ctx context.Context, executionID string, seq int, chunk string) error {
	_, err := r.s.exec(ctx, `INSERT INTO execution_logs (execution_id, seq, chunk) VALUES (?, ?, ?)`,
		executionID, seq, []byte(chunk))
	if isForeignKeyViolation(err) {
		return fmt.Errorf("%w: execution %s: %v", store.ErrNotFound, executionID, err)
	}
	return err
}

// Read concatenates the chunks in seq order; an execution without chunks (or unknown) has "".
func (r logRepo) Read(ctx context.Context, executionID string) (string, error) {
	rows, err := r.s.q.QueryContext(ctx, r.s.d.rebind(
		`SELECT chunk FROM execution_logs WHERE execution_id = ? ORDER BY seq`), executionID)
	if err != nil {
		return "", r.s.mapErr(err)
	}
	defer rows.Close()
	var b strings.Builder
	var chunk []byte
	for rows.Next() {
		if err := rows.Scan(&chunk); err != nil {
			return "", err
		}
		b.Write(chunk)
	}
	if err := rows.Err(); err != nil {
		return "", err
	}
	return b.String(), nil
}

// DeleteAll removes every chunk of the execution (none is not an error). Deleting the
// execution removes them too, by cascade.
func (r logRepo) DeleteAll(ctx context.Context, executionID string) error {
	_, err := r.s.exec(ctx, `DELETE FROM execution_logs WHERE execution_id = ?`, executionID)
	return err
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
