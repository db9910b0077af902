package sqlstore

import (
	"context"
	"database/sql"
	"time"

	"verdict/internal/domain"
	"verdict/internal/store"
)

func (s *Store) Analyses() store.AnalysisRepo { return analysisRepo{s} }

type analysisRepo struct{ s *Store }

func (r analysisRepo) RecordFailures(ctx context.Context, orgID, executionID, taskID string, queuedAt time.Time,
	failures []store.FailureOccurrence) error {
	type sig struct {
		test string
		n    int
	}
	var order []string
	bySig := map[string]*sig{}
	for _, f := range failures {
		if s := bySig[f.Signature]; s != nil {
			s.n++
			continue
		}
		bySig[f.Signature] = &sig{test: f.Test, n: 1}
		order = append(order, f.Signature)
	}
	return r.s.inTx(ctx, func(tx *Store) error {
		if _, err := tx.exec(ctx, `DELETE FROM failure_occurrences WHERE execution_id = ? AND organization_id = ?`,
			executionID, orgID); err != nil {
			return err
		}
		for _, signature := range order {
			s := bySig[signature]
			if _, err := tx.exec(ctx, `INSERT INTO failure_occurrences
				(execution_id, organization_id, signature, task_id, test_name, failures, queued_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
				executionID, orgID, signature, taskID, s.test, s.n, millis(queuedAt)); err != nil {
				return err
			}
		}
		return nil
	})
}

// History reads each signature with one indexed query: its failures and its earliest run.
func (r analysisRepo) History(ctx context.Context, orgID, excludeID string, signatures []string) (map[string]store.SignatureHistory, error) {
	out := make(map[string]store.SignatureHistory, len(signatures))
	const q = `SELECT COALESCE(SUM(failures), 0), (SELECT task_id FROM failure_occurrences f
			WHERE f.organization_id = ? AND f.signature = ? AND f.execution_id <> ? ORDER BY f.queued_at, f.execution_id LIMIT 1)
		FROM failure_occurrences WHERE organization_id = ? AND signature = ? AND execution_id <> ?`
	for _, sig := range signatures {
		if _, done := out[sig]; done {
			continue
		}
		var n int
		var first sql.NullString
		if err := r.s.on(q).QueryRowContext(ctx, r.s.d.rebind(q), orgID, sig, excludeID, orgID, sig, excludeID).Scan(&n, &first); err != nil {
			return nil, r.s.mapErr(err)
		}
		if n > 0 {
			out[sig] = store.SignatureHistory{Failures: n, FirstTaskID: first.String}
		}
	}
	return out, nil
}

const triageColumns = `id, organization_id, execution_id, task_id, signature, normalized, category, user_id, user_name, created_at`

func (r analysisRepo) AddTriages(ctx context.Context, ts []domain.Triage) error {
	return r.s.inTx(ctx, func(tx *Store) error {
		for i := range ts {
			t := &ts[i]
			ensureID(&t.ID)
			if _, err := tx.exec(ctx, `INSERT INTO triages (`+triageColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				t.ID, t.OrganizationID, t.ExecutionID, t.TaskID, t.Signature, t.Normalized, t.Category, t.UserID,
				t.UserName, millis(t.CreatedAt)); err != nil {
				return err
			}
		}
		return nil
	})
}

func scanTriage(r scanner) (*domain.Triage, error) {
	var t domain.Triage
	var created int64
	if err := r.Scan(&t.ID, &t.OrganizationID, &t.ExecutionID, &t.TaskID, &t.Signature, &t.Normalized, &t.Category,
		&t.UserID, &t.UserName, &created); err != nil {
		return nil, err
	}
	t.CreatedAt = fromMillis(created)
	return &t, nil
}

func (r analysisRepo) Triages(ctx context.Context, orgID string, limit int) ([]domain.Triage, error) {
	return list(ctx, r.s, scanTriage, `SELECT `+triageColumns+` FROM triages WHERE organization_id = ?
		ORDER BY created_at DESC, id DESC LIMIT ?`, orgID, limit)
}
