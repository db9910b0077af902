package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"verdict/internal/domain"
	"verdict/internal/store"
)

// Executions returns the execution repository, which is also the run queue.
func (s *Store) Executions() store.ExecutionRepo { return executionRepo{s} }

type executionRepo struct{ s *Store }

// insertColumns are those a run is queued with; executionColumns add what is recorded after
// it ended (its quarantined failures, its gate, retention's pin and expiry, whether its tests
// are recorded).
const insertColumns = `id, organization_id, task_id, project_id, image, command, environment, base_url, folder,
	timeout_seconds, report_folders, env_cipher, env_names, triggered_by, via_api_key,
	status, queue_reason, error_message, exit_code, queued_at, started_at, finished_at,
	runner_id, runner_instance, container_id, lease_until, cancel_requested,
	summary, tests, report_dirs, report_bytes, notes, report_indexes, analysis, labels,
	parent_id, shards, retries, shard_index, retry_round, attempt, assigned`

const executionColumns = insertColumns + `, quarantined_failures, gate, pinned, files_expired_at, tests_recorded, version`

// listColumns are executionColumns for list answers, which leave out the tests and the
// analysis (a run's parsed results can be large, and listing would read and decode them for
// nothing) and what only the run plane reads: the sealed variables and the folders to collect.
var listColumns = strings.NewReplacer("summary, tests,", "summary, '[]',", "report_folders, env_cipher,", "'[]', '',",
	"report_indexes, analysis,", "report_indexes, NULL,").Replace(executionColumns)

func scanExecution(r scanner) (*domain.Execution, error) {
	var e domain.Execution
	if err := newExecRow().scan(r, &e); err != nil {
		return nil, err
	}
	return &e, nil
}

// execRow receives a row of executionColumns (or listColumns). One is reused for every row of
// a page, so the columns' destinations are not allocated again per row.
type execRow struct {
	e                                                          domain.Execution
	reportFolders, envNames, summary, tests, reportDirs, notes string
	labels, quarantined, gate                                  string
	reportIndexes, analysis, assigned                          sql.NullString
	exitCode, started, finished, lease, filesExpired           sql.NullInt64
	queued, version                                            int64 // version: see runRows
	dest                                                       []any
}

func newExecRow() *execRow {
	x := &execRow{}
	e := &x.e
	x.dest = []any{&e.ID, &e.OrganizationID, &e.TaskID, &e.ProjectID, &e.Image, &e.Command, &e.Environment,
		&e.BaseURL, &e.Folder, &e.TimeoutSeconds, &x.reportFolders, &e.EnvCipher, &x.envNames, &e.TriggeredBy,
		&e.ViaAPIKey, &e.Status, &e.QueueReason, &e.Error, &x.exitCode, &x.queued, &x.started, &x.finished,
		&e.RunnerID, &e.RunnerInstance, &e.ContainerID, &x.lease, &e.CancelRequested,
		&x.summary, &x.tests, &x.reportDirs, &e.ReportBytes, &x.notes, &x.reportIndexes, &x.analysis, &x.labels,
		&e.ParentID, &e.Shards, &e.Retries, &e.ShardIndex, &e.Retry, &e.Attempt, &x.assigned,
		&x.quarantined, &x.gate, &e.Pinned, &x.filesExpired, &e.TestsRecorded, &x.version}
	return x
}

// scan scans the current row into e.
func (x *execRow) scan(r scanner, e *domain.Execution) error {
	x.e = domain.Execution{}
	if err := r.Scan(x.dest...); err != nil {
		return err
	}
	if x.reportIndexes.Valid {
		if err := decodeJSON(x.reportIndexes.String, &x.e.ReportIndexes); err != nil {
			return err
		}
	}
	if x.analysis.Valid {
		if err := decodeJSON(x.analysis.String, &x.e.Analysis); err != nil {
			return err
		}
	}
	if x.assigned.Valid {
		if err := decodeJSON(x.assigned.String, &x.e.Assigned); err != nil {
			return err
		}
	}
	for _, c := range [...]struct {
		text string
		dst  any
	}{{x.reportFolders, &x.e.ReportFolders}, {x.envNames, &x.e.EnvNames}, {x.summary, &x.e.Summary},
		{x.tests, &x.e.Tests}, {x.reportDirs, &x.e.ReportDirs}, {x.notes, &x.e.Notes}, {x.labels, &x.e.Labels}} {
		if err := decodeJSON(c.text, c.dst); err != nil {
			return err
		}
	}
	if len(x.e.Labels) == 0 {
		x.e.Labels = nil // none, as a run is queued without labels
	}
	if x.quarantined != "[]" && x.quarantined != "" {
		if err := decodeJSON(x.quarantined, &x.e.QuarantinedFailures); err != nil {
			return err
		}
	}
	if x.gate != "" {
		if err := decodeJSON(x.gate, &x.e.Gate); err != nil {
			return err
		}
	}
	x.e.FilesExpiredAt = timePtr(x.filesExpired)
	if x.exitCode.Valid {
		c := int(x.exitCode.Int64)
		x.e.ExitCode = &c
	}
	x.e.QueuedAt = fromMillis(x.queued)
	x.e.StartedAt = timePtr(x.started)
	x.e.FinishedAt = timePtr(x.finished)
	x.e.LeaseUntil = timePtr(x.lease)
	*e = x.e
	return nil
}

// nullJSON is the parameter for a nullable JSON list: NULL for nil (not recorded).
func nullJSON(v []string) (any, error) {
	if v == nil {
		return nil, nil
	}
	j, err := marshalJSON(v)
	if err != nil {
		return nil, err
	}
	return j[0], nil
}

