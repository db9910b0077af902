package docker

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/client"

	"verdict/internal/run"
)

// exitWatch tells Wait of a run container's exit as soon as the engine reports it. Engine 20.10
// sends a container's die event before it cleans up after the container (network teardown,
// unmount), but answers a wait only once that cleanup is done, which on a busy engine takes
// 100-300 ms: the run's slot would be held that long for nothing. One events stream per Backend
// serves every Wait. An exit it misses (before the stream is up, or while it reconnects) still
// ends the wait, only later.
type exitWatch struct {
	mu      sync.Mutex
	waiters map[string]chan int // container ID → its exit code, once
	cancel  context.CancelFunc  // nil until the stream is started
}

// exitOf returns a channel that receives the container's exit code when the engine reports its
// exit, and the function that stops waiting for it. The first call starts the events stream.
func (b *Backend) exitOf(id string) (<-chan int, func()) {
	w := &b.exits
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cancel == nil {
		var ctx context.Context
		ctx, w.cancel = context.WithCancel(context.Background())
		w.waiters = map[string]chan int{}
		go b.followExits(ctx)
	}
	ch := make(chan int, 1)
	w.waiters[id] = ch
	return ch, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.waiters[id] == ch {
			delete(w.waiters, id)
		}
	}
}

// followExits reads the engine's die events of Verdict's containers until ctx ends,
// subscribing again a second after the stream breaks.
func (b *Backend) followExits(ctx context.Context) {
	f := make(client.Filters).Add("type", "container").Add("event", string(events.ActionDie)).
		Add("label", run.LabelManaged+"=true")
	for ctx.Err() == nil {
		res := b.cli.Events(ctx, client.EventsListOptions{Filters: f})
	stream:
		for {
			select {
			case m := <-res.Messages:
				b.exits.deliver(m)
			case <-res.Err:
				break stream
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func (w *exitWatch) deliver(m events.Message) {
	code, err := strconv.Atoi(m.Actor.Attributes["exitCode"])
	if err != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if ch := w.waiters[m.Actor.ID]; ch != nil {
		select {
		case ch <- code:
		default:
		}
	}
}

// stop ends the events stream.
func (w *exitWatch) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cancel != nil {
		w.cancel()
	}
}
