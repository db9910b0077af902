package sqlstore

import (
	"strings"
	"sync"
	"sync/atomic"
)

// A SQLite database belongs to one process: the file is local, and this Store is its only
// writer. So the Store sees every write, and can keep what its hottest reads return — the user
// behind every request, and the run list's pages — until a write to their table. On PostgreSQL
// other replicas write too, and nothing is kept this way (gens is nil).
//
// Every write statement bumps the generation of the table it writes, once it has taken effect:
// after the statement, or after the commit of its transaction. A cached answer carries the
// generation read before its query ran and counts only while that is still the current one, so
// an answer read before (or during) a write is never served after it.

// tableGens counts the writes of the tables whose reads are cached.
type tableGens struct {
	users, executions atomic.Uint64
}

// wrote bumps the generation of the table that query writes. A DELETE may cascade, and a
// statement this does not recognise may write anything: both bump every table.
func (g *tableGens) wrote(query string) {
	if g == nil {
		return
	}
	switch writtenTable(query) {
	case "":
	case "users":
		g.users.Add(1)
	case "executions":
		g.executions.Add(1)
	case "*":
		g.users.Add(1)
		g.executions.Add(1)
	}
}

// writtenTable is the table an INSERT or UPDATE writes, "" for a SELECT, "*" for a DELETE or a
// statement of another kind.
func writtenTable(query string) string {
	f := strings.Fields(query)
	if len(f) == 0 {
		return "*"
	}
	switch strings.ToUpper(f[0]) {
	case "SELECT":
		return ""
	case "INSERT":
		if len(f) > 2 && strings.EqualFold(f[1], "INTO") {
			return tableName(f[2])
		}
	case "UPDATE":
		if len(f) > 1 {
			return tableName(f[1])
		}
	}
	return "*"
}

// tableName is the table of "name" or "name(columns…".
func tableName(s string) string {
	name, _, _ := strings.Cut(s, "(")
	return strings.ToLower(name)
}

// maxCachedReads bounds each read cache.
const maxCachedReads = 4096

// readCache keeps answers of one kind of read, each valid while its table's generation holds.
type readCache[V any] struct {
	gen *atomic.Uint64
	mu  sync.RWMutex
	m   map[string]cachedRead[V]
}

type cachedRead[V any] struct {
	gen uint64
	v   V
}

func newReadCache[V any](gen *atomic.Uint64) *readCache[V] {
	return &readCache[V]{gen: gen, m: make(map[string]cachedRead[V])}
}

// get returns the answer kept under key if no write to its table came after its read.
func (c *readCache[V]) get(key string) (V, bool) {
	c.mu.RLock()
	e, ok := c.m[key]
	c.mu.RUnlock()
	if !ok || e.gen != c.gen.Load() {
		var zero V
		return zero, false
	}
	return e.v, true
}

// now is the generation to pass to put: read it before the query whose answer is kept.
func (c *readCache[V]) now() uint64 { return c.gen.Load() }

// put keeps v, read by a query that started at generation gen; past the bound an arbitrary
// entry makes room.
func (c *readCache[V]) put(key string, gen uint64, v V) {
	if gen != c.gen.Load() {
		return // a write came in between: v may already be stale
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[key]; !ok && len(c.m) >= maxCachedReads {
		for k := range c.m {
			delete(c.m, k)
			break
		}
	}
	c.m[key] = cachedRead[V]{gen: gen, v: v}
}
