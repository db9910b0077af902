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
	return r.s.execOne(ctx, `UPDATE executions SET pinned = ? WHERE organization_id = ? AND task_id = ?`, pinned, orgID, taskID)
}

// finalStatuses are the parameters of "status IN (?, ?, ?, ?, ?)".
var finalStatuses = []any{domain.ExecPassed, domain.ExecFailed, domain.ExecUnstable, domain.ExecError, domain.ExecCancelled}

// ExpireFiles marks a batch in one transaction: the candidates are read through the
// (organization_id, finished_at) index, locked on PostgreSQL with SKIP LOCKED (another replica's
// batch is passed over, not waited for), and each is marked by a write conditioned on it being
// still unpinned and unexpired, so a pin that committed first keeps its run, and a run marked
// by another caller is neither marked nor released again.
func (r executionRepo) ExpireFiles(ctx context.Context, orgID string, finishedBefore, at time.Time, note string,
	limit int) ([]store.RunFiles, error) {
	var out []store.RunFiles
	err := r.s.inTx(ctx, func(tx *Store) error {
		q := `SELECT id, task_id, report_bytes, notes FROM executions
			WHERE organization_id = ? AND finished_at < ? AND status IN (?, ?, ?, ?, ?) AND pinned = ? AND files_expired_at IS NULL
			ORDER BY finished_at, id LIMIT ?` + tx.d.skipLocked
		args := append(append([]any{orgID, millis(finishedBefore)}, finalStatuses...), false, limit)
		type candidate struct {
			store.RunFiles
			notes string
		}
		var cands []candidate
		rows, err := tx.q.QueryContext(ctx, tx.d.rebind(q), args...)
		if err != nil {
			return tx.mapErr(err)
		}
		for rows.Next() {
			var c candidate
			if err := rows.Scan(&c.ID, &c.TaskID, &c.ReportBytes, &c.notes); err != nil {
				rows.Close()
				return tx.mapErr(err)
			}
			cands = append(cands, c)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return tx.mapErr(err)
		}
		var freed int64
		for _, c := range cands {
			var notes []string
			if err := decodeJSON(c.notes, &notes); err != nil {
				return err
			}
			j, err := marshalJSON(append(notes, note))
			if err != nil {
				return err
			}
			res, err := tx.exec(ctx, `UPDATE executions SET files_expired_at = ?, report_bytes = 0, report_dirs = '[]',
				report_indexes = '[]', notes = ? WHERE id = ? AND pinned = ? AND files_expired_at IS NULL`,
				millis(at), j[0], c.ID, false)
			if err != nil {
				return err
			}
			if n, err := res.RowsAffected(); err != nil {
				return err
			} else if n == 1 {
				out = append(out, c.RunFiles)
				freed += c.ReportBytes
			}
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
// signatures, tickets and test results go with them (ON DELETE CASCADE).
func (r executionRepo) DeleteExpired(ctx context.Context, orgID string, ids []string, finishedBefore time.Time) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	args := []any{orgID, millis(finishedBefore), false}
	for _, id := range ids {
		args = append(args, id)
	}
	res, err := r.s.exec(ctx, `DELETE FROM executions WHERE organization_id = ? AND finished_at < ? AND pinned = ?
		AND files_expired_at IS NOT NULL AND id IN (`+placeholders(len(ids))+`)`, args...)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}
