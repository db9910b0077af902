package sqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/pressly/goose/v3"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// dialect is everything that differs between SQLite and PostgreSQL. Queries are written once,
// with ? placeholders and the locking clauses left to the fields below.
type dialect struct {
	name  string // "sqlite" or "postgres", as Store.Dialect reports
	goose goose.Dialect
	// forUpdate ends a SELECT that must lock its rows until the transaction ends; empty on
	// SQLite, whose write transactions hold the database lock from BEGIN.
	forUpdate string
	// skipLocked ends a SELECT whose locked rows other transactions should pass over.
	skipLocked string
	rebind     func(query string) string
	isUnique   func(err error) bool
	// unavailable tells an error of the database itself (unreachable, shutting down, out of
	// disk or connections) from a refusal of the query: the first may pass later.
	unavailable func(err error) bool
}

var sqliteDialect = &dialect{
	name:   "sqlite",
	goose:  goose.DialectSQLite3,
	rebind: func(q string) string { return q },
	isUnique: func(err error) bool {
		var e *sqlite.Error
		return errors.As(err, &e) &&
			(e.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE || e.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY)
	},
	unavailable: func(err error) bool {
		var e *sqlite.Error
		if !errors.As(err, &e) {
			return false
		}
		switch e.Code() & 0xff { // the primary code; extended codes add detail above it
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_NOMEM, sqlite3.SQLITE_READONLY,
			sqlite3.SQLITE_IOERR, sqlite3.SQLITE_FULL, sqlite3.SQLITE_CANTOPEN:
			return true
		}
		return false
	},
}

func newPostgresDialect() *dialect {
	var cache sync.Map // query → rebound query; the set of queries is fixed, so it stays small
	return &dialect{
		name:       "postgres",
		goose:      goose.DialectPostgres,
		forUpdate:  " FOR UPDATE",
		skipLocked: " FOR UPDATE SKIP LOCKED",
		rebind: func(q string) string {
			if r, ok := cache.Load(q); ok {
				return r.(string)
			}
			r := dollarPlaceholders(q)
			cache.Store(q, r)
			return r
		},
		isUnique: func(err error) bool {
			var e *pgconn.PgError
			return errors.As(err, &e) && e.Code == "23505" // unique_violation
		},
		unavailable: postgresUnavailable,
	}
}

// postgresUnavailable: the server could not be reached (refused, reset, timed out, the
// connection lost mid-query) or answered that it cannot serve now: connection exceptions
// (08…), shutting down or starting (57P01–57P03), out of disk, memory or connections (53…),
// an I/O error (58…), a read-only standby (25006, as during a failover).
func postgresUnavailable(err error) bool {
	if errors.Is(err, context.Canceled) {
		return false // the caller went away; the database may be fine
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return true // whatever the server said while connecting (not accepting connections, too many)
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch c := pe.Code; {
		case strings.HasPrefix(c, "08"), strings.HasPrefix(c, "53"), strings.HasPrefix(c, "58"),
			c == "57P01", c == "57P02", c == "57P03", c == "25006":
			return true
		}
		return false
	}
	var ne net.Error
	return errors.As(err, &ne) || pgconn.SafeToRetry(err) ||
		errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// dollarPlaceholders turns each ? into $1, $2, … (our queries hold no ? inside literals).
func dollarPlaceholders(q string) string {
	var b strings.Builder
	b.Grow(len(q) + 8)
	n := 0
	for i := 0; i < len(q); i++ {
		if q[i] == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(q[i])
	}
	return b.String()
}
