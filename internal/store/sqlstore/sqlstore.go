// Package sqlstore implements the store contracts with database/sql, once, for SQLite
// (modernc.org/sqlite) and PostgreSQL (pgx). What differs between the two lives in dialect.go
// and in the per-dialect migrations.
package sqlstore

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers "pgx"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
	_ "modernc.org/sqlite" // registers "sqlite"

	"verdict/internal/crypto/secretbox"
	"verdict/internal/domain"
	"verdict/internal/store"
)

//go:embed migrations/sqlite/*.sql migrations/postgres/*.sql
var migrations embed.FS

// Store is a store.Store on one database. Inside InTx it is bound to that transaction.
//
// On SQLite it holds two pools on the file: one writer connection, since SQLite takes one
// writer at a time (a second would only wait in busy_timeout, blind to its context, where
// database/sql's queue for the connection honours it), and several read-only connections, which
// WAL lets read beside the writer and each other. A statement runs on the read pool when it is a
// SELECT outside a transaction (see on). On PostgreSQL both are the same pool.
type Store struct {
	db  *sql.DB // the writer; migrations, transactions and writes
	rdb *sql.DB // the read pool (db on PostgreSQL)
	d   *dialect
	q   querier // db, or tx inside InTx
	r   querier // the read pool (through cached statements on SQLite), or tx inside InTx
	tx  *sql.Tx

	runRows *runRows // list rows of runs at their versions (PostgreSQL, for the pages not kept)

	// The write generations and the caches they govern (see readcache.go): the users and the run
	// list's pages (on PostgreSQL while feed listens, writefeed.go); nil inside a transaction,
	// whose writes are noted in txWrites and count from its commit.
	gens     *tableGens
	users    *readCache[domain.User]
	pages    *readCache[listPage]
	feed     *writeFeed // PostgreSQL: other replicas' writes to users and runs
	txWrites *[]txWrite

	mailBox *secretbox.Box // seals the outbox's mail bodies; see SealOutbox

	ckpt *checkpointer // SQLite: checkpoints the write-ahead log off the writer's path
}

var _ store.Store = (*Store)(nil)

// querier is what *sql.DB and *sql.Tx have in common.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Open connects to the database named by databaseURL: empty for the SQLite file
// <dataDir>/verdict.db, postgres:// or postgresql:// for PostgreSQL, sqlite:<path> or
// file:<path> for another SQLite file. It does not migrate; call Migrate for that.
func Open(ctx context.Context, databaseURL, dataDir string) (*Store, error) {
	switch {
	case databaseURL == "":
		return openSQLite(ctx, filepath.Join(dataDir, "verdict.db"))
	case strings.HasPrefix(databaseURL, "postgres://"), strings.HasPrefix(databaseURL, "postgresql://"):
		return openPostgres(ctx, databaseURL)
	case strings.HasPrefix(databaseURL, "sqlite:"), strings.HasPrefix(databaseURL, "file:"):
		_, rest, _ := strings.Cut(databaseURL, ":")
		path := strings.TrimPrefix(rest, "//") // sqlite:///abs/x.db and sqlite:x.db both work
		if path == "" || strings.ContainsAny(path, "?#") {
			// The store sets its own connection parameters; taking the user's too would let
			// them undo the locking guarantees below.
			return nil, fmt.Errorf("sqlstore: SQLite URL %q must be a plain file path without parameters", databaseURL)
		}
		return openSQLite(ctx, path)
	default:
		scheme, _, _ := strings.Cut(databaseURL, ":")
		return nil, fmt.Errorf("sqlstore: unsupported database URL scheme %q (want postgres://, sqlite: or file:)", scheme)
	}
}

