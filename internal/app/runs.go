package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"verdict/internal/api"
	"verdict/internal/domain"
	"verdict/internal/executions"
	"verdict/internal/follow"
	"verdict/internal/identity"
	"verdict/internal/peerhttp"
	"verdict/internal/realtime"

	"github.com/redis/go-redis/v9"
)

// hubEvents sends the run plane's events to the organization's Socket.IO room, with the views
// the REST API answers: execution-updated carries api.Execution (report links included). Each
// event also goes once to the SSE followers' broadcaster (follow), which fans it out to this
// replica's followers of the run and, with Redis, to the other replicas'.
type hubEvents struct {
	hub    *realtime.Hub
	follow *follow.Broadcaster
	clock  domain.Clock
	views  api.Views
}

func (h hubEvents) ExecutionUpdated(e *domain.Execution) {
	// The event's view carries the run's first tests only: it goes to every member.
	view := h.views.ExecutionEvent(e, h.clock())
	if !e.IsShard() { // a shard's own record goes only to the followers of its log (?shard=)
		h.hub.Emit(e.OrganizationID, realtime.EventExecutionUpdated, view)
	}
	data, err := api.MarshalView(view)
	if err != nil {
		return
	}
	h.follow.Publish(follow.Event{Org: e.OrganizationID, Task: e.TaskID, Name: follow.EventUpdated, Data: data,
		Final: e.Status.Final()})
}

// ExecutionLog emits a chunk of a run's log. A shard's chunk (taskID is the shard's own,
// domain.ShardTaskID) goes to the room as its run's, with the shard, and to the shard's own
// followers (its offsets are its own log's).
func (h hubEvents) ExecutionLog(orgID, taskID, chunk string, offset int64) {
	ev := realtime.ExecutionLog{TaskID: taskID, Log: chunk, Offset: offset}
	if run, shard, ok := domain.ParseShardTaskID(taskID); ok {
		ev.TaskID, ev.Shard = run, shard
	}
	h.hub.Emit(orgID, realtime.EventExecutionLog, ev)
	h.follow.Publish(follow.Event{Org: orgID, Task: taskID, Name: follow.EventLog, Log: chunk, Offset: offset})
}

// redisFollow carries the followers' events between replicas: one Redis channel, published
// to once per event and subscribed to once per replica.
type redisFollow struct {
	client  *redis.Client
	channel string
}

func (t redisFollow) Publish(ctx context.Context, msg []byte) error {
	return t.client.Publish(ctx, t.channel, msg).Err()
}

func (t redisFollow) Subscribe(ctx context.Context, fn func(msg []byte)) {
	ps := t.client.Subscribe(ctx, t.channel)
	defer ps.Close()
	// go-redis resubscribes after a lost connection; the channel closes with ps.
	ch := ps.Channel(redis.WithChannelSize(4096))
	for {
		select {
		case <-ctx.Done():
			return
		case m, ok := <-ch:
			if !ok {
				return
			}
			fn([]byte(m.Payload))
		}
	}
}

// redisRunners is the runners' registry shared by the replicas: one Redis hash, a field per
// runner name holding its last record, so any replica lists every runner and refuses a second
// process under a name in use whichever replica each calls.
type redisRunners struct {
	client *redis.Client
	key    string
}

func (r redisRunners) Heard(ctx context.Context, rn peerhttp.Runner, instance string, heldSince time.Time) (bool, error) {
	raw, err := r.client.HGet(ctx, r.key, rn.Name).Bytes()
	if err != nil && !errors.Is(err, redis.Nil) {
		return false, err
	}
	var old peerhttp.RunnerRecord
	if err == nil && json.Unmarshal(raw, &old) == nil && old.Takes(instance, heldSince) {
		return true, nil
	}
	rec, err := json.Marshal(peerhttp.RunnerRecord{Runner: rn, Instance: instance})
	if err != nil {
		return false, err
	}
	return false, r.client.HSet(ctx, r.key, rn.Name, rec).Err()
}

func (r redisRunners) List(ctx context.Context, since time.Time) ([]peerhttp.Runner, error) {
	all, err := r.client.HGetAll(ctx, r.key).Result()
	if err != nil {
		return nil, err
	}
	out := []peerhttp.Runner{}
	var stale []string
	for name, raw := range all {
		var rec peerhttp.RunnerRecord
		if json.Unmarshal([]byte(raw), &rec) != nil || rec.Runner.LastSeenAt.Before(since) {
			stale = append(stale, name)
			continue
		}
		out = append(out, rec.Runner)
	}
	if len(stale) > 0 {
		_ = r.client.HDel(ctx, r.key, stale...).Err() // gone runners; a new call adds one back
	}
	peerhttp.SortRunners(out)
	return out, nil
}

// runnerID names the embedded runner of this host and data folder, stable across restarts so
// that the runs of an earlier life of the process can be recognised and settled.
func runnerID(dataDir string) string {
	host, _ := os.Hostname()
	return fmt.Sprintf("embedded:%s:%s", host, dataDir)
}

// runnerList is the API's list of remote runners: those that called the runner routes in the
// last minute (of every replica, with Redis). The runners serve every organization, so an
// organization's admin sees each runner's busy count as its own runs on it (read from the
// runs, not from the runner's report) and its last call to the minute (how often a runner
// calls follows the runs it carries); slots, the runner's configured size, depend on no
// tenant. The operator, with the runner secret, sees the runners as they report themselves.
type runnerList struct {
	srv  *peerhttp.Server
	runs *executions.Service // the admin's view of the runners' busy counts
}

func (l runnerList) ListRunners(ctx context.Context, p *identity.Principal) ([]api.RunnerInfo, error) {
	var seen []peerhttp.Runner
	mine, err := l.runs.RunnersBusy(ctx, p, func(ctx context.Context) (int, error) {
		var err error
		seen, err = l.srv.Runners(ctx)
		return len(seen), err
	})
	if err != nil || len(seen) == 0 {
		return nil, err
	}
	out := make([]api.RunnerInfo, len(seen))
	for i, r := range seen {
		out[i] = api.RunnerInfo{ID: r.ID, Name: r.Name, Backend: r.Backend, Slots: r.Slots, Busy: mine[r.ID],
			LastSeenAt: r.LastSeenAt.Truncate(time.Minute)}
	}
	return out, nil
}

func (l runnerList) Operator(token string) bool { return l.srv.Authentic(token) }

func (l runnerList) ListAllRunners(ctx context.Context) ([]api.RunnerInfo, error) {
	seen, err := l.srv.Runners(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]api.RunnerInfo, len(seen))
	for i, r := range seen {
		out[i] = api.RunnerInfo{ID: r.ID, Name: r.Name, Backend: r.Backend, Slots: r.Slots, Busy: r.Busy, LastSeenAt: r.LastSeenAt}
	}
	return out, nil
}
