package realtime

import (
	"encoding/json"
	"strings"

	"github.com/zishang520/socket.io/servers/socket/v3"
)

// maxMergedLog bounds the log text the dispatcher merges into one execution-log event.
const maxMergedLog = 64 << 10

type emission struct {
	room  socket.Room
	event string
	// Exactly one of the two is set: log for an ExecutionLog payload (kept as such so that
	// consecutive ones can be merged), json for anything else.
	log  *ExecutionLog
	json []byte
}

// Emit sends event with payload to the sockets in room org:<orgID>, on every replica when Redis
// is configured. It never waits for clients or Redis: the payload is encoded now (so the caller
// may reuse it) and queued for one dispatcher goroutine, which keeps events in Emit order.
//
// ExecutionLog payloads of event EventExecutionLog that pile up behind each other for the same
// run are merged into one event (a log payload is one or more whole lines), so a chatty run
// costs fewer events when the dispatcher falls behind. Only chunks ending in a newline are
// merged with what follows.
//
// If the queue is full the event is dropped and logged. Emit after Close does nothing.
func (h *Hub) Emit(orgID, event string, payload any) {
	if orgID == "" || event == "" || socket.SOCKET_RESERVED_EVENTS.Has(event) {
		h.log.Error("emit refused: empty organization or event, or reserved event name", "organization", orgID, "event", event)
		return
	}
	e := emission{room: orgRoom(orgID), event: event}
	switch l := payload.(type) {
	case ExecutionLog:
		if event == EventExecutionLog {
			e.log = &l
		}
	case *ExecutionLog:
		if event == EventExecutionLog && l != nil {
			c := *l
			e.log = &c
		}
	}
	if e.log == nil {
		b, err := json.Marshal(payload)
		if err != nil {
			h.log.Error("emit refused: payload is not JSON-encodable", "event", event, "error", err)
			return
		}
		e.json = b
	}
	select {
	case <-h.done:
		return
	default:
	}
	select {
	case h.queue <- e:
	default:
		h.dropped.Add(1)
		if n, ok := h.dropLog.allow(); ok {
			h.log.Warn("emit queue full, event dropped", "event", event, "organization", orgID, "suppressed", n)
		}
	}
}

func orgRoom(orgID string) socket.Room { return socket.Room("org:" + orgID) }

// dispatch delivers queued events one at a time, which is what preserves their order. After
// Close it delivers what was accepted before, then returns.
func (h *Hub) dispatch() {
	defer close(h.stopped)
	var carry *emission
	for {
		var e emission
		if carry != nil {
			e, carry = *carry, nil
		} else {
			select {
			case e = <-h.queue:
			case <-h.done:
				select {
				case e = <-h.queue:
				default:
					return
				}
			}
		}
		if e.log != nil {
			carry = h.mergeLogs(&e)
		}
		h.broadcast(e)
	}
}

// mergeLogs appends to e the log chunks of the same run already waiting in the queue. It
// returns the first queued emission it took but could not merge, if any.
func (h *Hub) mergeLogs(e *emission) *emission {
	if len(h.queue) == 0 || !strings.HasSuffix(e.log.Log, "\n") {
		return nil
	}
	var b strings.Builder
	b.WriteString(e.log.Log)
	defer func() {
		e.log = &ExecutionLog{TaskID: e.log.TaskID, Log: b.String(), Offset: e.log.Offset, Shard: e.log.Shard}
	}()
	for {
		select {
		case n := <-h.queue:
			if n.log == nil || n.room != e.room || n.event != e.event || n.log.TaskID != e.log.TaskID || n.log.Shard != e.log.Shard ||
				b.Len()+len(n.log.Log) > maxMergedLog {
				return &n
			}
			b.WriteString(n.log.Log)
			if !strings.HasSuffix(n.log.Log, "\n") {
				return nil
			}
		default:
			return nil
		}
	}
}

func (h *Hub) broadcast(e emission) {
	// The library gets plain JSON values (maps, slices, strings, float64), never the caller's
	// type: the Redis adapter carries payloads as msgpack, which ignores json tags, so a struct
	// would reach other replicas' clients with Go field names.
	var v any
	if e.log != nil {
		m := map[string]any{"taskId": e.log.TaskID, "log": e.log.Log, "offset": e.log.Offset}
		if e.log.Shard > 0 { // a shard's log: its offsets are that shard's
			m["shard"] = e.log.Shard
		}
		v = m
	} else if err := json.Unmarshal(e.json, &v); err != nil {
		h.log.Error("emit: re-decoding payload", "event", e.event, "error", err)
		return
	}
	// Broadcast puts the packet in each member's buffer and returns; socket writes happen on
	// the library's per-connection goroutines. With Redis it also PUBLISHes, synchronously.
	if err := h.io.To(e.room).Emit(e.event, v); err != nil {
		if n, ok := h.emitErrLog.allow(); ok {
			h.log.Error("emit", "event", e.event, "error", err, "suppressed", n)
		}
	}
}
