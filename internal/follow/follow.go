// Package follow fans a run's live events out to the followers of that run inside one process:
// the SSE streams of GET /api/executions/{taskId}/events.
//
// The run plane publishes every execution-log and execution-updated event once (Publish never
// blocks it); a Broadcaster keeps one topic per followed run and copies each event into the
// bounded buffers of that run's followers. Many followers of one run cost one topic and no
// subscription of their own. A follower whose buffer is full (it stopped reading) is dropped:
// its Gone channel closes, the stream ends, and the client resumes from its last offset.
//
// With a Transport (Redis pub/sub, given by app), every event is also published once to the
// other replicas, and each replica subscribes once: a run executed on another replica reaches
// this replica's followers. Events of this replica are delivered locally at once; the ones that
// come back through the transport are recognised by their origin and skipped.
//
// A follower is registered under owners, names the caller chooses (its user, the credential it
// came with): End drops every follower of an owner at once, on this replica and, through the
// transport, on the others; EndLocal on this replica only.
package follow

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Event names, the Socket.IO events' names.
const (
	EventLog     = "execution-log"
	EventUpdated = "execution-updated"
)

// Event is one live event of a run.
type Event struct {
	Org  string `json:"o"`
	Task string `json:"t"`
	Name string `json:"n"` // EventLog or EventUpdated
	// For EventLog: the text (whole lines) and the byte offset at which it starts in the log.
	Log    string `json:"l,omitempty"`
	Offset int64  `json:"f,omitempty"`
	// For EventUpdated: the execution view as JSON, and whether the status is final.
	Data  json.RawMessage `json:"d,omitempty"`
	Final bool            `json:"x,omitempty"`
	// End, in a message between replicas only, names an owner whose followers End drops (the
	// message carries no run).
	End string `json:"e,omitempty"`
	// Origin is the replica that published the event (set by Publish).
	Origin string `json:"r"`
}

func (e *Event) size() int64 { return int64(len(e.Log)+len(e.Data)) + 128 }

// Transport carries events between replicas. Publish sends one message to every replica
// (this one included); Subscribe calls fn with each message until ctx ends, resubscribing
// after a failure.
type Transport interface {
	Publish(ctx context.Context, msg []byte) error
	Subscribe(ctx context.Context, fn func(msg []byte))
}

// Options configure a Broadcaster; zero values take the defaults in brackets.
type Options struct {
	// BufferEvents and BufferBytes bound each follower's queue [1024 events, 4 MiB].
	BufferEvents int
	BufferBytes  int64
	// Transport fans events out to other replicas; nil: this process only.
	Transport Transport
	// Origin names this replica in the transport's messages [a random ID].
	Origin string
	Log    *slog.Logger
}

const queueSize = 16384

// Broadcaster is the per-run fan-out. Build it with New, Close it on shutdown.
type Broadcaster struct {
	opts   Options
	log    *slog.Logger
	local  chan Event
	remote chan Event
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	topics map[topicKey]map[*Follower]struct{}
	owners map[string]map[*Follower]struct{} // the followers of each owner

	followers   atomic.Int64
	upstream    atomic.Int64
	dropped     atomic.Int64 // followers dropped for being slow
	lost        atomic.Int64 // events dropped because a queue was full
	ended       atomic.Int64 // followers dropped because their owner was ended
	maxQueued   atomic.Int64 // the most bytes any follower ever had queued
	delivered   atomic.Int64
	publishErrs atomic.Int64
}

type topicKey struct{ org, task string }

// Stats are the broadcaster's gauges and counters.
type Stats struct {
	Runs      int   // runs with at least one follower on this replica (one topic each)
	Followers int64 // followers on this replica
	Upstream  int64 // subscriptions to other replicas' events: 1 with a transport, else 0
	Dropped   int64 // followers dropped because their buffer was full
	Ended     int64 // followers dropped because an owner of theirs was ended (End)
	Lost      int64 // events not delivered because the broadcaster's queue was full
	MaxQueued int64 // the most bytes one follower ever had waiting
	Delivered int64 // events put in followers' buffers
}