func openSQLite(ctx context.Context, path string) (*Store, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("sqlstore: create data folder: %w", err)
	}
	if err := privateFiles(path); err != nil {
		return nil, fmt.Errorf("sqlstore: %w", err)
	}
	// WAL lets readers run beside the one writer. _txlock=immediate makes BEGIN take the write
	// lock, so a write transaction waits (busy_timeout) at its start instead of failing with
	// SQLITE_BUSY when a read would upgrade to a write mid-transaction. That wait ignores the
	// context, so it is kept short: our write transactions take milliseconds.
	dsn := path + "?" + url.Values{
		// synchronous(NORMAL) is WAL's safe setting: a commit is durable once the WAL is
		// checkpointed, and no fsync per commit keeps log appends on the hot path cheap.
		// The checkpoints are the checkpointer's (checkpoint.go), the writer's a backstop.
		"_pragma": {"busy_timeout(5000)", "foreign_keys(1)", "journal_mode(WAL)", "synchronous(NORMAL)",
			fmt.Sprintf("wal_autocheckpoint(%d)", writerCheckpointPages)},
		"_txlock": {"immediate"},
	}.Encode()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	st, err := newStore(ctx, db, sqliteDialect) // opens the file and sets WAL before readers come
	if err != nil {
		return nil, err
	}
	// Readers: query_only makes a write that strays here fail rather than contend with the
	// writer. SQLite runs in-process, so readers beyond a couple per core add little but memory
	// (a page cache each). Idle connections are kept: reopening one re-runs the pragmas and
	// loses its prepared statements.
	rdb, err := sql.Open("sqlite", path+"?"+url.Values{
		"_pragma": {"busy_timeout(5000)", "foreign_keys(1)", "query_only(1)"},
	}.Encode())
	if err != nil {
		db.Close()
		return nil, err
	}
	n := max(4, 2*runtime.GOMAXPROCS(0))
	rdb.SetMaxOpenConns(n)
	rdb.SetMaxIdleConns(n)
	if err := rdb.PingContext(ctx); err != nil {
		rdb.Close()
		db.Close()
		return nil, fmt.Errorf("sqlstore: connect to sqlite readers: %w", err)
	}
	st.rdb, st.r = rdb, newStmtCache(rdb)
	if st.ckpt, err = startCheckpointer(ctx, path); err != nil {
		rdb.Close()
		db.Close()
		return nil, fmt.Errorf("sqlstore: connect the sqlite checkpointer: %w", err)
	}
	st.gens = &tableGens{}
	gens := st.gens
	st.users = newReadCache(func(string) uint64 { return gens.users.Load() }, userBytes)
	st.pages = newReadCache(func(key string) uint64 { return gens.pageGen(pageOrg(key)) }, pageBytes)
	return st, nil
}

// privateFiles makes the database file and its -wal and -shm files readable by the service
// alone (0600), creating the database file so: SQLite gives the -wal and -shm files the mode of
// the database file, and would otherwise create it 0644. Files of an older version are
// tightened too.
func privateFiles(path string) error {
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("create the database file: %w", err)
	}
	f.Close()
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		info, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if info.Mode().Perm()&0o077 != 0 {
			if err := os.Chmod(p, info.Mode().Perm()&0o700); err != nil {
				return fmt.Errorf("make %s private: %w", p, err)
			}
		}
	}
	return nil
}

func openPostgres(ctx context.Context, databaseURL string) (*Store, error) {
	db, err := sql.Open("pgx", databaseURL)
	if err != nil {
		return nil, err
	}
	// Per replica: PostgreSQL's default max_connections is 100, so ten replicas fit with room
	// for migrations and operators. Idle connections are returned after a burst.
	db.SetMaxOpenConns(8)
	db.SetMaxIdleConns(8)
	db.SetConnMaxIdleTime(5 * time.Minute)
	st, err := newStore(ctx, db, newPostgresDialect())
	if err != nil {
		return nil, err
	}
	st.gens = &tableGens{}
	gens := st.gens
	st.users = newReadCache(func(string) uint64 { return gens.users.Load() }, userBytes)
	st.pages = newReadCache(func(key string) uint64 { return gens.pageGen(pageOrg(key)) }, pageBytes)
	st.feed = startWriteFeed(databaseURL, gens)
	return st, nil
}

func newStore(ctx context.Context, db *sql.DB, d *dialect) (*Store, error) {
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlstore: connect to %s: %w", d.name, err)
	}
	return &Store{db: db, rdb: db, d: d, q: db, r: db, runRows: newRunRows()}, nil
}

// Migrate applies the embedded migrations of the store's dialect that the database lacks. On
// PostgreSQL an advisory lock makes replicas that start together apply them once.
func (s *Store) Migrate(ctx context.Context) error {
	if s.tx != nil {
		return errors.New("sqlstore: Migrate inside a transaction")
	}
	fsys, err := fs.Sub(migrations, "migrations/"+s.d.name)
	if err != nil {
		return err
	}
	opts := []goose.ProviderOption{goose.WithLogger(goose.NopLogger())}
	if s.d.name == "postgres" {
		// Retry each second (goose's default is every 5 s) for up to 5 minutes, so a replica
		// that lost the race starts soon after the winner has migrated.
		locker, err := lock.NewPostgresSessionLocker(lock.WithLockTimeout(1, 300))
		if err != nil {
			return err
		}
		opts = append(opts, goose.WithSessionLocker(locker))
	}
	p, err := goose.NewProvider(s.d.goose, s.db, fsys, opts...)
	if err != nil {
		return fmt.Errorf("sqlstore: migrations: %w", err)
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("sqlstore: migrate: %w", err)
	}
	return nil
}

