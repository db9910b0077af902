package sqlstore

import (
	"strings"
	"sync"
	"sync/atomic"
	"unicode"
)

// A SQLite database belongs to one process: the file is local, and this Store is its only
// writer. So the Store sees every write, and can keep what its hottest reads return — the user
// behind every request, and the run list's pages — until a write to their table. On PostgreSQL
// other replicas write too: there both are kept while the store hears of every replica's writes
// to them (writefeed.go), and a page of runs not kept is read with runRows.
//
// Every write statement bumps the generation of the table it writes, once it has taken effect:
// after the statement, or after the commit of its transaction. A cached answer carries the
// generation read before its query ran and counts only while that is still the current one, so
// an answer read before (or during) a write is never served after it.
//
// Runs are written all the time on a live server (queued, claimed, started, renewed, finished,
// recorded), each by one organization's activity, and the run list is read per organization. So
// a write to runs whose organization the statement knows (writeRuns: its argument, or the
// organization the statement returns) bumps that organization's generation alone, and a page of
// the list counts while neither the table's nor its organization's generation moved. Any other
// write to executions (a statement over many organizations' runs) bumps the table's, which ends
// every page.

// tableGens counts the writes of the tables whose reads are cached.
type tableGens struct {
	users, executions atomic.Uint64
	runsOf            sync.Map // organization ID → *atomic.Uint64: writes to its runs alone
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

// wroteRuns bumps the generation of orgID's runs.
func (g *tableGens) wroteRuns(orgID string) {
	if g == nil {
		return
	}
	c, ok := g.runsOf.Load(orgID)
	if !ok {
		c, _ = g.runsOf.LoadOrStore(orgID, new(atomic.Uint64))
	}
	c.(*atomic.Uint64).Add(1)
}

// pageGen is the generation of a page of orgID's run list: the sum of the table's and the
// organization's, which moves whenever either does (both only grow).
func (g *tableGens) pageGen(orgID string) uint64 {
	n := g.executions.Load()
	if c, ok := g.runsOf.Load(orgID); ok {
		n += c.(*atomic.Uint64).Load()
	}
	return n
}

// writtenTable is the table an INSERT or UPDATE writes, or a DELETE from a table nothing
// references (leafTables), "" for a SELECT, "*" for another DELETE or a statement of another
// kind.
func writtenTable(query string) string {
	// The first three words alone, without splitting the whole statement: this runs on every
	// write (each stored log chunk among them).
	verb, rest := nextWord(query)
	second, rest := nextWord(rest)
	third, _ := nextWord(rest)
	switch strings.ToUpper(verb) {
	case "":
		return "*"
	case "SELECT":
		return ""
	case "INSERT":
		if third != "" && strings.EqualFold(second, "INTO") {
			return tableName(third)
		}
	case "UPDATE":
		if second != "" {
			return tableName(second)
		}
	case "DELETE":
		if third != "" && strings.EqualFold(second, "FROM") && leafTables[tableName(third)] {
			return tableName(third)
		}
	}
	return "*"
}

// nextWord is s's first word (as strings.Fields splits) and what follows it.
func nextWord(s string) (word, rest string) {
	s = strings.TrimLeftFunc(s, unicode.IsSpace)
	end := strings.IndexFunc(s, unicode.IsSpace)
	if end < 0 {
		return s, ""
	}
	return s[:end], s[end:]
}

// leafTables are tables no foreign key references: a DELETE from one cascades nowhere. A run's
// log chunks are deleted by retention a run at a time; that must not empty the caches of users
// and run pages, which every request reads.
var leafTables = map[string]bool{"execution_logs": true, "test_results": true}

// tableName is the table of "name" or "name(columns…".
func tableName(s string) string {
	name, _, _ := strings.Cut(s, "(")
	return strings.ToLower(name)
}

// Bounds of each read cache: its entries, and their bytes (keys and values, as the cache's size
// function counts them). Keys are not only IDs: the run list's are its filters, which a client
// writes, and its values are pages of up to 100 runs; a bound on entries alone let 4096 of
// them hold gigabytes.
const (
	maxCachedReads = 4096
	maxCachedBytes = 16 << 20
	// cachedEntryBytes is what an entry costs beyond its key and value: its map slot and its
	// place in the eviction order.
	cachedEntryBytes = 128
)

// readCache keeps answers of one kind of read, each valid while its table's generation holds.
// Past either bound the oldest answers go first.
type readCache[V any] struct {
	gen      func(key string) uint64 // the generation an answer kept under key must still have
	size     func(V) int             // the bytes a value holds
	maxItems int
	maxBytes int

	mu    sync.RWMutex
	m     map[string]cachedRead[V]
	order []cacheSlot // the keys in the order they were put, oldest first; see evict
	bytes int         // of the entries in m
	seq   uint64
}

type cachedRead[V any] struct {
	gen  uint64
	v    V
	size int
	seq  uint64 // the put that made it, which its slot in order names
}

// cacheSlot is a place in the eviction order: the entry of key put by put number seq. A key
// put again (or dropped) leaves its earlier slot behind, which names a seq no entry has.
type cacheSlot struct {
	key string
	seq uint64
}

func newReadCache[V any](gen func(key string) uint64, size func(V) int) *readCache[V] {
	return &readCache[V]{gen: gen, size: size, maxItems: maxCachedReads, maxBytes: maxCachedBytes,
		m: make(map[string]cachedRead[V])}
}

// get returns the answer kept under key if no write to its table came after its read.
func (c *readCache[V]) get(key string) (V, bool) {
	c.mu.RLock()
	e, ok := c.m[key]
	c.mu.RUnlock()
	if !ok || e.gen != c.gen(key) {
		var zero V
		return zero, false
	}
	return e.v, true
}

// now is the generation to pass to put: read it before the query whose answer is kept.
func (c *readCache[V]) now(key string) uint64 { return c.gen(key) }

// put keeps v, read by a query that started at generation gen, as the newest entry; past the
// bounds the oldest entries make room. An answer that alone would take more than a quarter of
// the bytes is not kept.
func (c *readCache[V]) put(key string, gen uint64, v V) {
	if gen != c.gen(key) {
		return // a write came in between: v may already be stale
	}
	size := len(key) + c.size(v) + cachedEntryBytes
	if size > c.maxBytes/4 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.m[key]; ok {
		c.bytes -= old.size
	}
	c.seq++
	c.m[key] = cachedRead[V]{gen: gen, v: v, size: size, seq: c.seq}
	c.order = append(c.order, cacheSlot{key: key, seq: c.seq})
	c.bytes += size
	c.evict()
}

// evict drops the oldest entries until the cache is within its bounds, and sheds the slots of
// keys put again since once they outnumber the live ones.
func (c *readCache[V]) evict() {
	for len(c.order) > 0 && (len(c.m) > c.maxItems || c.bytes > c.maxBytes) {
		slot := c.order[0]
		c.order[0] = cacheSlot{} // the array outlives the slice's start: let go of the key
		c.order = c.order[1:]
		if e, ok := c.m[slot.key]; ok && e.seq == slot.seq {
			delete(c.m, slot.key)
			c.bytes -= e.size
		}
	}
	if len(c.order) > 2*len(c.m)+64 {
		live := make([]cacheSlot, 0, len(c.m))
		for _, slot := range c.order {
			if e, ok := c.m[slot.key]; ok && e.seq == slot.seq {
				live = append(live, slot)
			}
		}
		c.order = live
	}
}

// stats are the cache's entries and bytes, for tests.
func (c *readCache[V]) stats() (entries, bytes int) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.m), c.bytes
}
