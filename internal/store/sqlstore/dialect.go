package sqlstore

import (
	"errors"
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
	}
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