func (s *Store) Users() store.UserRepo                 { return userRepo{s} }
func (s *Store) Organizations() store.OrganizationRepo { return orgRepo{s} }
func (s *Store) Invitations() store.InvitationRepo     { return invitationRepo{s} }
func (s *Store) APIKeys() store.APIKeyRepo             { return apiKeyRepo{s} }
func (s *Store) Audit() store.AuditRepo                { return auditRepo{s} }
func (s *Store) SSO() store.SSORepo                    { return ssoRepo{s} }
func (s *Store) Outbox() store.OutboxRepo              { return outboxRepo{s} }

// Dialect reports "sqlite" or "postgres".
func (s *Store) Dialect() string { return s.d.name }

// Ping checks the connection.
func (s *Store) Ping(ctx context.Context) error { return s.db.PingContext(ctx) }

// Close closes the database; the Store bound to a transaction cannot close it.
func (s *Store) Close() error {
	if s.tx != nil {
		return errors.New("sqlstore: Close inside a transaction")
	}
	if c, ok := s.r.(*stmtCache); ok {
		c.close()
	}
	s.feed.close()
	err := s.ckpt.close()
	if s.rdb != s.db {
		err = errors.Join(err, s.rdb.Close())
	}
	return errors.Join(err, s.db.Close())
}

// InTx runs fn in one transaction, committed when fn returns nil and rolled back otherwise
// (or when it panics). Inside a transaction it runs fn in the same one.
func (s *Store) InTx(ctx context.Context, fn func(tx store.Store) error) error {
	return s.inTx(ctx, func(tx *Store) error { return fn(tx) })
}

func (s *Store) inTx(ctx context.Context, fn func(tx *Store) error) error {
	if s.tx != nil {
		return fn(s)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.mapErr(err)
	}
	defer tx.Rollback() // no-op after Commit
	var writes []txWrite
	if err := fn(&Store{db: s.db, rdb: s.rdb, d: s.d, q: tx, r: tx, tx: tx, mailBox: s.mailBox,
		gens: s.gens, txWrites: &writes}); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return s.mapErr(err)
	}
	s.ckpt.written()
	for _, w := range writes {
		if w.runsOf != "" {
			s.gens.wroteRuns(w.runsOf)
		} else {
			s.gens.wrote(w.query)
		}
	}
	return nil
}

// wrote notes that query, a write, has taken effect (or will, with the commit of the
// transaction the Store is bound to); see readcache.go.
func (s *Store) wrote(query string) {
	switch {
	case s.gens == nil:
	case s.txWrites != nil:
		*s.txWrites = append(*s.txWrites, txWrite{query: query})
	default:
		s.gens.wrote(query)
		s.ckpt.written()
	}
}

// wroteRuns notes a write to runs of orgID alone (see readcache.go), as wrote does.
func (s *Store) wroteRuns(orgID string) {
	switch {
	case s.gens == nil:
	case s.txWrites != nil:
		*s.txWrites = append(*s.txWrites, txWrite{runsOf: orgID})
	default:
		s.gens.wroteRuns(orgID)
		s.ckpt.written()
	}
}

// txWrite is a write of a transaction, counted at its commit: a statement (wrote) or a write
// to an organization's runs (wroteRuns).
type txWrite struct{ query, runsOf string }

// mapErr turns driver errors into the store's: no row → ErrNotFound, unique violation →
// ErrConflict, a database that cannot be reached or cannot serve → ErrUnavailable (keeping
// the driver's text for logs).
func (s *Store) mapErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, sql.ErrNoRows):
		return store.ErrNotFound
	case s.d.isUnique(err):
		return fmt.Errorf("%w: %v", store.ErrConflict, err)
	case errors.Is(err, store.ErrUnavailable):
		return err
	case s.d.unavailable(err):
		return domain.DependencyUnavailable("database", err)
	}
	return err
}

func (s *Store) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	r, err := s.q.ExecContext(ctx, s.d.rebind(query), args...)
	s.wrote(query)
	return r, s.mapErr(err)
}

// execRuns runs a write to runs of orgID alone (an INSERT of its runs, or a statement bounded
// by organization_id = orgID): it ends the cached pages of that organization's run list only.
func (s *Store) execRuns(ctx context.Context, orgID, query string, args ...any) (sql.Result, error) {
	r, err := s.q.ExecContext(ctx, s.d.rebind(query), args...)
	s.wroteRuns(orgID)
	return r, s.mapErr(err)
}

