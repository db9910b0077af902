package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// shard is one container of a sharded run as its view shows it.
type shard struct {
	Index      int     `json:"index"`
	Retry      int     `json:"retry"`
	Status     string  `json:"status"`
	Runner     string  `json:"runner"`
	StartedAt  *string `json:"startedAt"`
	FinishedAt *string `json:"finishedAt"`
	ExitCode   *int    `json:"exitCode"`
	Error      *string `json:"error"`
}

// shardLogs follows the log of each container of a sharded run (?shard= on its event stream),
// writing its lines to standard output prefixed by "[shard i] ", until the container ends.
type shardLogs struct {
	r      *runner
	taskID string
	mu     sync.Mutex
	seen   map[int]bool
	wg     sync.WaitGroup
}

func newShardLogs(r *runner, taskID string) *shardLogs {
	return &shardLogs{r: r, taskID: taskID, seen: map[int]bool{}}
}

// start follows container index's log, once; a nil shardLogs follows nothing.
func (l *shardLogs) start(ctx context.Context, index int) {
	if l == nil || index < 1 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen[index] {
		return
	}
	l.seen[index] = true
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		l.follow(ctx, index)
	}()
}

// wait waits for the followers to write the rest of their logs, at most d.
func (l *shardLogs) wait(d time.Duration) {
	if l == nil {
		return
	}
	done := make(chan struct{})
	go func() { l.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
	}
}

// follow streams one container's log until its final status, resuming where a connection
// broke off.
func (l *shardLogs) follow(ctx context.Context, index int) {
	var since int64
	prefix := fmt.Sprintf("[shard %d] ", index)
	for attempt := 0; ctx.Err() == nil; attempt++ {
		res, err := l.r.c.follow(ctx, l.taskID, since, index)
		if err == nil {
			ended := false
			_ = readEvents(res.Body, func(ev event) bool {
				switch ev.Name {
				case "execution-log":
					var c struct {
						Log    string `json:"log"`
						Offset int64  `json:"offset"`
					}
					if json.Unmarshal([]byte(ev.Data), &c) != nil || c.Offset+int64(len(c.Log)) <= since {
						return true
					}
					text := c.Log[max(since-c.Offset, 0):]
					since = c.Offset + int64(len(c.Log))
					if l.r.write(prefixLines(prefix, text)) != nil {
						return false
					}
				case "execution-updated":
					var e struct {
						Status string `json:"status"`
					}
					if json.Unmarshal([]byte(ev.Data), &e) == nil && final(e.Status) {
						ended = true
						return false
					}
				}
				return true
			})
			res.Body.Close()
			if ended {
				return
			}
		}
		select {
		case <-time.After(backoff(attempt)):
		case <-ctx.Done():
		}
	}
}

// prefixLines puts prefix before every line of text.
func prefixLines(prefix, text string) string {
	var b strings.Builder
	for len(text) > 0 {
		line, rest, found := strings.Cut(text, "\n")
		b.WriteString(prefix)
		b.WriteString(line)
		if found {
			b.WriteByte('\n')
		}
		text = rest
	}
	return b.String()
}

// write writes text to standard output, whole: the run's and its shards' followers share it.
func (r *runner) write(text string) error {
	r.outMu.Lock()
	defer r.outMu.Unlock()
	_, err := io.WriteString(r.io.Stdout, text)
	return err
}

// printShards writes a sharded run's summary per container.
func (r *runner) printShards(shards []shard) {
	for _, s := range shards {
		what := fmt.Sprintf("shard %d", s.Index)
		if s.Retry > 0 {
			what = fmt.Sprintf("retry %d (container %d)", s.Retry, s.Index)
		}
		line := what + ": " + s.Status
		if s.ExitCode != nil {
			line += fmt.Sprintf(", exit %d", *s.ExitCode)
		}
		if s.StartedAt != nil && s.FinishedAt != nil {
			a, err1 := time.Parse(time.RFC3339Nano, *s.StartedAt)
			b, err2 := time.Parse(time.RFC3339Nano, *s.FinishedAt)
			if err1 == nil && err2 == nil {
				line += ", " + b.Sub(a).Round(100*time.Millisecond).String()
			}
		}
		if s.Runner != "" {
			line += " on " + s.Runner
		}
		if s.Error != nil && *s.Error != "" {
			line += ": " + *s.Error
		}
		r.say("%s", line)
	}
}
