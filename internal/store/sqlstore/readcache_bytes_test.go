package sqlstore

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"verdict/internal/domain"
	"verdict/internal/store"
)

// heapInUse is the live heap after collections (two: objects with finalizers take a second).
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestPageCacheHeldBytes lists runs with 200 distinct filters of ~900 KB each (what a client
// can put in a query string): the page cache keys on the filter, and must not keep 180 MB of
// them. The figure is the process's live heap, not the cache's own count.
func TestPageCacheHeldBytes(t *testing.T) {
	if testing.Short() {
		t.Skip("a bound on the live heap with 180 MB of filters, 4 to 11 s: the full tier (go test without -short) runs it")
	}
	s := testSQLite(t)
	ctx := context.Background()
	org := &domain.Organization{ID: domain.NewID(), Name: "Org", Slug: "org", Plan: domain.PlanEnterprise}
	if err := s.Organizations().Create(ctx, org); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	for i := range 30 {
		fin := now.Add(time.Duration(i)*time.Second + time.Second)
		queued := now.Add(time.Duration(i) * time.Second)
		e := &domain.Execution{ID: domain.NewID(), OrganizationID: org.ID, TaskID: fmt.Sprint("t", i), Image: "suite:1",
			Folder: "all", TimeoutSeconds: 60, Status: domain.ExecPassed, QueuedAt: queued, StartedAt: &queued, FinishedAt: &fin,
			Notes: []string{strings.Repeat("n", 2000)}}
		if err := s.Executions().Create(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	const filters, filterBytes = 200, 900 << 10
	before := heapInUse()
	for i := range filters {
		// A page of runs under a long filter (status lists are not checked by the store), and a
		// long filter matching nothing.
		statuses := make([]domain.ExecStatus, filterBytes/7)
		for j := range statuses {
			statuses[j] = domain.ExecPassed
		}
		statuses[0] = domain.ExecStatus(fmt.Sprint("PASSED", i))
		statuses = append(statuses, domain.ExecPassed)
		if _, _, err := s.Executions().List(ctx, org.ID, store.ExecutionFilter{Statuses: statuses[:min(len(statuses), 30000)], Limit: 100}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Executions().List(ctx, org.ID, store.ExecutionFilter{Image: fmt.Sprint(i, strings.Repeat("x", filterBytes)), Limit: 100}); err != nil {
			t.Fatal(err)
		}
	}
	held := int64(heapInUse()) - int64(before)
	t.Logf("%d distinct filters of ~%d KiB: the store's heap grew by %.1f MiB", 2*filters, filterBytes>>10, float64(held)/(1<<20))
	if held > 2*maxCachedBytes {
		t.Fatalf("the store holds %.1f MiB more after %d distinct filters, want at most %d MiB (the cache's bound with slack)",
			float64(held)/(1<<20), 2*filters, 2*maxCachedBytes>>20)
	}
	if entries, bytes := s.pages.stats(); bytes > maxCachedBytes || entries == 0 {
		t.Fatalf("the page cache counts %d entries of %d bytes, want some, within %d", entries, bytes, maxCachedBytes)
	}
	// The cache still serves: a page read twice is one entry.
	f := store.ExecutionFilter{Limit: 10}
	first, _, err := s.Executions().List(ctx, org.ID, f)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.pages.get(pageKey(org.ID, f, 10, 0)); !ok || len(first) != 10 {
		t.Fatalf("a small page was not kept (%d runs)", len(first))
	}
}

// TestReadCacheEviction: past either bound the oldest entries go, a key put again counts as
// new, and the eviction order does not grow with re-puts.
func TestReadCacheEviction(t *testing.T) {
	var gen atomic.Uint64
	c := newReadCache(func(string) uint64 { return gen.Load() }, func(v string) int { return len(v) })
	c.maxItems, c.maxBytes = 1000, 10*(cachedEntryBytes+100)
	val := strings.Repeat("v", 99) // with a one-letter key: 100 bytes and the entry's cost
	put := func(k string) { c.put(k, gen.Load(), val) }
	for _, k := range "abcdefghij" {
		put(string(k))
	}
	if n, b := c.stats(); n != 10 || b != c.maxBytes {
		t.Fatalf("%d entries of %d bytes, want 10 of %d", n, b, c.maxBytes)
	}
	put("a") // again: now the newest
	put("k") // evicts b, the oldest
	for k, want := range map[string]bool{"a": true, "b": false, "c": true, "k": true} {
		if _, ok := c.get(k); ok != want {
			t.Errorf("after re-putting a and putting k: %s kept %v, want %v", k, ok, want)
		}
	}
	// Large keys count too: one evicts as many entries as it takes (this one three).
	c.put(strings.Repeat("K", 400), gen.Load(), "")
	if n, b := c.stats(); n != 8 || b > c.maxBytes {
		t.Fatalf("after a large key: %d entries of %d bytes, want 8 within %d", n, b, c.maxBytes)
	}
	// An answer bigger than a quarter of the cache is not kept.
	c.put("huge", gen.Load(), strings.Repeat("x", c.maxBytes/4))
	if _, ok := c.get("huge"); ok {
		t.Fatal("an answer of a quarter of the cache was kept")
	}
	for i := range 10000 {
		put(string(rune('a' + i%5)))
	}
	if n, b := c.stats(); n > 10 || b > c.maxBytes || len(c.order) > 2*n+64 {
		t.Fatalf("after many re-puts: %d entries, %d bytes, %d slots in the eviction order", n, b, len(c.order))
	}
	// A bound on entries holds as well.
	c.maxItems = 3
	put("z")
	if n, _ := c.stats(); n != 3 {
		t.Fatalf("%d entries, want 3", n)
	}
	if _, ok := c.get("z"); !ok {
		t.Fatal("the newest entry was evicted")
	}
}
