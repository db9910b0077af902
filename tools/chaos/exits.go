package main

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/client"

	"verdict/internal/run"
)

// exitWatch records, from the engine's own events, how each run's container exited: the
// ground truth of whether a suite ran to its end, whatever the service made of it. The stream
// is subscribed again a second after it breaks (the engine restart); a container that dies
// while the engine is down is not seen, which only ever makes the checks more lenient.
type exitWatch struct {
	cancel context.CancelFunc
	mu     sync.Mutex
	codes  map[string]int // taskId → the container's exit code
}

func watchExits(host, runnerID string) (*exitWatch, error) {
	opts := []client.Opt{client.FromEnv}
	if host != "" {
		opts = append(opts, client.WithHost(host))
	}
	cli, err := client.New(opts...)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &exitWatch{cancel: cancel, codes: map[string]int{}}
	f := make(client.Filters).Add("type", "container").Add("event", string(events.ActionDie)).
		Add("label", run.LabelRunner+"="+runnerID)
	go func() {
		defer cli.Close()
		for ctx.Err() == nil {
			res := cli.Events(ctx, client.EventsListOptions{Filters: f})
		stream:
			for {
				select {
				case m := <-res.Messages:
					code, err := strconv.Atoi(m.Actor.Attributes["exitCode"])
					if task := m.Actor.Attributes[run.LabelTask]; err == nil && task != "" {
						w.mu.Lock()
						w.codes[task] = code
						w.mu.Unlock()
					}
				case <-res.Err:
					break stream
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}()
	return w, nil
}

// code is the exit code of the run's container, if the engine reported it.
func (w *exitWatch) code(taskID string) (int, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	c, ok := w.codes[taskID]
	return c, ok
}

func (w *exitWatch) stop() { w.cancel() }