// New starts a broadcaster.
func New(o Options) *Broadcaster {
	if o.BufferEvents <= 0 {
		o.BufferEvents = 1024
	}
	if o.BufferBytes <= 0 {
		o.BufferBytes = 4 << 20
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Origin == "" {
		o.Origin = randomID()
	}
	ctx, cancel := context.WithCancel(context.Background())
	b := &Broadcaster{opts: o, log: o.Log.With("component", "follow"), local: make(chan Event, queueSize),
		ctx: ctx, cancel: cancel, topics: map[topicKey]map[*Follower]struct{}{}, owners: map[string]map[*Follower]struct{}{}}
	b.wg.Add(1)
	go b.dispatch()
	if o.Transport != nil {
		b.remote = make(chan Event, queueSize)
		b.wg.Add(2)
		go b.publishRemote()
		go func() {
			defer b.wg.Done()
			b.upstream.Add(1)
			defer b.upstream.Add(-1)
			o.Transport.Subscribe(ctx, b.received)
		}()
	}
	return b
}

// Close stops the broadcaster and ends every follower.
func (b *Broadcaster) Close() {
	b.cancel()
	b.wg.Wait()
	b.mu.Lock()
	defer b.mu.Unlock()
	for k, fs := range b.topics {
		for f := range fs {
			f.drop()
		}
		delete(b.topics, k)
	}
	clear(b.owners)
}

// Publish hands an event of this replica to its followers and to the other replicas. It never
// blocks: with a full queue the event is lost (a follower fills such a gap from the stored log).
func (b *Broadcaster) Publish(e Event) {
	if b == nil {
		return
	}
	e.Origin = b.opts.Origin
	select {
	case b.local <- e:
	default:
		b.lost.Add(1)
	}
	if b.remote != nil {
		select {
		case b.remote <- e:
		default:
			b.lost.Add(1)
		}
	}
}

func (b *Broadcaster) publishRemote() {
	defer b.wg.Done()
	for {
		select {
		case <-b.ctx.Done():
			return
		case e := <-b.remote:
			msg, err := json.Marshal(e)
			if err != nil {
				continue
			}
			ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
			if err := b.opts.Transport.Publish(ctx, msg); err != nil && b.publishErrs.Add(1)%1000 == 1 {
				b.log.Warn("publishing a run event to other replicas failed", "err", err)
			}
			cancel()
		}
	}
}

// received takes a message of the transport: another replica's events go to local followers,
// its ends end local followers.
func (b *Broadcaster) received(msg []byte) {
	var e Event
	if err := json.Unmarshal(msg, &e); err != nil || e.Origin == b.opts.Origin {
		return
	}
	if e.End != "" {
		b.EndLocal(e.End)
		return
	}
	select {
	case b.local <- e:
	default:
		b.lost.Add(1)
	}
}

func (b *Broadcaster) dispatch() {
	defer b.wg.Done()
	for {
		select {
		case <-b.ctx.Done():
			return
		case e := <-b.local:
			b.deliver(e)
		}
	}
}

func (b *Broadcaster) deliver(e Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	fs := b.topics[topicKey{e.Org, e.Task}]
	if len(fs) == 0 {
		return
	}
	size := e.size()
	ev := &e // shared by the run's followers, never changed
	for f := range fs {
		q := f.queued.Add(size)
		if q > b.opts.BufferBytes {
			f.queued.Add(-size)
			b.remove(f)
			b.dropped.Add(1)
			continue
		}
		select {
		case f.ch <- ev:
			b.delivered.Add(1)
			for {
				m := b.maxQueued.Load()
				if q <= m || b.maxQueued.CompareAndSwap(m, q) {
					break
				}
			}
		default:
			f.queued.Add(-size)
			b.remove(f)
			b.dropped.Add(1)
		}
	}
}

// remove takes f out of its topic and its owners' sets and ends it; b.mu is held.
func (b *Broadcaster) remove(f *Follower) {
	fs := b.topics[f.key]
	if _, ok := fs[f]; !ok {
		return
	}
	delete(fs, f)
	if len(fs) == 0 {
		delete(b.topics, f.key)
	}
	for _, o := range f.owners {
		set := b.owners[o]
		delete(set, f)
		if len(set) == 0 {
			delete(b.owners, o)
		}
	}
	b.followers.Add(-1)
	f.drop()
}

// Follow registers a follower of a run under its owners. Close it when done.
func (b *Broadcaster) Follow(org, task string, owners ...string) *Follower {
	f := &Follower{b: b, key: topicKey{org, task}, owners: owners, ch: make(chan *Event, b.opts.BufferEvents), gone: make(chan struct{})}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ctx.Err() != nil {
		f.drop()
		return f
	}
	fs := b.topics[f.key]
	if fs == nil {
		fs = map[*Follower]struct{}{}
		b.topics[f.key] = fs
	}
	fs[f] = struct{}{}
	for _, o := range owners {
		set := b.owners[o]
		if set == nil {
			set = map[*Follower]struct{}{}
			b.owners[o] = set
		}
		set[f] = struct{}{}
	}
	b.followers.Add(1)
	return f
}

// End drops the followers of owner on every replica: here at once, on the others when the
// transport delivers the message (with none, here only).
func (b *Broadcaster) End(owner string) {
	if b == nil || owner == "" {
		return
	}
	b.EndLocal(owner)
	if b.opts.Transport == nil || b.ctx.Err() != nil {
		return
	}
	msg, _ := json.Marshal(Event{End: owner, Origin: b.opts.Origin})
	// Not through the events' queue, which drops when full: an end must not be lost to a burst
	// of log lines.
	go func() {
		ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
		defer cancel()
		if err := b.opts.Transport.Publish(ctx, msg); err != nil && ctx.Err() == nil {
			b.publishErrs.Add(1)
			b.log.Warn("publishing the end of a stream owner to other replicas failed", "err", err)
		}
	}()
}

// EndLocal drops the followers of owner on this replica.
func (b *Broadcaster) EndLocal(owner string) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for f := range b.owners[owner] {
		b.remove(f)
		b.ended.Add(1)
	}
}