func nullInt(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

// Create queues e as given (its Status is normally PENDING); ErrConflict when the organization
// already has e.TaskID, or the ID is taken. The conflict is found with ON CONFLICT DO NOTHING,
// not a unique violation, so that the caller's PostgreSQL transaction stays usable (to retry
// with another generated taskId).
func (r executionRepo) Create(ctx context.Context, e *domain.Execution) error {
	ensureID(&e.ID)
	labels := e.Labels
	if labels == nil {
		labels = map[string]string{}
	}
	j, err := marshalJSON(e.ReportFolders, e.EnvNames, e.Summary, e.Tests, e.ReportDirs, e.Notes, labels)
	if err != nil {
		return err
	}
	indexes, err := nullJSON(e.ReportIndexes)
	if err != nil {
		return err
	}
	analysis, err := analysisJSON(e.Analysis)
	if err != nil {
		return err
	}
	assigned, err := nullJSON(e.Assigned)
	if err != nil {
		return err
	}
	// The execution and its ledger row are written together or not at all.
	return r.s.InTx(ctx, func(tx store.Store) error {
		s := tx.(*Store)
		res, err := s.execRuns(ctx, e.OrganizationID, `INSERT INTO executions (`+insertColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,
			?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT DO NOTHING`,
			e.ID, e.OrganizationID, e.TaskID, e.ProjectID, e.Image, e.Command, e.Environment, e.BaseURL, e.Folder,
			e.TimeoutSeconds, j[0], e.EnvCipher, j[1], e.TriggeredBy, e.ViaAPIKey,
			e.Status, e.QueueReason, e.Error, nullInt(e.ExitCode), millis(e.QueuedAt), nullMillis(e.StartedAt),
			nullMillis(e.FinishedAt), e.RunnerID, e.RunnerInstance, e.ContainerID, nullMillis(e.LeaseUntil), e.CancelRequested,
			j[2], j[3], j[4], e.ReportBytes, j[5], indexes, analysis, j[6],
			e.ParentID, e.Shards, e.Retries, e.ShardIndex, e.Retry, e.Attempt, assigned)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return store.ErrConflict
		}
		if e.IsShard() {
			// A shard's record is part of its run: it counts no run of the plan, and its
			// results reach the tests' histories through its run's, never by the catch-up.
			_, err := s.execRuns(ctx, e.OrganizationID, `UPDATE executions SET version = version + 1, tests_recorded = TRUE WHERE id = ?`, e.ID)
			return err
		}
		for k, v := range e.Labels {
			if _, err := s.exec(ctx, `INSERT INTO execution_labels (execution_id, organization_id, label_key, label_value) VALUES (?, ?, ?, ?)`,
				e.ID, e.OrganizationID, k, v); err != nil {
				return err
			}
		}
		_, err = s.exec(ctx, `INSERT INTO run_ledger (execution_id, organization_id, queued_at) VALUES (?, ?, ?)`,
			e.ID, e.OrganizationID, millis(e.QueuedAt))
		return err
	})
}

func (r executionRepo) Get(ctx context.Context, orgID, taskID string) (*domain.Execution, error) {
	return r.withTickets(ctx)(get(ctx, r.s, scanExecution,
		`SELECT `+executionColumns+` FROM executions WHERE organization_id = ? AND task_id = ?`, orgID, taskID))
}

// GetListed reads the run as List does (listColumns): its parsed tests, analysis and sealed
// variables are not read at all.
func (r executionRepo) GetListed(ctx context.Context, orgID, taskID string) (*domain.Execution, error) {
	return get(ctx, r.s, scanExecution, `SELECT `+listColumns+` FROM executions WHERE organization_id = ? AND task_id = ?`, orgID, taskID)
}

// GetByID is for the run plane only: it crosses organizations.
func (r executionRepo) GetByID(ctx context.Context, id string) (*domain.Execution, error) {
	return r.withTickets(ctx)(get(ctx, r.s, scanExecution, `SELECT `+executionColumns+` FROM executions WHERE id = ?`, id))
}

// withTickets fills in the tickets of a run just read: a second, indexed query, made only for
// single runs (the list leaves tickets out, so finished runs' list rows never change).
func (r executionRepo) withTickets(ctx context.Context) func(*domain.Execution, error) (*domain.Execution, error) {
	return func(e *domain.Execution, err error) (*domain.Execution, error) {
		if err != nil {
			return nil, err
		}
		if e.Sharded() {
			if e.Parts, err = list(ctx, r.s, scanExecution, `SELECT `+listColumns+` FROM executions
				WHERE parent_id = ? AND parent_id <> '' ORDER BY retry_round, shard_index, id`, e.ID); err != nil {
				return nil, err
			}
		}
		if e.Tickets, err = r.s.Integrations().Tickets(ctx, e.OrganizationID, e.ID); err != nil {
			return nil, err
		}
		return e, nil
	}
}

// List returns a page of the organization's executions, newest queued first, and the number
// of executions matching the filter. Limit <= 0 means no limit; a negative offset is 0. The
// page and the total are two statements, not one snapshot: a run queued between them may be
// counted and not listed. A page that ends before its limit tells the total itself, which then
// costs no count.
func (r executionRepo) List(ctx context.Context, orgID string, f store.ExecutionFilter) ([]domain.Execution, int, error) {
	where := []string{"organization_id = ?", "parent_id = ''"}
	args := []any{orgID}
	if len(f.Statuses) > 0 {
		where = append(where, "status IN ("+placeholders(len(f.Statuses))+")")
		for _, st := range f.Statuses {
			args = append(args, st)
		}
	}
	if f.ProjectID != "" {
		where = append(where, "project_id = ?")
		args = append(args, f.ProjectID)
	}
	if f.Image != "" {
		where = append(where, "image = ?")
		args = append(args, f.Image)
	}
	for _, l := range f.Labels {
		where = append(where, "id IN (SELECT execution_id FROM execution_labels WHERE organization_id = ? AND label_key = ? AND label_value = ?)")
		args = append(args, orgID, l.Key, l.Value)
	}
	cond := strings.Join(where, " AND ")
	limit := int64(f.Limit)
	if limit <= 0 {
		limit = math.MaxInt64 // SQLite takes no OFFSET without a LIMIT, PostgreSQL no negative LIMIT
	}
	offset := max(f.Offset, 0)
	var key string
	var gen uint64
	c := r.s.pages
	if c != nil && r.s.feed != nil && !r.s.feed.caughtUp(ctx) {
		c = nil // PostgreSQL: another replica's write may not have been heard (writefeed.go)
	}
	if c != nil {
		key = pageKey(orgID, f, limit, offset)
		if p, ok := c.get(key); ok {
			return p.runs, p.total, nil
		}
		gen = c.now(key)
	}
	window, pageArgs := r.listWindow(args, limit, int64(offset))
	// The ID query counts the filter's runs too (a window over the same index range), which saves
	// a second statement (a round trip on PostgreSQL) on every full page. On SQLite it reads the
	// page's runs' versions (runRef) by their primary key after the window, so the count still
	// reads the index alone; PostgreSQL's index of the list holds the versions.
	idArgs := pageArgs
	idQuery := `SELECT p.id, p.total, e.version
		FROM (SELECT id, queued_at, COUNT(*) OVER () AS total FROM executions WHERE ` + cond + window + `) p
		JOIN executions e ON e.id = p.id ORDER BY p.queued_at DESC, p.id DESC`
	if r.s.d.name == "postgres" {
		// One index-only scan of executions_listed (migration 00030), which holds the versions.
		idQuery = `SELECT id, COUNT(*) OVER () AS total, version FROM executions WHERE ` + cond + window
		if len(where) == 2 {
			// Unfiltered: the page's rows alone, and the total kept beside them (migration 00032)
			// rather than counted over all of the organization's runs.
			idQuery = `SELECT id, COALESCE((SELECT runs FROM execution_counts WHERE organization_id = ?), 0) AS total, version
				FROM executions WHERE ` + cond + window
			idArgs = append([]any{orgID}, pageArgs...)
		}
	}
	execs, total, err := r.cachedPage(ctx, orgID, idQuery, idArgs)
	if err == errUncached {
		total = -1
		var versions []int64
		execs, versions, err = r.page(ctx, `SELECT `+listColumns+` FROM executions WHERE `+cond+window, min(limit, 100), pageArgs...)
		for i := range execs {
			execs[i].Version = versions[i]
			if r.s.tx == nil {
				r.s.runRows.put(&execs[i], versions[i])
			}
		}
	}
	if err != nil {
		return nil, 0, err
	}
	switch n := len(execs); {
	case total >= 0 && n > 0:
	case int64(n) < limit && (n > 0 || offset == 0):
		total = offset + n
	default:
		if total, err = r.s.count(ctx, `SELECT COUNT(*) FROM executions WHERE `+cond, args...); err != nil {
			return nil, 0, err
		}
	}
	if c != nil {
		c.put(key, gen, listPage{runs: execs, total: total})
	}
	return execs, total, nil
}

// listPage is a page of the run list as the page cache keeps it: its runs, handed out to every
// reader of the page, and the filter's total. Runs still going are kept as the finished ones
// are: any write to the organization's runs (a claim, a status, a pin, a new run) ends the
// page's life in the cache (readcache.go), so the page the database would answer is the one
// kept, and the first page of a busy organization, its runs pending and running, is served
// from memory between its writes.
type listPage struct {
	runs  []domain.Execution
	total int
}

// runRef is a run of a page and its version (see runRows): a kept copy of the run serves only at
// the version the page's query read.
type runRef struct {
	id      string
	version int64
}

// pageBytes is what a cached page holds, for the page cache's bound: its runs.
func pageBytes(p listPage) int {
	n := int(unsafe.Sizeof(p))
	for i := range p.runs {
		n += executionBytes(&p.runs[i])
	}
	return n
}

// executionBytes is what a run read from the database holds: the struct and its text.
func executionBytes(e *domain.Execution) int {
	n := int(unsafe.Sizeof(*e))
	for _, s := range [...]string{e.ID, e.OrganizationID, e.TaskID, e.ProjectID, e.Image, e.Command, e.Environment,
		e.BaseURL, e.Folder, e.EnvCipher, e.TriggeredBy, e.QueueReason, e.Error, e.RunnerID, e.ContainerID} {
		n += len(s)
	}
	for _, list := range [...][]string{e.ReportFolders, e.EnvNames, e.ReportDirs, e.Notes, e.ReportIndexes} {
		for _, s := range list {
			n += int(unsafe.Sizeof(s)) + len(s)
		}
	}
	for k, v := range e.Labels {
		n += 2*int(unsafe.Sizeof(k)) + len(k) + len(v)
	}
	for i := range e.Tests {
		t := &e.Tests[i]
		n += int(unsafe.Sizeof(*t)) + len(t.Name) + len(t.Suite) + len(t.Status) + len(t.Error)
	}
	return n
}

// pageOrg is the organization of a page named by pageKey.
func pageOrg(key string) string {
	org, _, _ := strings.Cut(key, "\x00")
	return org
}

// pageKey names a page of an organization's run list in the page cache. It starts with the
// organization's ID and a NUL (pageOrg).
func pageKey(orgID string, f store.ExecutionFilter, limit int64, offset int) string {
	var b strings.Builder
	b.Grow(len(orgID) + len(f.ProjectID) + len(f.Image) + 48)
	for _, s := range []string{orgID, f.ProjectID, f.Image} {
		b.WriteString(s)
		b.WriteByte(0)
	}
	for _, st := range f.Statuses {
		b.WriteString(string(st))
		b.WriteByte(',')
	}
	b.WriteByte(0)
	for _, l := range f.Labels {
		b.WriteString(l.Key)
		b.WriteByte(0)
		b.WriteString(l.Value)
		b.WriteByte(0)
	}
	b.WriteByte(1)
	b.WriteString(strconv.FormatInt(limit, 10))
	b.WriteByte(0)
	b.WriteString(strconv.Itoa(offset))
	return b.String()
}

// errUncached: the run cache cannot serve the page; read it whole.
var errUncached = errors.New("sqlstore: page not cached")

// maxFetchedMisses is the most runs of a page that runsByID reads one by one.
const maxFetchedMisses = 4

// listWindow is the list's order and page, and args with the page's arguments. SQLite takes
// the bounds as parameters, CAST: it re-plans a statement whose bare LIMIT or OFFSET parameter
// changes (it may use the value), which would undo the prepared statement on every page.
// PostgreSQL takes them as literals: given parameters, its planner guesses a page of a tenth of
// the organization's runs, and while the newest rows are not yet vacuumed that guess made it
// plan each call anew rather than use its generic plan (a fifth of the database's CPU under
// load). A page of another size or offset is another statement, which pgx prepares once per
// connection; the pages read are few.
func (r executionRepo) listWindow(args []any, limit, offset int64) (string, []any) {
	const order = ` ORDER BY queued_at DESC, id DESC`
	if r.s.d.name == "postgres" {
		return order + ` LIMIT ` + strconv.FormatInt(limit, 10) + ` OFFSET ` + strconv.FormatInt(offset, 10), args
	}
	return order + ` LIMIT CAST(? AS BIGINT) OFFSET CAST(? AS BIGINT)`, append(args[:len(args):len(args)], limit, offset)
}

// cachedPage serves a page from runRows: it reads the page's IDs and versions (the IDs from
// the index alone when the filter is the organization's) and the filter's total (-1 when
// unknown: no rows), then their runs with runsByID. errUncached inside a
// transaction (which may not commit what it reads) or when runsByID cannot serve them.
func (r executionRepo) cachedPage(ctx context.Context, orgID, idQuery string, args []any) ([]domain.Execution, int, error) {
	if r.s.runRows == nil || r.s.tx != nil {
		return nil, -1, errUncached
	}
	rows, err := r.s.on(idQuery).QueryContext(ctx, r.s.d.rebind(idQuery), args...)
	if err != nil {
		return nil, -1, r.s.mapErr(err)
	}
	var refs []runRef
	total := -1
	for rows.Next() {
		var ref runRef
		if err := rows.Scan(&ref.id, &total, &ref.version); err != nil {
			rows.Close()
			return nil, -1, r.s.mapErr(err)
		}
		refs = append(refs, ref)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, -1, r.s.mapErr(err)
	}
	execs, err := r.runsByID(ctx, orgID, refs)
	if len(execs) < len(refs) {
		total = -1 // some were deleted since: count again
	}
	return execs, total, err
}

// runsByID returns the organization's runs refs, in order: those kept in runRows at the same
// version from there, the few others (new runs, runs written since they were kept) read by ID;
// a run deleted since is left out. errUncached when more than maxFetchedMisses are not kept.
func (r executionRepo) runsByID(ctx context.Context, orgID string, refs []runRef) ([]domain.Execution, error) {
	c := r.s.runRows
	if c == nil || r.s.tx != nil {
		return nil, errUncached
	}
	out := make([]domain.Execution, len(refs))
	var missing []int
	for i, ref := range refs {
		if !c.get(ref, &out[i]) {
			if missing = append(missing, i); len(missing) > maxFetchedMisses {
				return nil, errUncached
			}
		}
	}
	if len(missing) == 0 {
		return out, nil
	}
	x := newExecRow()
	q := `SELECT ` + listColumns + ` FROM executions WHERE organization_id = ? AND id = ?`
	gone := false
	for _, i := range missing {
		err := x.scan(r.s.on(q).QueryRowContext(ctx, r.s.d.rebind(q), orgID, refs[i].id), &out[i])
		switch {
		case errors.Is(err, sql.ErrNoRows): // deleted since: no longer listed
			gone = true
		case err != nil:
			return nil, r.s.mapErr(err)
		default:
			out[i].Version = x.version
			c.put(&out[i], x.version)
		}
	}
	if gone {
		out = slices.DeleteFunc(out, func(e domain.Execution) bool { return e.ID == "" })
	}
	return out, nil
}

// runRows keeps list rows of runs, each with its version: every UPDATE of a run's row adds one
// to its version (migration 00027; TestEveryRunUpdateMovesItsVersion), its labels never
// change, and Delete removes the run (its ID is never reused). A row is served only at the
// version the page's query read, so it is never stale, on any replica, and a page costs one
// query of its IDs, versions and total, whether its runs are finished or still going. Its IDs
// come from the caller's organization's own query, so no run is ever read across
// organizations. The slices of a row are shared by the copies handed out: callers do not
// change them.
type runRows struct {
	mu sync.RWMutex
	m  map[string]keptRow
}

type keptRow struct {
	version int64
	e       domain.Execution
}

// maxRunRows bounds the cache: a few megabytes.
const maxRunRows = 4096

func newRunRows() *runRows { return &runRows{m: make(map[string]keptRow)} }

// get copies the run ref names into e if it is kept at ref's version.
func (c *runRows) get(ref runRef, e *domain.Execution) bool {
	c.mu.RLock()
	v, ok := c.m[ref.id]
	c.mu.RUnlock()
	if !ok || v.version != ref.version {
		return false
	}
	*e = v.e
	return true
}

// put keeps e, read at version; past the bound an arbitrary run makes room.
func (c *runRows) put(e *domain.Execution, version int64) {
	if c == nil || e.ID == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[e.ID]; !ok && len(c.m) >= maxRunRows {
		for id := range c.m {
			delete(c.m, id)
			break
		}
	}
	c.m[e.ID] = keptRow{version: version, e: *e}
}

// page scans a list query's rows straight into a slice sized for them: an Execution is a few
// hundred bytes, which growing a slice and copying through a pointer per row paid for again.
func (r executionRepo) page(ctx context.Context, query string, sizeHint int64, args ...any) ([]domain.Execution, []int64, error) {
	rows, err := r.s.on(query).QueryContext(ctx, r.s.d.rebind(query), args...)
	if err != nil {
		return nil, nil, r.s.mapErr(err)
	}
	defer rows.Close()
	out := make([]domain.Execution, 0, sizeHint)
	versions := make([]int64, 0, sizeHint)
	x := newExecRow()
	for rows.Next() {
		out = append(out, domain.Execution{})
		if err := x.scan(rows, &out[len(out)-1]); err != nil {
			return nil, nil, r.s.mapErr(err)
		}
		versions = append(versions, x.version)
	}
	return out, versions, r.s.mapErr(rows.Err())
}

// placeholders returns "?, ?, …" for n parameters.
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

// CountSince counts the organization's runs queued at or after since.
func (r executionRepo) CountSince(ctx context.Context, orgID string, since time.Time) (int, error) {
	// The ledger, not the executions table: a deleted run still counts against maxTestRuns.
	return r.s.count(ctx, `SELECT COUNT(*) FROM run_ledger WHERE organization_id = ? AND queued_at >= ?`,
		orgID, millis(since))
}

// holdsSlot is the condition of a run that may hold a run slot: every run but a sharded run's
// own record (its shards hold the slots).
const holdsSlot = `(shards = 0 OR parent_id <> '')`

// CountActive counts the organization's RUNNING and ANALYZING runs: the slots in use.
func (r executionRepo) CountActive(ctx context.Context, orgID string) (int, error) {
	return r.s.count(ctx, `SELECT COUNT(*) FROM executions WHERE organization_id = ? AND status IN (?, ?) AND `+holdsSlot,
		orgID, domain.ExecRunning, domain.ExecAnalyzing)
}

// ActiveByRunner counts the organization's RUNNING and ANALYZING runs by runner: one query on
// the (organization_id, status) index.
func (r executionRepo) ActiveByRunner(ctx context.Context, orgID string) (map[string]int, error) {
	q := `SELECT runner_id, COUNT(*) FROM executions WHERE organization_id = ? AND status IN (?, ?) GROUP BY runner_id`
	rows, err := r.s.on(q).QueryContext(ctx, r.s.d.rebind(q), orgID, domain.ExecRunning, domain.ExecAnalyzing)
	if err != nil {
		return nil, r.s.mapErr(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var runner string
		var n int
		if err := rows.Scan(&runner, &n); err != nil {
			return nil, err
		}
		out[runner] = n
	}
	return out, r.s.mapErr(rows.Err())
}

// maxIDsPerStatement bounds the ids one CancelRequested statement asks about: what a remote
// runner holds at most (peerhttp's bound), so a runner's call is one query.
const maxIDsPerStatement = 1024

// CancelRequested reads the ids of the runner's runs with a cancel asked for, on the primary key.
func (r executionRepo) CancelRequested(ctx context.Context, runnerID, instance string, ids []string) ([]string, error) {
	asked := map[string]bool{}
	for _, part := range pow2Chunks(ids, maxIDsPerStatement) {
		args := []any{runnerID, instance, true}
		for _, id := range part {
			args = append(args, id)
		}
		q := `SELECT id FROM executions WHERE runner_id = ? AND runner_instance = ? AND cancel_requested = ?
			AND id IN (` + placeholders(len(part)) + `)`
		if err := r.scanIDs(ctx, q, args, asked); err != nil {
			return nil, err
		}
	}
	var out []string
	for _, id := range ids {
		if asked[id] {
			out = append(out, id)
		}
	}
	return out, nil
}

// scanIDs adds the ids query q returns to into.
func (r executionRepo) scanIDs(ctx context.Context, q string, args []any, into map[string]bool) error {
	rows, err := r.s.on(q).QueryContext(ctx, r.s.d.rebind(q), args...)
	if err != nil {
		return r.s.mapErr(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return r.s.mapErr(err)
		}
		into[id] = true
	}
	return r.s.mapErr(rows.Err())
}

func (r executionRepo) ActiveCounts(ctx context.Context) (pending, running int, err error) {
	q := `SELECT status, COUNT(*) FROM executions WHERE status IN (?, ?, ?) GROUP BY status`
	rows, err := r.s.on(q).QueryContext(ctx, r.s.d.rebind(q), domain.ExecPending, domain.ExecRunning, domain.ExecAnalyzing)
	if err != nil {
		return 0, 0, r.s.mapErr(err)
	}
	defer rows.Close()
	for rows.Next() {
		var status domain.ExecStatus
		var n int
		if err := rows.Scan(&status, &n); err != nil {
			return 0, 0, err
		}
		if status == domain.ExecPending {
			pending += n
		} else {
			running += n
		}
	}
	return pending, running, r.s.mapErr(rows.Err())
}

// knownPlans are the plans whose slot limits Claim asks limitFor for; an organization on any
// other plan gets limitFor of an unknown plan (domain.LimitsFor answers the free plan's).
var knownPlans = []domain.Plan{domain.PlanFree, domain.PlanTeam, domain.PlanEnterprise}

// claimLockKey is the PostgreSQL advisory lock that serialises claims across replicas
// ("verdict" and 1 as bytes). Goose's migration lock uses another key.
const claimLockKey int64 = 0x7665726469637401

// claimCandidate picks, among PENDING runs whose organization has a free slot, a run of the
// organization with the fewest runs going, oldest first: runner slots are shared fairly, so an
// organization with nothing running goes before the third run of one that has two, however
// long the others' runs last. The slots of each organization come from a CASE over its plan
// whose values are parameters (from limitFor), negative meaning unlimited; the slots in use are
// counted once per organization.
var claimCandidate = func() string {
	var c strings.Builder
	c.WriteString("CASE plan")
	for range knownPlans {
		c.WriteString(" WHEN ? THEN CAST(? AS INTEGER)")
	}
	c.WriteString(" ELSE CAST(? AS INTEGER) END")
	return `SELECT e.id FROM executions e
		JOIN (SELECT id, ` + c.String() + ` AS slots FROM organizations) o ON o.id = e.organization_id
		LEFT JOIN (SELECT organization_id, COUNT(*) AS n FROM executions WHERE status IN (?, ?) AND ` + holdsSlot + `
			GROUP BY organization_id) a ON a.organization_id = e.organization_id
		WHERE e.status = ? AND (e.shards = 0 OR e.parent_id <> '') AND (o.slots < 0 OR COALESCE(a.n, 0) < o.slots)
		ORDER BY COALESCE(a.n, 0), e.queued_at, e.id LIMIT 1`
}()

// Claim moves the next claimable PENDING run (see claimCandidate) to RUNNING for runnerID, and
// for its process instance (see domain.Execution.RunnerInstance). Choosing the run and
// taking it happen in one transaction that no other claim can interleave with: on SQLite the
// transaction holds the database's write lock from BEGIN; on PostgreSQL every claim first takes
// one transaction-scoped advisory lock, so claims run one at a time across all replicas and
// each one counts the slots in use after the previous claim committed. Claims are short (two
// indexed statements), so serialising them costs little and makes exceeding a slot limit
// impossible. Only claims add to the slots in use; a run finishing meanwhile only frees one.
// A candidate cancelled or deleted between the two statements (those writers do not take the
// lock) is skipped and the next one tried.
func (r executionRepo) Claim(ctx context.Context, runnerID, instance, claim string, now, leaseUntil time.Time,
	limitFor func(domain.Plan) int) (*domain.Execution, error) {
	args := make([]any, 0, 2*len(knownPlans)+4)
	for _, p := range knownPlans {
		args = append(args, p, limitFor(p))
	}
	args = append(args, limitFor(domain.Plan("")), domain.ExecRunning, domain.ExecAnalyzing, domain.ExecPending)

	var claimed *domain.Execution
	err := r.s.inTx(ctx, func(tx *Store) error {
		if tx.d.name == "postgres" {
			if _, err := tx.exec(ctx, `SELECT pg_advisory_xact_lock(?)`, claimLockKey); err != nil {
				return err
			}
		}
		for {
			var id string
			err := tx.q.QueryRowContext(ctx, tx.d.rebind(claimCandidate), args...).Scan(&id)
			if errors.Is(err, sql.ErrNoRows) {
				return nil
			}
			if err != nil {
				return tx.mapErr(err)
			}
			e, err := tx.getRun(ctx, `UPDATE executions
				SET version = version + 1, status = ?, started_at = ?, runner_id = ?, runner_instance = ?, claim_key = ?, lease_until = ?, queue_reason = ''
				WHERE id = ? AND status = ?
				RETURNING `+executionColumns,
				domain.ExecRunning, millis(now), runnerID, instance, claim, millis(leaseUntil), id, domain.ExecPending)
			if errors.Is(err, store.ErrNotFound) {
				continue // cancelled or deleted since the SELECT
			}
			if err != nil {
				return err
			}
			if e.IsShard() {
				// The first shard claimed starts its run.
				if _, err := tx.execRuns(ctx, e.OrganizationID, `UPDATE executions SET version = version + 1, status = ?, started_at = ?, queue_reason = ''
					WHERE organization_id = ? AND id = ? AND status = ?`,
					domain.ExecRunning, millis(now), e.OrganizationID, e.ParentID, domain.ExecPending); err != nil {
					return err
				}
			}
			claimed = e
			return nil
		}
	})
	if err != nil {
		return nil, err
	}
	return claimed, nil
}

// Claimed is the run the ask claim of runnerID's process instance claimed, while that process
// holds it (RUNNING or ANALYZING); ErrNotFound otherwise, and for an empty claim.
func (r executionRepo) Claimed(ctx context.Context, runnerID, instance, claim string) (*domain.Execution, error) {
	if claim == "" {
		return nil, store.ErrNotFound
	}
	return get(ctx, r.s, scanExecution, `SELECT `+executionColumns+` FROM executions
		WHERE status IN (?, ?) AND runner_id = ? AND runner_instance = ? AND claim_key = ?`,
		domain.ExecRunning, domain.ExecAnalyzing, runnerID, instance, claim)
}

// SetQueueReason records why a run waits; ErrNotFound when it is no longer PENDING (claimed or
// cancelled meanwhile), so a stale reason never lands on a running run.
func (r executionRepo) SetQueueReason(ctx context.Context, id, reason string) error {
	return r.s.execRun(ctx, `UPDATE executions SET version = version + 1, queue_reason = ? WHERE id = ? AND status = ? RETURNING organization_id`,
		reason, id, domain.ExecPending)
}

// Heartbeat extends the lease of a RUNNING or ANALYZING run held by runnerID.
func (r executionRepo) Heartbeat(ctx context.Context, id, runnerID string, leaseUntil time.Time) (bool, error) {
	var cancel bool
	var orgID string
	const q = `UPDATE executions SET version = version + 1, lease_until = ?
		WHERE id = ? AND runner_id = ? AND status IN (?, ?)
		RETURNING cancel_requested, organization_id`
	err := r.s.q.QueryRowContext(ctx, r.s.d.rebind(q),
		millis(leaseUntil), id, runnerID, domain.ExecRunning, domain.ExecAnalyzing).Scan(&cancel, &orgID)
	switch {
	case err == nil:
		r.s.wroteRuns(orgID)
	case !errors.Is(err, sql.ErrNoRows):
		r.s.wrote(q)
	}
	return cancel, r.s.mapErr(err)
}

// SetContainer records the container of a RUNNING or ANALYZING run; ErrNotFound when the run
// has ended (expired, cancelled, deleted), which tells the runner to stop the container.
func (r executionRepo) SetContainer(ctx context.Context, id, containerID string) error {
	return r.s.execRun(ctx, `UPDATE executions SET version = version + 1, container_id = ? WHERE id = ? AND status IN (?, ?) RETURNING organization_id`,
		containerID, id, domain.ExecRunning, domain.ExecAnalyzing)
}

// Finish records a run's outcome if it is RUNNING or ANALYZING and held by runnerID, else
// ErrNotFound (already ended, e.g. by the reaper, or another runner's). f.Status is a final
// status, or ANALYZING: then the outcome so far is recorded and the run keeps its runner, lease
// and slot (the runner heartbeats through the analysis and calls Finish again with the final
// status); FinishedAt is only set with a final status, and the lease is then cleared.
func (r executionRepo) Finish(ctx context.Context, id, runnerID string, f store.Finish) error {
	if !f.Status.Final() && f.Status != domain.ExecAnalyzing {
		return fmt.Errorf("sqlstore: Finish with status %q, want a final status or ANALYZING", f.Status)
	}
	quarantined := f.QuarantinedFailures
	if quarantined == nil {
		quarantined = []domain.QuarantinedFailure{}
	}
	j, err := marshalJSON(f.Summary, f.Tests, f.ReportDirs, f.Notes, quarantined)
	if err != nil {
		return err
	}
	indexes, err := nullJSON(f.ReportIndexes)
	if err != nil {
		return err
	}
	analysis, err := analysisJSON(f.Analysis)
	if err != nil {
		return err
	}
	ending := `finished_at = ?, lease_until = NULL, analysis = ?`
	endArgs := []any{millis(f.FinishedAt), analysis}
	if f.Status == domain.ExecAnalyzing {
		ending = `finished_at = ?` // NULL: still running
		endArgs = []any{nil}
	}
	args := append([]any{f.Status, f.Error, nullInt(f.ExitCode), j[0], j[1], j[2], f.ReportBytes, j[3], indexes, j[4]}, endArgs...)
	return r.s.execRun(ctx, `UPDATE executions SET version = version + 1, status = ?, error_message = ?, exit_code = ?,
		summary = ?, tests = ?, report_dirs = ?, report_bytes = ?, notes = ?, report_indexes = ?,
		quarantined_failures = ?, `+ending+`
		WHERE id = ? AND runner_id = ? AND status IN (?, ?) RETURNING organization_id`,
		append(args, id, runnerID, domain.ExecRunning, domain.ExecAnalyzing)...)
}

// SetAnalysis replaces the analysis of a FAILED or UNSTABLE run.
func (r executionRepo) SetAnalysis(ctx context.Context, orgID, id string, a *domain.Analysis) error {
	analysis, err := analysisJSON(a)
	if err != nil {
		return err
	}
	return r.s.execOneRuns(ctx, orgID, `UPDATE executions SET version = version + 1, analysis = ? WHERE organization_id = ? AND id = ? AND status IN (?, ?)`,
		analysis, orgID, id, domain.ExecFailed, domain.ExecUnstable)
}

// SetGate records the quality gate's judgement of the organization's finished run id.
func (r executionRepo) SetGate(ctx context.Context, orgID, id string, g *domain.Gate) error {
	text := ""
	if g != nil {
		j, err := marshalJSON(g)
		if err != nil {
			return err
		}
		text = j[0]
	}
	return r.s.execOneRuns(ctx, orgID, `UPDATE executions SET version = version + 1, gate = ? WHERE organization_id = ? AND id = ?`, text, orgID, id)
}

// Baseline reads the run q chooses: the organization's runs by finish time, newest first,
// through the (organization_id, finished_at) index.
func (r executionRepo) Baseline(ctx context.Context, orgID string, q store.BaselineQuery) (*domain.Execution, error) {
	if len(q.Statuses) == 0 {
		return nil, nil
	}
	before := millis(q.Before)
	where := `organization_id = ? AND parent_id = '' AND finished_at IS NOT NULL AND (finished_at < ? OR (finished_at = ? AND id < ?))
		AND project_id = ? AND status IN (` + placeholders(len(q.Statuses)) + `)`
	args := []any{orgID, before, before, q.BeforeID, q.ProjectID}
	for _, st := range q.Statuses {
		args = append(args, st)
	}
	if q.ProjectID == "" {
		where += ` AND image = ?`
		args = append(args, q.Image)
	}
	for _, l := range q.Labels {
		where += ` AND id IN (SELECT execution_id FROM execution_labels WHERE organization_id = ? AND label_key = ? AND label_value = ?)`
		args = append(args, orgID, l.Key, l.Value)
	}
	e, err := get(ctx, r.s, scanExecution, `SELECT `+executionColumns+` FROM executions WHERE `+where+`
		ORDER BY finished_at DESC, id DESC LIMIT 1`, args...)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	return e, err
}

// analysisJSON is the parameter for the analysis column: NULL for none.
func analysisJSON(a *domain.Analysis) (any, error) {
	if a == nil {
		return nil, nil
	}
	j, err := marshalJSON(a)
	if err != nil {
		return nil, err
	}
	return j[0], nil
}

// Expired lists RUNNING and ANALYZING runs whose lease ended before now, the longest expired
// first. ANALYZING counts too: its runner heartbeats through the analysis, and a run whose
// analyser died must not hold its slot forever.
func (r executionRepo) Expired(ctx context.Context, now time.Time) ([]domain.Execution, error) {
	return list(ctx, r.s, scanExecution, `SELECT `+executionColumns+` FROM executions
		WHERE status IN (?, ?) AND lease_until < ? ORDER BY lease_until, id`,
		domain.ExecRunning, domain.ExecAnalyzing, millis(now))
}

// ExtendLeases moves every active lease that ends before until to until: one UPDATE through
// the (status, lease_until) index, so a heartbeat that renewed further meanwhile keeps its
// lease.
func (r executionRepo) ExtendLeases(ctx context.Context, until time.Time) (int, error) {
	res, err := r.s.exec(ctx, `UPDATE executions SET version = version + 1, lease_until = ? WHERE status IN (?, ?) AND lease_until < ?`,
		millis(until), domain.ExecRunning, domain.ExecAnalyzing, millis(until))
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// EndExpired ends the run as ERROR with reason if its lease still ended before now: one
// conditional UPDATE, so a heartbeat that renewed the lease first wins (false), and a heartbeat
// after it finds the run ended. False, nil also for an unknown or already ended run.
// SettleExpired ends an ANALYZING run whose lease expired with its verdict: one conditional
// UPDATE, like EndExpired.
func (r executionRepo) SettleExpired(ctx context.Context, id string, now time.Time, status domain.ExecStatus,
	a *domain.Analysis) (bool, error) {
	if status != domain.ExecFailed && status != domain.ExecUnstable && status != domain.ExecPassed {
		return false, fmt.Errorf("sqlstore: SettleExpired with status %q, want a verdict", status)
	}
	analysis, err := analysisJSON(a)
	if err != nil {
		return false, err
	}
	err = r.s.execRun(ctx, `UPDATE executions SET version = version + 1, status = ?, analysis = ?, finished_at = ?, lease_until = NULL
		WHERE id = ? AND status = ? AND lease_until < ? RETURNING organization_id`,
		status, analysis, millis(now), id, domain.ExecAnalyzing, millis(now))
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

func (r executionRepo) EndExpired(ctx context.Context, id string, now time.Time, reason string) (bool, error) {
	err := r.s.execRun(ctx, `UPDATE executions SET version = version + 1, status = ?, error_message = ?, finished_at = ?, lease_until = NULL
		WHERE id = ? AND status IN (?, ?) AND lease_until < ? RETURNING organization_id`,
		domain.ExecError, reason, millis(now), id, domain.ExecRunning, domain.ExecAnalyzing, millis(now))
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// Shards reads a sharded run's containers' records through the partial index of them.
func (r executionRepo) Shards(ctx context.Context, parentID string) ([]domain.Execution, error) {
	return list(ctx, r.s, scanExecution, `SELECT `+executionColumns+` FROM executions
		WHERE parent_id = ? AND parent_id <> '' ORDER BY retry_round, shard_index, id`, parentID)
}

// ClaimMerge is one conditional UPDATE: of the shards that end at the same moment, one
// settles their run.
func (r executionRepo) ClaimMerge(ctx context.Context, parentID, holder string, leaseUntil time.Time) (bool, error) {
	err := r.s.execRun(ctx, `UPDATE executions SET version = version + 1, runner_id = ?, lease_until = ?
		WHERE id = ? AND runner_id = '' AND status = ? AND shards > 0 AND parent_id = '' RETURNING organization_id`,
		holder, millis(leaseUntil), parentID, domain.ExecRunning)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// Stranded reads the RUNNING runs through the (status, lease_until) index: a sharded run being
// settled holds a lease, and one whose shards go on has a shard not final.
func (r executionRepo) Stranded(ctx context.Context) ([]string, error) {
	q := `SELECT p.id FROM executions p WHERE p.status = ? AND p.lease_until IS NULL AND p.shards > 0 AND p.parent_id = ''
		AND NOT EXISTS (SELECT 1 FROM executions c WHERE c.parent_id = p.id AND c.status IN (?, ?, ?))`
	ids := map[string]bool{}
	if err := r.scanIDs(ctx, q, []any{domain.ExecRunning, domain.ExecPending, domain.ExecRunning, domain.ExecAnalyzing}, ids); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(ids))
	for id := range ids {
		out = append(out, id)
	}
	return out, nil
}

// RequeueLost is one conditional UPDATE (like EndExpired) and the removal of the shard's log,
// in one transaction.
func (r executionRepo) RequeueLost(ctx context.Context, id string, now time.Time, reason string) (bool, error) {
	requeued := false
	err := r.s.InTx(ctx, func(tx store.Store) error {
		s := tx.(*Store)
		err := s.execRun(ctx, `UPDATE executions SET version = version + 1, status = ?, queue_reason = ?, runner_id = '', runner_instance = '',
			container_id = '', lease_until = NULL, started_at = NULL, attempt = 1
			WHERE id = ? AND parent_id <> '' AND attempt = 0 AND cancel_requested = ? AND status = ? AND lease_until < ?
			RETURNING organization_id`,
			domain.ExecPending, reason, id, false, domain.ExecRunning, millis(now))
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		requeued = true
		_, err = s.exec(ctx, `DELETE FROM execution_logs WHERE execution_id = ?`, id)
		return err
	})
	return requeued, err
}

// RequestCancel cancels a PENDING run at once (true: CANCELLED, finished now) or flags a
// RUNNING or ANALYZING one for its runner, which learns it from its next heartbeat (false).
// A run already ended answers false, ErrGuard; an unknown one (or another organization's)
// ErrNotFound. No transaction is needed: a status only moves forward, so each failed step
// proves the run is past that state when the next one runs.
func (r executionRepo) RequestCancel(ctx context.Context, orgID, taskID string, now time.Time) (bool, error) {
	// A sharded run's shards first: those waiting are cancelled, those running flagged, so that
	// no runner claims one once the run is cancelled.
	if _, err := r.s.execRuns(ctx, orgID, `UPDATE executions SET version = version + 1, status = ?, finished_at = ?, queue_reason = ''
		WHERE organization_id = ? AND parent_id IN (SELECT id FROM executions WHERE organization_id = ? AND task_id = ? AND shards > 0)
		AND status = ?`, domain.ExecCancelled, millis(now), orgID, orgID, taskID, domain.ExecPending); err != nil {
		return false, err
	}
	if _, err := r.s.execRuns(ctx, orgID, `UPDATE executions SET version = version + 1, cancel_requested = ?
		WHERE organization_id = ? AND parent_id IN (SELECT id FROM executions WHERE organization_id = ? AND task_id = ? AND shards > 0)
		AND status IN (?, ?)`, true, orgID, orgID, taskID, domain.ExecRunning, domain.ExecAnalyzing); err != nil {
		return false, err
	}
	err := r.s.execOneRuns(ctx, orgID, `UPDATE executions SET version = version + 1, status = ?, finished_at = ?, queue_reason = ''
		WHERE organization_id = ? AND task_id = ? AND status = ?`,
		domain.ExecCancelled, millis(now), orgID, taskID, domain.ExecPending)
	if !errors.Is(err, store.ErrNotFound) {
		return err == nil, err
	}
	err = r.s.execOneRuns(ctx, orgID, `UPDATE executions SET version = version + 1, cancel_requested = ?
		WHERE organization_id = ? AND task_id = ? AND status IN (?, ?)`,
		true, orgID, taskID, domain.ExecRunning, domain.ExecAnalyzing)
	if !errors.Is(err, store.ErrNotFound) {
		return false, err
	}
	if _, err := r.Get(ctx, orgID, taskID); err != nil {
		return false, err // ErrNotFound
	}
	return false, store.ErrGuard
}

// Delete removes the execution, its shard and retry containers' records and, by cascade, their
// log chunks, whatever its status (the service cancels a running one first; its runner then
// finds the run gone); then their test results (deleteResults).
func (r executionRepo) Delete(ctx context.Context, orgID, taskID string) error {
	return r.s.inTx(ctx, func(tx *Store) error {
		ids, err := list(ctx, tx, scanString, `SELECT id FROM executions WHERE organization_id = ? AND (task_id = ? OR parent_id IN
			(SELECT id FROM executions WHERE organization_id = ? AND task_id = ? AND shards > 0))`, orgID, taskID, orgID, taskID)
		if err != nil {
			return err
		}
		if len(ids) == 0 {
			return store.ErrNotFound
		}
		args := append([]any{orgID}, anys(ids)...)
		// Its log chunks, labels, tickets and signatures cascade; no cached read is of those.
		if err := tx.execOneRuns(ctx, orgID, `DELETE FROM executions WHERE organization_id = ? AND id IN (`+placeholders(len(ids))+`)`, args...); err != nil {
			return err
		}
		return tx.deleteResults(ctx, ids)
	})
}

// deleteResults deletes the test results of runs just deleted, in the transaction that deleted
// them. (On PostgreSQL no reference cascades them: see migration 00026.) It comes after the runs'
// DELETE, which waited for any recording holding a run's row, so that recording's results are
// committed and seen here; a recording after it finds its run gone and writes nothing.
func (s *Store) deleteResults(ctx context.Context, executionIDs []string) error {
	if len(executionIDs) == 0 {
		return nil
	}
	_, err := s.exec(ctx, `DELETE FROM test_results WHERE execution_id IN (`+placeholders(len(executionIDs))+`)`, anys(executionIDs)...)
	return err
}

// ListPending lists PENDING runs of every organization, oldest first; limit <= 0 lists all.
func (r executionRepo) ListPending(ctx context.Context, limit int) ([]domain.Execution, error) {
	q := `SELECT ` + executionColumns + ` FROM executions WHERE status = ? ORDER BY queued_at, id`
	if limit <= 0 {
		return list(ctx, r.s, scanExecution, q, domain.ExecPending)
	}
	return list(ctx, r.s, scanExecution, q+` LIMIT ?`, domain.ExecPending, limit)
}

// maxReadTestBytes bounds the stored tests that one read of many runs decodes
// (ListFinishedForImage: the analyser's history of an image): a run keeps up to
// domain.MaxKeptTestBytes of them. The newest runs' come first; a run past the bound is read
// with no tests.
const maxReadTestBytes = 16 << 20

// boundedTests is the tests column of a read ordered newest first, '[]' for a run whose tests
// would pass maxReadTestBytes with those of the runs before it: a running sum of their stored
// sizes (OCTET_LENGTH, which needs no read of the text on either database). Its placeholder
// takes maxReadTestBytes.
const boundedTests = `CASE WHEN SUM(OCTET_LENGTH(tests)) OVER (ORDER BY queued_at DESC, id DESC ROWS UNBOUNDED PRECEDING)
	<= CAST(? AS BIGINT) THEN tests ELSE '[]' END`

// ListFinishedForImage lists the organization's runs of image in a final status (CANCELLED and
// ERROR included), newest queued first, their tests within maxReadTestBytes; limit <= 0 lists
// all.
func (r executionRepo) ListFinishedForImage(ctx context.Context, orgID, image string, limit int) ([]domain.Execution, error) {
	q := `SELECT ` + strings.Replace(executionColumns, "summary, tests,", "summary, "+boundedTests+",", 1) + ` FROM executions
		WHERE organization_id = ? AND parent_id = '' AND image = ? AND status IN (?, ?, ?, ?, ?)
		ORDER BY queued_at DESC, id DESC`
	args := []any{maxReadTestBytes, orgID, image, domain.ExecPassed, domain.ExecFailed, domain.ExecUnstable, domain.ExecError,
		domain.ExecCancelled}
	if limit <= 0 {
		return list(ctx, r.s, scanExecution, q, args...)
	}
	return list(ctx, r.s, scanExecution, q+` LIMIT ?`, append(args, limit)...)
}

// Outcomes reads the organization's finished runs (PASSED, FAILED, UNSTABLE, ERROR) queued at
// or after since, newest first, at most limit: a range of the (organization_id, queued_at, id)
// index read backwards, stopped after limit matching rows. Their tests are not read.
func (r executionRepo) Outcomes(ctx context.Context, orgID string, since time.Time, limit int) ([]store.RunOutcome, error) {
	if limit <= 0 {
		return []store.RunOutcome{}, nil
	}
	return r.outcomes(ctx, `SELECT `+outcomeRunColumns+` FROM executions
		WHERE organization_id = ? AND parent_id = '' AND queued_at >= ? AND status IN (?, ?, ?, ?)
		ORDER BY queued_at DESC, id DESC LIMIT CAST(? AS BIGINT)`, limit, orgID, millis(since),
		domain.ExecPassed, domain.ExecFailed, domain.ExecUnstable, domain.ExecError, limit)
}

// ImageOutcomes reads the organization's finished runs of image (CANCELLED included), newest
// first, at most limit, as ListFinishedForImage finds them, without their tests.
func (r executionRepo) ImageOutcomes(ctx context.Context, orgID, image string, limit int) ([]store.RunOutcome, error) {
	if limit <= 0 {
		return []store.RunOutcome{}, nil
	}
	return r.outcomes(ctx, `SELECT `+outcomeRunColumns+` FROM executions
		WHERE organization_id = ? AND parent_id = '' AND image = ? AND status IN (?, ?, ?, ?, ?)
		ORDER BY queued_at DESC, id DESC LIMIT CAST(? AS BIGINT)`, limit, orgID, image,
		domain.ExecPassed, domain.ExecFailed, domain.ExecUnstable, domain.ExecError, domain.ExecCancelled, limit)
}

// outcomeRunColumns are the columns of a store.RunOutcome.
const outcomeRunColumns = `id, task_id, project_id, status, error_message, queued_at, started_at, finished_at`

// outcomes runs a query of outcomeRunColumns expected to return at most limit rows.
func (r executionRepo) outcomes(ctx context.Context, q string, limit int, args ...any) ([]store.RunOutcome, error) {
	rows, err := r.s.on(q).QueryContext(ctx, r.s.d.rebind(q), args...)
	if err != nil {
		return nil, r.s.mapErr(err)
	}
	defer rows.Close()
	out := make([]store.RunOutcome, 0, min(limit, 256))
	var (
		queued            int64
		started, finished sql.NullInt64
	)
	for rows.Next() {
		var o store.RunOutcome
		if err := rows.Scan(&o.ID, &o.TaskID, &o.ProjectID, &o.Status, &o.Error, &queued, &started, &finished); err != nil {
			return nil, r.s.mapErr(err)
		}
		o.QueuedAt, o.StartedAt, o.FinishedAt = fromMillis(queued), timePtr(started), timePtr(finished)
		out = append(out, o)
	}
	return out, r.s.mapErr(rows.Err())
}
