package kubernetes

import (
	"context"
	"log/slog"
	"sync"

	"k8s.io/klog/v2"
)

var klogOnce sync.Once

// quietClientGo sends client-go's own log (klog) to log at debug level, once per process.
// client-go reports there what it recovers from by itself: a watch that ended, an exec
// stream's readers finding the connection closed once the command exited. What matters to a
// run, Verdict logs itself.
func quietClientGo(log *slog.Logger) {
	klogOnce.Do(func() {
		klog.SetSlogLogger(slog.New(debugOnly{log.Handler()}).With("component", "client-go"))
	})
}

// debugOnly passes every record on at debug level.
type debugOnly struct{ h slog.Handler }

func (d debugOnly) Enabled(ctx context.Context, _ slog.Level) bool {
	return d.h.Enabled(ctx, slog.LevelDebug)
}

func (d debugOnly) Handle(ctx context.Context, r slog.Record) error {
	r.Level = slog.LevelDebug
	return d.h.Handle(ctx, r)
}

func (d debugOnly) WithAttrs(as []slog.Attr) slog.Handler { return debugOnly{d.h.WithAttrs(as)} }
func (d debugOnly) WithGroup(name string) slog.Handler    { return debugOnly{d.h.WithGroup(name)} }