// Stats reads the gauges and counters.
func (b *Broadcaster) Stats() Stats {
	b.mu.Lock()
	runs := len(b.topics)
	b.mu.Unlock()
	return Stats{Runs: runs, Followers: b.followers.Load(), Upstream: b.upstream.Load(), Dropped: b.dropped.Load(),
		Ended: b.ended.Load(), Lost: b.lost.Load(), MaxQueued: b.maxQueued.Load(), Delivered: b.delivered.Load()}
}

// Follower receives one run's events.
type Follower struct {
	b      *Broadcaster
	key    topicKey
	owners []string
	ch     chan *Event // a pointer a slot: an idle follower's buffer costs 8 KiB, not its events
	gone   chan struct{}
	once   sync.Once
	queued atomic.Int64
}

// Next returns the next event, or false once the follower was dropped (and its buffer read) or
// ctx ended.
func (f *Follower) Next(ctx context.Context) (Event, bool) {
	select {
	case e := <-f.ch:
		f.queued.Add(-e.size())
		return *e, true
	default:
	}
	select {
	case e := <-f.ch:
		f.queued.Add(-e.size())
		return *e, true
	case <-f.gone:
		return Event{}, false
	case <-ctx.Done():
		return Event{}, false
	}
}

// Events is the follower's queue, for a select; call Took with each event received from it.
// The events are shared with the run's other followers: never change one.
func (f *Follower) Events() <-chan *Event { return f.ch }

// Took accounts for an event received from Events.
func (f *Follower) Took(e *Event) { f.queued.Add(-e.size()) }

// Gone is closed when the follower was dropped (its buffer filled up, or an owner of its was
// ended) or the broadcaster closed.
func (f *Follower) Gone() <-chan struct{} { return f.gone }

// Queued is the bytes waiting in the follower's buffer.
func (f *Follower) Queued() int64 { return f.queued.Load() }

// Close unregisters the follower.
func (f *Follower) Close() {
	f.b.mu.Lock()
	f.b.remove(f)
	f.b.mu.Unlock()
	f.drop()
}

func (f *Follower) drop() { f.once.Do(func() { close(f.gone) }) }

func randomID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
