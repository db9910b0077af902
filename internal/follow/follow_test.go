package follow

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// Many followers of one run share one topic; each gets every event in order; other runs'
// events reach none of them.
func TestFanOut(t *testing.T) {
	b := New(Options{})
	defer b.Close()
	const n = 200
	fs := make([]*Follower, n)
	for i := range fs {
		fs[i] = b.Follow("org", "run")
	}
	other := b.Follow("org", "other")
	if st := b.Stats(); st.Runs != 2 || st.Followers != n+1 || st.Upstream != 0 {
		t.Fatalf("stats: %+v", st)
	}
	b.Publish(Event{Org: "org2", Task: "run", Name: EventLog, Log: "not ours\n"})
	for i := range 10 {
		b.Publish(Event{Org: "org", Task: "run", Name: EventLog, Log: "x\n", Offset: int64(2 * i)})
	}
	b.Publish(Event{Org: "org", Task: "run", Name: EventUpdated, Data: []byte(`{}`), Final: true})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, f := range fs {
		for i := range 10 {
			e, ok := f.Next(ctx)
			if !ok || e.Name != EventLog || e.Offset != int64(2*i) {
				t.Fatalf("event %d: %+v %v", i, e, ok)
			}
		}
		if e, ok := f.Next(ctx); !ok || !e.Final {
			t.Fatalf("final: %+v", e)
		}
		if f.Queued() != 0 {
			t.Fatalf("queued after reading all: %d", f.Queued())
		}
		f.Close()
	}
	select {
	case e := <-other.Events():
		t.Fatalf("another run's follower got %+v", e)
	default:
	}
	other.Close()
	if st := b.Stats(); st.Runs != 0 || st.Followers != 0 {
		t.Fatalf("stats after closing: %+v", st)
	}
}

// A follower that does not read is dropped once its bytes would pass the bound; its buffer
// never holds more, and the reading follower of the same run is untouched.
func TestSlowFollowerDropped(t *testing.T) {
	const bound = 64 << 10
	b := New(Options{BufferBytes: bound})
	defer b.Close()
	slow := b.Follow("o", "r")
	fast := b.Follow("o", "r")
	var got strings.Builder
	var read atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			e, ok := fast.Next(context.Background())
			if !ok {
				return
			}
			got.WriteString(e.Log)
			read.Add(int64(len(e.Log)))
			if e.Final {
				return
			}
		}
	}()
	line := strings.Repeat("y", 1023) + "\n"
	for i := range 1000 { // 1 MiB
		b.Publish(Event{Org: "o", Task: "r", Name: EventLog, Log: line, Offset: int64(i * len(line))})
		// Publishing is asynchronous: let the reader catch up to within half the bound.
		sent := int64((i + 1) * len(line))
		waitFor(t, "the fast follower", func() bool { return sent-read.Load() < bound/2 })
	}
	b.Publish(Event{Org: "o", Task: "r", Name: EventUpdated, Final: true})
	wg.Wait()
	select {
	case <-slow.Gone():
	default:
		t.Fatal("the slow follower was not dropped")
	}
	if q := slow.Queued(); q > bound {
		t.Fatalf("the slow follower holds %d bytes, bound %d", q, bound)
	}
	if st := b.Stats(); st.Dropped != 1 || st.MaxQueued > bound || st.Followers != 1 {
		t.Fatalf("stats: %+v", st)
	}
	if got.Len() != 1000*len(line) {
		t.Fatalf("the fast follower got %d bytes", got.Len())
	}
	fast.Close()
}

// loop is a Transport joining broadcasters in one process, as Redis joins replicas.
type loop struct {
	mu   sync.Mutex
	subs []func([]byte)
}

func (l *loop) Publish(_ context.Context, msg []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, fn := range l.subs {
		fn(msg)
	}
	return nil
}

func (l *loop) Subscribe(ctx context.Context, fn func([]byte)) {
	l.mu.Lock()
	l.subs = append(l.subs, fn)
	l.mu.Unlock()
	<-ctx.Done()
}

// Events published on one replica reach followers on another, once each, in order.
func TestAcrossReplicas(t *testing.T) {
	tr := &loop{}
	a := New(Options{Transport: tr, Origin: "a"})
	defer a.Close()
	b := New(Options{Transport: tr, Origin: "b"})
	defer b.Close()
	// Upstream counts a subscription as it starts; the loop's own count says it is in place.
	waitFor(t, "subscriptions", func() bool { tr.mu.Lock(); defer tr.mu.Unlock(); return len(tr.subs) == 2 })
	onA, onB := a.Follow("o", "r"), b.Follow("o", "r")
	for i := range 5 {
		a.Publish(Event{Org: "o", Task: "r", Name: EventLog, Log: "l\n", Offset: int64(2 * i)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, f := range []*Follower{onA, onB} {
		for i := range 5 {
			if e, ok := f.Next(ctx); !ok || e.Offset != int64(2*i) {
				t.Fatalf("event %d: %+v %v", i, e, ok)
			}
		}
	}
	time.Sleep(20 * time.Millisecond)
	if len(onA.Events()) != 0 || len(onB.Events()) != 0 {
		t.Fatal("an event arrived twice")
	}
}
