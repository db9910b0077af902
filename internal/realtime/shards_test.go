package realtime

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestShardLogsAreNotMerged: chunks of two shards of one run (the same taskId, offsets in
// different logs) are never merged into one event, and each event carries its shard.
func TestShardLogsAreNotMerged(t *testing.T) {
	h, srv := start(t, Options{})
	c := member(t, srv.URL, "websocket", "acme", "u1")
	var want [3]strings.Builder
	const n = 2000
	for i := range n {
		shard := 1 + i%2
		chunk := fmt.Sprintf("shard %d line %d\n", shard, i)
		h.Emit("acme", EventExecutionLog, ExecutionLog{TaskID: "run-1", Log: chunk, Offset: int64(want[shard].Len()), Shard: shard})
		want[shard].WriteString(chunk)
	}
	var got [3]strings.Builder
	for got[1].Len()+got[2].Len() < want[1].Len()+want[2].Len() {
		name, arg, _ := parseEvent(c.next(10 * time.Second))
		if name != EventExecutionLog {
			continue
		}
		l := decode[ExecutionLog](t, arg)
		if l.Shard != 1 && l.Shard != 2 || l.TaskID != "run-1" {
			t.Fatalf("event %+v", l)
		}
		if l.Offset != int64(got[l.Shard].Len()) || strings.Contains(l.Log, fmt.Sprintf("shard %d", 3-l.Shard)) {
			t.Fatalf("shard %d's event at %d (want %d) holds: %q", l.Shard, l.Offset, got[l.Shard].Len(), l.Log)
		}
		got[l.Shard].WriteString(l.Log)
	}
	for s := 1; s <= 2; s++ {
		if got[s].String() != want[s].String() {
			t.Fatalf("shard %d's text differs", s)
		}
	}
}
