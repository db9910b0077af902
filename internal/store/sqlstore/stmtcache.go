package sqlstore

import (
	"context"
	"database/sql"
	"sync"
)

// maxCachedStmts bounds the statements kept: the store's queries are a fixed set, but a few
// are built from a filter (a status list of any length), which past the bound run unprepared.
const maxCachedStmts = 256

// stmtCache runs the read pool's queries through statements prepared once per connection
// (database/sql keeps one per connection behind each *sql.Stmt), so SQLite parses and plans a
// query once rather than on every call: on the list path that was a tenth of the CPU. pgx
// caches statements itself, so PostgreSQL needs none of this.
type stmtCache struct {
	db *sql.DB
	mu sync.RWMutex
	m  map[string]*sql.Stmt
}

var _ querier = (*stmtCache)(nil)

func newStmtCache(db *sql.DB) *stmtCache { return &stmtCache{db: db, m: map[string]*sql.Stmt{}} }

// stmt returns the prepared statement of query, preparing it on first use; nil when the cache
// is full or preparing failed (the caller then runs the query as it is, which reports the
// error if there is one).
func (c *stmtCache) stmt(ctx context.Context, query string) *sql.Stmt {
	c.mu.RLock()
	st, ok := c.m[query]
	full := len(c.m) >= maxCachedStmts
	c.mu.RUnlock()
	if ok || full {
		return st
	}
	st, err := c.db.PrepareContext(ctx, query)
	if err != nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if prev, ok := c.m[query]; ok { // prepared meanwhile by another caller
		st.Close()
		return prev
	}
	if c.m == nil || len(c.m) >= maxCachedStmts {
		st.Close()
		return nil
	}
	c.m[query] = st
	return st
}

func (c *stmtCache) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := c.stmt(ctx, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return c.db.QueryContext(ctx, query, args...)
}

func (c *stmtCache) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st := c.stmt(ctx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return c.db.QueryRowContext(ctx, query, args...)
}

func (c *stmtCache) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return c.db.ExecContext(ctx, query, args...)
}

// close closes the statements; after it the cache prepares nothing more.
func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range c.m {
		st.Close()
	}
	c.m = nil
}
