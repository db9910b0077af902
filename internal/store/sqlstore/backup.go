package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"

	"modernc.org/sqlite"
)

// ErrNotSQLite is the refusal of a backup or restore of a PostgreSQL database, which
// PostgreSQL's own tools (pg_dump, base backups) take.
var ErrNotSQLite = errors.New("sqlstore: backup and restore copy an SQLite database; back up PostgreSQL with pg_dump or a base backup")

// onlineBackup is what the SQLite driver's connection offers for SQLite's online backup API.
type onlineBackup interface {
	NewBackup(dstURI string) (*sqlite.Backup, error)
	NewRestore(srcURI string) (*sqlite.Backup, error)
}

// copyPages runs one online backup (or restore) that start opens on conn's driver connection,
// copying every page in one step.
func copyPages(conn *sql.Conn, start func(onlineBackup) (*sqlite.Backup, error)) error {
	return conn.Raw(func(dc any) error {
		ob, ok := dc.(onlineBackup)
		if !ok {
			return fmt.Errorf("sqlstore: the SQLite driver offers no online backup")
		}
		b, err := start(ob)
		if err != nil {
			return err
		}
		if _, err := b.Step(-1); err != nil {
			_ = b.Finish()
			return err
		}
		return b.Finish()
	})
}

// Backup writes a consistent copy of the SQLite database to path while it serves: SQLite's
// online backup API copies every page in one step inside a read transaction, so writers go on
// (WAL) and the copy is the database at one instant. The copy is written beside path and
// renamed into place, readable by the owner only; an existing file at path is replaced.
func (s *Store) Backup(ctx context.Context, path string) error {
	if s.d.name != "sqlite" {
		return ErrNotSQLite
	}
	tmp := path + ".partial"
	_ = os.Remove(tmp)
	conn, err := s.rdb.Conn(ctx)
	if err != nil {
		return s.mapErr(err)
	}
	defer conn.Close()
	err = copyPages(conn, func(ob onlineBackup) (*sqlite.Backup, error) { return ob.NewBackup(tmp) })
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("sqlstore: backup: %w", err)
	}
	if err := os.Chmod(tmp, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// Restore replaces the SQLite database's content with the backup at path, through the same
// online backup API (so the database's own WAL and locks stay consistent), after checking that
// path is a Verdict database. The server must be stopped: a server serving from the database
// would keep caches of what it replaced. Migrate afterwards brings an older backup's schema up.
func (s *Store) Restore(ctx context.Context, path string) error {
	if s.d.name != "sqlite" {
		return ErrNotSQLite
	}
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("sqlstore: restore: %w", err)
	}
	src, err := sql.Open("sqlite", "file:"+path+"?"+url.Values{"mode": {"ro"}}.Encode())
	if err != nil {
		return err
	}
	var orgs int
	err = src.QueryRowContext(ctx, `SELECT COUNT(*) FROM organizations`).Scan(&orgs)
	src.Close()
	if err != nil {
		return fmt.Errorf("sqlstore: restore: %s is not a Verdict database: %w", path, err)
	}
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return s.mapErr(err)
	}
	defer conn.Close()
	err = copyPages(conn, func(ob onlineBackup) (*sqlite.Backup, error) { return ob.NewRestore(path) })
	if err != nil {
		return fmt.Errorf("sqlstore: restore: %w", err)
	}
	return nil
}
