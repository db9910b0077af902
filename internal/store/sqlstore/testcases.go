package sqlstore

import (
	"context"
	"strings"

	"verdict/internal/domain"
	"verdict/internal/store"
)

// TestCases returns the test case repository.
func (s *Store) TestCases() store.TestCaseRepo { return testCaseRepo{s} }

type testCaseRepo struct{ s *Store }

const testCaseColumns = `id, organization_id, project_id, suite, title, tags, priority, preconditions, steps,
	created_by, created_at, updated_at`

// testCaseValues is one row's placeholders for testCaseColumns.
const testCaseValues = `(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

func scanTestCase(r scanner) (*domain.TestCase, error) {
	var c domain.TestCase
	var tags, steps string
	var created, updated int64
	if err := r.Scan(&c.ID, &c.OrganizationID, &c.ProjectID, &c.Suite, &c.Title, &tags, &c.Priority,
		&c.Preconditions, &steps, &c.CreatedBy, &created, &updated); err != nil {
		return nil, err
	}
	if err := unmarshalJSON(tags, &c.Tags, steps, &c.Steps); err != nil {
		return nil, err
	}
	c.CreatedAt = fromMillis(created)
	c.UpdatedAt = fromMillis(updated)
	return &c, nil
}

// testCaseArgs are c's values for testCaseColumns.
func testCaseArgs(c *domain.TestCase) ([]any, error) {
	j, err := marshalJSON(c.Tags, c.Steps)
	if err != nil {
		return nil, err
	}
	return []any{c.ID, c.OrganizationID, c.ProjectID, c.Suite, c.Title, j[0], string(c.Priority), c.Preconditions, j[1],
		c.CreatedBy, millis(c.CreatedAt), millis(c.UpdatedAt)}, nil
}

// Create stores c if its project is the organization's, so tenancy holds here too, not only in
// the service.
func (r testCaseRepo) Create(ctx context.Context, c *domain.TestCase) error {
	ensureID(&c.ID)
	args, err := testCaseArgs(c)
	if err != nil {
		return err
	}
	return r.s.inTx(ctx, func(tx *Store) error {
		if err := tx.lockProject(ctx, c.OrganizationID, c.ProjectID); err != nil {
			return err
		}
		if _, err := tx.exec(ctx, `INSERT INTO test_cases (`+testCaseColumns+`) VALUES `+testCaseValues, args...); err != nil {
			return err
		}
		return tx.insertTags(ctx, []*domain.TestCase{c})
	})
}

// lockProject checks, in a transaction, that the project is the organization's (ErrNotFound
// otherwise) and takes its row lock (PostgreSQL) until the transaction ends, so writers of one
// project's test cases take turns: an import never misses a test case another writer adds.
func (s *Store) lockProject(ctx context.Context, orgID, projectID string) error {
	_, err := s.count(ctx, `SELECT 1 FROM projects WHERE organization_id = ? AND id = ?`+s.d.forUpdate, orgID, projectID)
	return err
}

// lockProjectOf is lockProject for the project of the organization's test case id, which it
// returns (ErrNotFound when there is no such test case).
func (s *Store) lockProjectOf(ctx context.Context, orgID, id string) (string, error) {
	const q = `SELECT id FROM projects WHERE organization_id = ?
		AND id = (SELECT project_id FROM test_cases WHERE organization_id = ? AND id = ?)`
	var projectID string
	err := s.on(q).QueryRowContext(ctx, s.d.rebind(q+s.d.forUpdate), orgID, orgID, id).Scan(&projectID)
	return projectID, s.mapErr(err)
}

func (r testCaseRepo) Get(ctx context.Context, orgID, id string) (*domain.TestCase, error) {
	return get(ctx, r.s, scanTestCase,
		`SELECT `+testCaseColumns+` FROM test_cases WHERE organization_id = ? AND id = ?`, orgID, id)
}

func (r testCaseRepo) GetMany(ctx context.Context, orgID string, ids []string) ([]domain.TestCase, error) {
	var unique []string
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			unique = append(unique, id)
		}
	}
	byID := make(map[string]domain.TestCase, len(unique))
	for _, part := range pow2Chunks(unique, maxRowsPerStatement) {
		args := make([]any, 0, len(part)+1)
		args = append(args, orgID)
		for _, id := range part {
			args = append(args, id)
		}
		found, err := list(ctx, r.s, scanTestCase, `SELECT `+testCaseColumns+` FROM test_cases
			WHERE organization_id = ? AND id IN (`+placeholders(len(part))+`)`, args...)
		if err != nil {
			return nil, err
		}
		for _, c := range found {
			byID[c.ID] = c
		}
	}
	out := make([]domain.TestCase, 0, len(byID))
	for _, id := range unique {
		if c, ok := byID[id]; ok {
			out = append(out, c)
		}
	}
	return out, nil
}

func (r testCaseRepo) List(ctx context.Context, orgID string, f store.TestCaseFilter) ([]domain.TestCase, int, error) {
	where := ` FROM test_cases WHERE organization_id = ?`
	args := []any{orgID}
	if f.ProjectID != "" {
		where += ` AND project_id = ?`
		args = append(args, f.ProjectID)
	}
	if f.Suite != "" {
		where += ` AND suite = ?`
		args = append(args, f.Suite)
	}
	if f.Tag != "" && f.ProjectID != "" {
		where += ` AND id IN (SELECT test_case_id FROM test_case_tags WHERE organization_id = ? AND project_id = ? AND tag = ?)`
		args = append(args, orgID, f.ProjectID, f.Tag)
	} else if f.Tag != "" {
		where += ` AND id IN (SELECT test_case_id FROM test_case_tags WHERE organization_id = ? AND tag = ?)`
		args = append(args, orgID, f.Tag)
	}
	total, err := r.s.count(ctx, `SELECT COUNT(*)`+where, args...)
	if err != nil {
		return nil, 0, err
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 1<<31 - 1
	}
	page, err := list(ctx, r.s, scanTestCase, `SELECT `+testCaseColumns+where+` ORDER BY suite, title, id LIMIT ? OFFSET ?`,
		append(args, limit, max(f.Offset, 0))...)
	if err != nil {
		return nil, 0, err
	}
	return page, total, nil
}

func (r testCaseRepo) Update(ctx context.Context, c *domain.TestCase) error {
	return r.s.inTx(ctx, func(tx *Store) error {
		projectID, err := tx.lockProjectOf(ctx, c.OrganizationID, c.ID)
		if err != nil {
			return err
		}
		if err := tx.updateTestCase(ctx, c); err != nil {
			return err
		}
		if err := tx.deleteTags(ctx, []string{c.ID}); err != nil {
			return err
		}
		stored := *c
		stored.ProjectID = projectID
		return tx.insertTags(ctx, []*domain.TestCase{&stored})
	})
}

// updateTestCase writes c's changeable fields.
func (s *Store) updateTestCase(ctx context.Context, c *domain.TestCase) error {
	j, err := marshalJSON(c.Tags, c.Steps)
	if err != nil {
		return err
	}
	return s.execOne(ctx, `UPDATE test_cases SET suite = ?, title = ?, tags = ?, priority = ?, preconditions = ?, steps = ?,
		updated_at = ? WHERE organization_id = ? AND id = ?`,
		c.Suite, c.Title, j[0], string(c.Priority), c.Preconditions, j[1], millis(c.UpdatedAt), c.OrganizationID, c.ID)
}

// updateTestCases writes the changeable fields of several test cases of the organization in one
// statement: UPDATE … FROM a VALUES list, whose columns both databases name column1, column2, …
// (PostgreSQL takes their parameters for text, hence the cast of the time).
func (s *Store) updateTestCases(ctx context.Context, orgID string, cases []*domain.TestCase) error {
	args := make([]any, 0, 8*len(cases)+1)
	for _, c := range cases {
		j, err := marshalJSON(c.Tags, c.Steps)
		if err != nil {
			return err
		}
		args = append(args, c.ID, c.Suite, c.Title, j[0], string(c.Priority), c.Preconditions, j[1], millis(c.UpdatedAt))
	}
	_, err := s.exec(ctx, `UPDATE test_cases SET suite = v.column2, title = v.column3, tags = v.column4,
		priority = v.column5, preconditions = v.column6, steps = v.column7, updated_at = v.column8
		FROM (VALUES `+groups(len(cases), "(?, ?, ?, ?, ?, ?, ?, CAST(? AS BIGINT))")+`) AS v
		WHERE test_cases.organization_id = ? AND test_cases.id = v.column1`, append(args, orgID)...)
	return err
}

// Delete removes the test case; its tag rows go with it (ON DELETE CASCADE).
func (r testCaseRepo) Delete(ctx context.Context, orgID, id string) error {
	return r.s.inTx(ctx, func(tx *Store) error {
		if _, err := tx.lockProjectOf(ctx, orgID, id); err != nil {
			return err
		}
		return tx.execOne(ctx, `DELETE FROM test_cases WHERE organization_id = ? AND id = ?`, orgID, id)
	})
}

// Import reads the project's existing keys once, then writes in multi-row statements: it
// updates the matched test cases, replaces their tag rows, and adds the new ones and every tag
// row. Matched rows are updated in place, not deleted and inserted again, so whatever refers to
// a test case keeps it.
func (r testCaseRepo) Import(ctx context.Context, orgID, projectID string, cases []domain.TestCase) (store.ImportResult, error) {
	var res store.ImportResult
	err := r.s.inTx(ctx, func(tx *Store) error {
		res = store.ImportResult{}
		if err := tx.lockProject(ctx, orgID, projectID); err != nil {
			return err
		}
		existing := map[caseKey]string{}
		rows, err := tx.q.QueryContext(ctx, tx.d.rebind(`SELECT id, suite, title FROM test_cases
			WHERE organization_id = ? AND project_id = ?`), orgID, projectID)
		if err != nil {
			return tx.mapErr(err)
		}
		for rows.Next() {
			var id string
			var k caseKey
			if err := rows.Scan(&id, &k.suite, &k.title); err != nil {
				rows.Close()
				return tx.mapErr(err)
			}
			existing[k] = id
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return tx.mapErr(err)
		}

		final := map[caseKey]*domain.TestCase{} // what each key of this import ends up as
		var updates, inserts []caseKey
		for i := range cases {
			c := &cases[i]
			c.OrganizationID, c.ProjectID = orgID, projectID
			k := caseKey{c.Suite, c.Title}
			if prev, ok := final[k]; ok {
				c.ID = prev.ID
				final[k] = c
				res.Updated++
				continue
			}
			final[k] = c
			if id, ok := existing[k]; ok {
				c.ID = id
				updates = append(updates, k)
				res.Updated++
				continue
			}
			ensureID(&c.ID)
			inserts = append(inserts, k)
			res.Imported++
		}

		updated := make([]*domain.TestCase, len(updates))
		updatedIDs := make([]string, len(updates))
		for i, k := range updates {
			updated[i], updatedIDs[i] = final[k], final[k].ID
		}
		for _, part := range pow2Chunks(updated, maxRowsPerStatement) {
			if err := tx.updateTestCases(ctx, orgID, part); err != nil {
				return err
			}
		}
		if err := tx.deleteTags(ctx, updatedIDs); err != nil {
			return err
		}
		added := make([]*domain.TestCase, len(inserts))
		for i, k := range inserts {
			added[i] = final[k]
		}
		for _, part := range pow2Chunks(added, maxRowsPerStatement) {
			args := make([]any, 0, len(part)*12)
			for _, c := range part {
				a, err := testCaseArgs(c)
				if err != nil {
					return err
				}
				args = append(args, a...)
			}
			if _, err := tx.exec(ctx, `INSERT INTO test_cases (`+testCaseColumns+`) VALUES `+
				groups(len(part), testCaseValues), args...); err != nil {
				return err
			}
		}
		written := make([]*domain.TestCase, 0, len(updates)+len(inserts))
		for _, k := range updates {
			written = append(written, final[k])
		}
		return tx.insertTags(ctx, append(written, added...))
	})
	if err != nil {
		return store.ImportResult{}, err
	}
	return res, nil
}

// caseKey is what makes a test case unique in its project.
type caseKey struct{ suite, title string }

func (r testCaseRepo) FilterOptions(ctx context.Context, orgID, projectID string) (store.TestCaseOptions, error) {
	suites, err := list(ctx, r.s, scanString, `SELECT DISTINCT suite FROM test_cases
		WHERE organization_id = ? AND project_id = ? AND suite <> '' ORDER BY suite`, orgID, projectID)
	if err != nil {
		return store.TestCaseOptions{}, err
	}
	tags, err := list(ctx, r.s, scanString, `SELECT DISTINCT tag FROM test_case_tags
		WHERE organization_id = ? AND project_id = ? ORDER BY tag`, orgID, projectID)
	if err != nil {
		return store.TestCaseOptions{}, err
	}
	return store.TestCaseOptions{Suites: suites, Tags: tags}, nil
}

// deleteTags removes the tag rows of the test cases ids.
func (s *Store) deleteTags(ctx context.Context, ids []string) error {
	for _, part := range pow2Chunks(ids, maxRowsPerStatement) {
		args := make([]any, len(part))
		for i, id := range part {
			args[i] = id
		}
		if _, err := s.exec(ctx, `DELETE FROM test_case_tags WHERE test_case_id IN (`+placeholders(len(part))+`)`,
			args...); err != nil {
			return err
		}
	}
	return nil
}

// insertTags inserts the tag rows of test cases whose rows exist and have none.
func (s *Store) insertTags(ctx context.Context, cases []*domain.TestCase) error {
	var rows [][4]any
	for _, c := range cases {
		for _, t := range c.Tags {
			rows = append(rows, [4]any{c.ID, c.OrganizationID, c.ProjectID, t})
		}
	}
	for _, part := range pow2Chunks(rows, maxRowsPerStatement) {
		args := make([]any, 0, 4*len(part))
		for _, r := range part {
			args = append(args, r[:]...)
		}
		if _, err := s.exec(ctx, `INSERT INTO test_case_tags (test_case_id, organization_id, project_id, tag) VALUES `+
			groups(len(part), "(?, ?, ?, ?)"), args...); err != nil {
			return err
		}
	}
	return nil
}

// maxRowsPerStatement bounds the rows of one multi-row statement: 128 rows of 12 columns stay
// far below both databases' limits on parameters.
const maxRowsPerStatement = 128

// pow2Chunks splits items into parts of at most max items (max a power of two), each a power of
// two long: a statement with one placeholder group per item then comes in at most
// log2(max)+1 shapes, which keeps PostgreSQL's cache of rebound queries and its prepared
// statements few.
func pow2Chunks[T any](items []T, max int) [][]T {
	var out [][]T
	for n := max; len(items) > 0; {
		for n > len(items) {
			n /= 2
		}
		out = append(out, items[:n])
		items = items[n:]
	}
	return out
}

// groups repeats a row's placeholders group n times, comma-separated.
func groups(n int, group string) string {
	return strings.TrimSuffix(strings.Repeat(group+", ", n), ", ")
}
