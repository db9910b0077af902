package sqlstore

import (
	"context"
	"time"

	"verdict/internal/domain"
	"verdict/internal/store"
)

// Retention's writes to runs: pins, the expiry of a run's files, the deletion of old runs. Each
// is short (a batch of runs the caller bounds, by primary key after an indexed read of the
// organization's runs by end time), so that on SQLite the writer is held for milliseconds and
// readers, which WAL keeps apart from it, never wait.

// SetPinned sets the run's pinned flag.
func (r executionRepo) SetPinned(ctx context.Context, orgID, taskID string, pinned bool) error {
	return r.s.execOneRuns(ctx, orgID, `UPDATE executions SET version = version + 1, pinned = ? WHERE organization_id = ? AND task_id = ?`, pinned, orgID, taskID)
}

// finalStatuses are the parameters of "status IN (?, ?, ?, ?, ?)".
var finalStatuses = []any{domain.ExecPassed, domain.ExecFailed, domain.ExecUnstable, domain.ExecError, domain.ExecCancelled}

// ExpireFiles marks a batch in one transaction of three statements: the candidates are read
// through the (organization_id, finished_at) index, locked on PostgreSQL with SKIP LOCKED
// (another replica's batch is passed over, not waited for); one UPDATE marks those still
// unpinned and unexpired, so a pin that committed first keeps its run and a run marked by
// another caller is neither marked nor released again, and returns them; the organization's
// storage goes down by what they held.
func (r executionRepo) ExpireFiles(ctx context.Context, orgID string, finishedBefore, at time.Time, note string,
	limit int) ([]store.RunFiles, error) {
	j, err := marshalJSON(note)
	if err != nil {
		return nil, err
	}
	var out []store.RunFiles
	err = r.s.inTx(ctx, func(tx *Store) error {
		q := `SELECT id, task_id, report_bytes FROM executions
			WHERE organization_id = ? AND finished_at < ? AND status IN (?, ?, ?, ?, ?) AND pinned = ? AND files_expired_at IS NULL
			ORDER BY finished_at, id LIMIT ?` + tx.d.skipLocked
		args := append(append([]any{orgID, millis(finishedBefore)}, finalStatuses...), false, limit)
		cands := map[string]store.RunFiles{}
		rows, err := tx.q.QueryContext(ctx, tx.d.rebind(q), args...)
		if err != nil {
			return tx.mapErr(err)
		}
		var ids []any
		for rows.Next() {
			var c store.RunFiles
			if err := rows.Scan(&c.ID, &c.TaskID, &c.ReportBytes); err != nil {
				rows.Close()
				return tx.mapErr(err)
			}
			cands[c.ID] = c
			ids = append(ids, c.ID)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return tx.mapErr(err)
		}
		if len(ids) == 0 {
			return nil
		}
		// The note goes at the end of the run's notes, a JSON array as the store writes it
		// ("[…]", or "null" for none), by plain string functions both databases have.
		u := `UPDATE executions SET version = version + 1, files_expired_at = ?, report_bytes = 0, report_dirs = '[]', report_indexes = '[]',
			notes = CASE WHEN notes IN ('[]', 'null', '') THEN '[' || CAST(? AS TEXT) || ']'
				ELSE substr(notes, 1, length(notes) - 1) || ',' || CAST(? AS TEXT) || ']' END
			WHERE id IN (` + placeholders(len(ids)) + `) AND pinned = ? AND files_expired_at IS NULL RETURNING id`
		urows, err := tx.q.QueryContext(ctx, tx.d.rebind(u), append(append([]any{millis(at), j[0], j[0]}, ids...), false)...)
		tx.wroteRuns(orgID) // the candidates are orgID's runs
		if err != nil {
			return tx.mapErr(err)
		}
		var freed int64
		for urows.Next() {
			var id string
			if err := urows.Scan(&id); err != nil {
				urows.Close()
				return tx.mapErr(err)
			}
			out = append(out, cands[id])
			freed += cands[id].ReportBytes
		}
		urows.Close()
		if err := urows.Err(); err != nil {
			return tx.mapErr(err)
		}
		if freed > 0 {
			return tx.Organizations().AddStorageUsed(ctx, orgID, -freed)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ListExpired reads the batch through the (organization_id, finished_at) index.
func (r executionRepo) ListExpired(ctx context.Context, orgID string, finishedBefore time.Time, limit int) ([]store.RunFiles, error) {
	return list(ctx, r.s, func(sc scanner) (*store.RunFiles, error) {
		var f store.RunFiles
		return &f, sc.Scan(&f.ID, &f.TaskID, &f.ReportBytes)
	}, `SELECT id, task_id, report_bytes FROM executions
		WHERE organization_id = ? AND finished_at < ? AND pinned = ? AND files_expired_at IS NOT NULL
		ORDER BY finished_at, id LIMIT ?`, orgID, millis(finishedBefore), false, limit)
}

// DeleteExpired deletes the runs in one statement; their labels, log chunks, failure
// signatures and tickets go with them (ON DELETE CASCADE), and then their test results
// (deleteResults).
func (r executionRepo) DeleteExpired(ctx context.Context, orgID string, ids []string, finishedBefore time.Time) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	var deleted []string
	err := r.s.inTx(ctx, func(tx *Store) error {
		// The runs deleted, by RETURNING: a run of the batch pinned since keeps its results.
		q := `DELETE FROM executions WHERE organization_id = ? AND finished_at < ? AND pinned = ?
			AND files_expired_at IS NOT NULL AND id IN (` + placeholders(len(ids)) + `) RETURNING id`
		rows, err := tx.q.QueryContext(ctx, tx.d.rebind(q), append([]any{orgID, millis(finishedBefore), false}, anys(ids)...)...)
		tx.wroteRuns(orgID)
		if err != nil {
			return tx.mapErr(err)
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				return tx.mapErr(err)
			}
			deleted = append(deleted, id)
		}
		if err := rows.Err(); err != nil {
			return tx.mapErr(err)
		}
		rows.Close() // before the next statement of the transaction
		return tx.deleteResults(ctx, deleted)
	})
	return len(deleted), err
}