// execOneRuns is execRuns for a write that must touch a row, as execOne.
func (s *Store) execOneRuns(ctx context.Context, orgID, query string, args ...any) error {
	r, err := s.execRuns(ctx, orgID, query, args...)
	return s.touched(r, err)
}

// execRun runs a write to one run that returns the run's organization (RETURNING
// organization_id), whose run list alone it counts against; ErrNotFound when it wrote no run.
func (s *Store) execRun(ctx context.Context, query string, args ...any) error {
	var org string
	err := s.q.QueryRowContext(ctx, s.d.rebind(query), args...).Scan(&org)
	switch {
	case err == nil:
		s.wroteRuns(org)
	case errors.Is(err, sql.ErrNoRows): // no run written
	default:
		s.wrote(query) // it may have written: count it against every page
	}
	return s.mapErr(err)
}

// getRun is get for a write to one run that returns it (UPDATE … RETURNING executionColumns):
// it counts against the run's organization's run list alone.
func (s *Store) getRun(ctx context.Context, query string, args ...any) (*domain.Execution, error) {
	e, err := scanExecution(s.q.QueryRowContext(ctx, s.d.rebind(query), args...))
	switch {
	case err == nil:
		s.wroteRuns(e.OrganizationID)
	case !errors.Is(err, sql.ErrNoRows):
		s.wrote(query) // it may have written: count it against every page
	}
	return e, s.mapErr(err)
}

// execOne runs a write that must touch a row: none (missing, another organization's, or a
// failed condition) is ErrNotFound.
func (s *Store) execOne(ctx context.Context, query string, args ...any) error {
	r, err := s.exec(ctx, query, args...)
	return s.touched(r, err)
}

// touched is a write's error, or ErrNotFound when it touched no row.
func (s *Store) touched(r sql.Result, err error) error {
	if err != nil {
		return err
	}
	n, err := r.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return store.ErrNotFound
	}
	return nil
}

// scanner is *sql.Row or *sql.Rows.
type scanner interface{ Scan(dest ...any) error }

// on is where query runs: a SELECT outside a transaction on the read pool, anything else
// (writes, UPDATE … RETURNING, and everything inside InTx) on the writer or the transaction.
func (s *Store) on(query string) querier {
	if s.tx == nil && isSelect(query) {
		return s.r
	}
	return s.q
}

func isSelect(query string) bool {
	return strings.HasPrefix(strings.TrimLeft(query, " \t\n"), "SELECT")
}

// get runs a query for one row and scans it.
func get[T any](ctx context.Context, s *Store, scan func(scanner) (*T, error), query string, args ...any) (*T, error) {
	v, err := scan(s.on(query).QueryRowContext(ctx, s.d.rebind(query), args...))
	if !isSelect(query) {
		s.wrote(query) // UPDATE … RETURNING
	}
	return v, s.mapErr(err)
}

// list runs a query and scans every row; never nil, so it encodes as [] rather than null.
func list[T any](ctx context.Context, s *Store, scan func(scanner) (*T, error), query string, args ...any) ([]T, error) {
	if !isSelect(query) {
		defer s.wrote(query) // UPDATE … RETURNING; runs after rows.Close
	}
	rows, err := s.on(query).QueryContext(ctx, s.d.rebind(query), args...)
	if err != nil {
		return nil, s.mapErr(err)
	}
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, s.mapErr(err)
		}
		out = append(out, *v)
	}
	return out, s.mapErr(rows.Err())
}

// scanString scans a one-column row of text.
// anys is the arguments of an IN list of strings.
func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func scanString(sc scanner) (*string, error) {
	var s string
	return &s, sc.Scan(&s)
}

// count runs a SELECT COUNT(*).
func (s *Store) count(ctx context.Context, query string, args ...any) (int, error) {
	var n int
	err := s.on(query).QueryRowContext(ctx, s.d.rebind(query), args...).Scan(&n)
	return n, s.mapErr(err)
}

// Timestamps are stored as unix milliseconds in both dialects.

func millis(t time.Time) int64 { return t.UnixMilli() }

func fromMillis(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// nullMillis is the parameter for a nullable timestamp column.
func nullMillis(t *time.Time) any {
	if t == nil {
		return nil
	}
	return t.UnixMilli()
}

func timePtr(n sql.NullInt64) *time.Time {
	if !n.Valid {
		return nil
	}
	t := fromMillis(n.Int64)
	return &t
}

// ensureID gives a new record an identifier when the caller left it empty.
func ensureID(id *string) {
	if *id == "" {
		*id = domain.NewID()
	}
}
