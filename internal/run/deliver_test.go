package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"verdict/internal/domain"
)

// scriptBackend runs one pretend container that prints lines, one every interval, and exits 0
// once they are all out. Its /app holds nothing.
type scriptBackend struct {
	lines    []string
	interval time.Duration
	exited   chan struct{}
	once     sync.Once
	// openAfter delays Logs, as an engine restarting as the container exits answers only
	// once it is back (the backend waits for it).
	openAfter time.Duration
}

func (b *scriptBackend) Name() string                                      { return "script" }
func (b *scriptBackend) Ping(context.Context) error                        { return nil }
func (b *scriptBackend) EnsureImage(context.Context, string) error         { return nil }
func (b *scriptBackend) Start(context.Context, Spec) (string, error)       { return "c1", nil }
func (b *scriptBackend) Stop(context.Context, string, time.Duration) error { return nil }
func (b *scriptBackend) Remove(context.Context, string) error              { return nil }
func (b *scriptBackend) List(context.Context, map[string]string) ([]Container, error) {
	return nil, nil
}
func (b *scriptBackend) ListDir(context.Context, string, string, bool) ([]string, error) {
	return nil, nil
}
func (b *scriptBackend) CopyOut(context.Context, string, string) (io.ReadCloser, error) {
	return nil, ErrPathNotFound
}

// Logs gives the container's whole output from its start, as the engine does: the lines come
// at their pace from the first call (the container runs meanwhile; its exit does not wait).
func (b *scriptBackend) Logs(ctx context.Context, _ string) (io.ReadCloser, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(b.openAfter):
	}
	pr, pw := io.Pipe()
	go func() {
		for _, l := range b.lines {
			if _, err := io.WriteString(pw, l+"\n"); err != nil {
				return
			}
			time.Sleep(b.interval)
		}
		pw.Close()
	}()
	return pr, nil
}

func (b *scriptBackend) Wait(ctx context.Context, _ string) (int, error) {
	select {
	case <-b.exited:
		return 0, nil
	case <-ctx.Done():
		return -1, ctx.Err()
	}
}

func (b *scriptBackend) exit() { b.once.Do(func() { close(b.exited) }) }

// flakyPeer is a control plane that fails the calls fail says (the method and its try, from 1)
// and stores the log as the store does: a chunk by its seq, once (a seq not above the last
// stored one is already stored).
type flakyPeer struct {
	fail func(method string, try int) error

	mu       sync.Mutex
	work     *Work
	tries    map[string]int
	stored   []string // chunks stored, in order
	lastSeq  int
	dupes    int       // chunks sent again after they were stored
	result   *Result   // what Done settled
	doneLogs int       // chunks stored when Done settled
	doneAt   time.Time // when Done was last tried
	settled  chan struct{}
}

// errAnswerLost: the call did what it asked (the chunk is stored) but its answer was lost.
var errAnswerLost = errors.New("answer lost")

func newFlakyPeer(fail func(string, int) error) *flakyPeer {
	return &flakyPeer{fail: fail, tries: map[string]int{}, settled: make(chan struct{}),
		work: &Work{ID: "run1", OrganizationID: "org", TaskID: "task", Image: "suite:pass", TimeoutSeconds: 60}}
}

// try counts a call and says how it fails.
func (p *flakyPeer) try(method string) error {
	p.mu.Lock()
	p.tries[method]++
	n := p.tries[method]
	p.mu.Unlock()
	if p.fail == nil {
		return nil
	}
	return p.fail(method, n)
}

func (p *flakyPeer) triesOf(method string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.tries[method]
}

func (p *flakyPeer) Next(context.Context, time.Duration) (*Work, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := p.work
	p.work = nil
	return w, nil
}

func (p *flakyPeer) Extend(context.Context, string, time.Duration) (bool, error) {
	return false, p.try("Extend")
}

func (p *flakyPeer) Started(context.Context, string, string) error { return p.try("Started") }

func (p *flakyPeer) Log(_ context.Context, _ string, seq int, _ int64, chunk string) error {
	err := p.try("Log")
	if err != nil && !errors.Is(err, errAnswerLost) {
		return err
	}
	p.mu.Lock()
	if seq > p.lastSeq {
		p.stored, p.lastSeq = append(p.stored, chunk), seq
	} else {
		p.dupes++
	}
	p.mu.Unlock()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return nil
}

func (p *flakyPeer) Upload(_ context.Context, _ string, archive io.Reader) (Reports, error) {
	if err := p.try("Upload"); err != nil {
		return Reports{}, err
	}
	_, err := io.Copy(io.Discard, archive)
	return Reports{}, err
}

func (p *flakyPeer) Done(_ context.Context, _ string, res Result) error {
	p.mu.Lock()
	p.doneAt = time.Now()
	p.mu.Unlock()
	if err := p.try("Done"); err != nil {
		return err
	}
	p.mu.Lock()
	p.result, p.doneLogs = &res, len(p.stored)
	p.mu.Unlock()
	close(p.settled)
	return nil
}

// startRunner runs a Runner over p and b until the test ends; stopped closes once it returned.
func startRunner(t *testing.T, p *flakyPeer, b *scriptBackend, options ...func(*Runner)) (stop func(), stopped chan struct{}) {
	t.Helper()
	r := &Runner{ID: "r", Peer: p, Backend: b, Clock: domain.SystemClock, Log: slog.New(slog.DiscardHandler),
		Slots: 1, Lease: 600 * time.Millisecond, Heartbeat: 100 * time.Millisecond, Poll: 20 * time.Millisecond}
	for _, o := range options {
		o(r)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped = make(chan struct{})
	go func() { r.Run(ctx); close(stopped) }()
	t.Cleanup(func() { b.exit(); cancel(); <-stopped })
	return cancel, stopped
}

func numbered(n int) []string {
	var lines []string
	for i := 1; i <= n; i++ {
		lines = append(lines, fmt.Sprintf("line %d", i))
	}
	return lines
}

// An outage of the control plane longer than the lease, and than the wait for the log stream
// after the container exited: every call fails with ErrUnavailable meanwhile (a chunk's answer
// is lost once after it was stored). The runner keeps everything and delivers it when the
// plane is back: each chunk stored once, in order, the whole output; the run settled PASSED
// with exit code 0 after its last chunk.
func TestRunnerDeliversThroughAnOutage(t *testing.T) {
	t.Parallel() // it waits out real timers; alone it would hold a test slot

	var mu sync.Mutex
	var down bool
	lostOnce := false
	p := newFlakyPeer(func(method string, try int) error {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case (method == "Started" || method == "Upload" || method == "Done") && try <= 2: // fail at first, outage or not
			return fmt.Errorf("%w: the database does not answer", ErrUnavailable)
		case method == "Log" && try == 3 && !lostOnce:
			lostOnce = true
			return errAnswerLost
		case down:
			return fmt.Errorf("%w: the database does not answer", ErrUnavailable)
		}
		return nil
	})
	b := &scriptBackend{lines: numbered(30), interval: 20 * time.Millisecond, exited: make(chan struct{})}
	startRunner(t, p, b, func(r *Runner) {
		r.RetryWait = 20 * time.Millisecond // retries, not their waits, are tested
		r.LogsGrace = 200 * time.Millisecond
	})

	// Some lines stored, then the plane goes away; the container prints on and exits.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		p.mu.Lock()
		n := len(p.stored)
		p.mu.Unlock()
		if n >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no log stored before the outage")
		}
	}
	mu.Lock()
	down = true
	mu.Unlock()
	time.Sleep(800 * time.Millisecond) // every line printed
	b.exit()
	time.Sleep(1200 * time.Millisecond) // past the lease, and past LogsGrace after the exit
	select {
	case <-p.settled:
		t.Fatal("the run was settled while the control plane was away")
	default:
	}
	mu.Lock()
	down = false
	mu.Unlock()

	select {
	case <-p.settled:
	case <-time.After(10 * time.Second):
		t.Fatalf("the run was not settled after the outage: tries %v", p.tries)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.result.Status != domain.ExecPassed || p.result.ExitCode == nil || *p.result.ExitCode != 0 {
		t.Fatalf("settled %s %q, exit code %v", p.result.Status, p.result.Error, p.result.ExitCode)
	}
	if got, want := strings.Join(p.stored, ""), strings.Join(b.lines, "\n")+"\n"; got != want {
		t.Fatalf("stored log:\n%s\nwant:\n%s", got, want)
	}
	if p.doneLogs != len(p.stored) {
		t.Fatalf("settled after %d of %d chunks", p.doneLogs, len(p.stored))
	}
	if p.dupes != 1 {
		t.Fatalf("%d chunks sent again after they were stored, want 1 (the one whose answer was lost)", p.dupes)
	}
	for _, m := range []string{"Started", "Log", "Upload", "Done", "Extend"} {
		if p.tries[m] < 2 {
			t.Errorf("%s tried %d times: it should have failed and been retried", m, p.tries[m])
		}
	}
	t.Logf("tries: %v", p.tries)
}

// Done fails N times and is tried again until it succeeds.
func TestRunnerRetriesDone(t *testing.T) {
	t.Parallel() // it waits out real timers; alone it would hold a test slot
	p := newFlakyPeer(func(method string, try int) error {
		if method == "Done" && try <= 3 {
			return fmt.Errorf("%w: the database does not answer", ErrUnavailable)
		}
		return nil
	})
	b := &scriptBackend{lines: numbered(3), exited: make(chan struct{})}
	b.exit()
	startRunner(t, p, b)
	select {
	case <-p.settled:
	case <-time.After(10 * time.Second):
		t.Fatalf("not settled: tries %v", p.tries)
	}
	if n := p.triesOf("Done"); n != 4 {
		t.Fatalf("Done tried %d times, want 4", n)
	}
	if got := strings.Join(p.stored, ""); got != "line 1\nline 2\nline 3\n" || p.result.Status != domain.ExecPassed {
		t.Fatalf("settled %s with log %q", p.result.Status, got)
	}
}

// ErrLeaseLost stops the retries at once: from Done itself, and from a renewal while Done is
// being retried (the reaper ended the run: the runner drops it and frees its place).
func TestRunnerStopsRetryingWhenTheLeaseIsLost(t *testing.T) {
	t.Parallel() // it waits out real timers; alone it would hold a test slot
	t.Run("Done", func(t *testing.T) {
		t.Parallel()
		p := newFlakyPeer(func(method string, try int) error {
			if method == "Done" {
				return ErrLeaseLost
			}
			return nil
		})
		b := &scriptBackend{lines: numbered(1), exited: make(chan struct{})}
		b.exit()
		startRunner(t, p, b)
		for deadline := time.Now().Add(5 * time.Second); p.triesOf("Done") == 0; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("Done never tried")
			}
		}
		time.Sleep(time.Second)
		if n := p.triesOf("Done"); n != 1 {
			t.Fatalf("Done tried %d times after ErrLeaseLost, want 1", n)
		}
	})
	t.Run("Extend", func(t *testing.T) {
		t.Parallel()
		var lost sync.Mutex
		lease := false
		p := newFlakyPeer(func(method string, try int) error {
			lost.Lock()
			defer lost.Unlock()
			switch {
			case method == "Done":
				if try == 2 {
					lease = true
				}
				return fmt.Errorf("%w: the database does not answer", ErrUnavailable)
			case method == "Extend" && lease:
				return ErrLeaseLost
			}
			return nil
		})
		b := &scriptBackend{lines: numbered(1), exited: make(chan struct{})}
		b.exit()
		startRunner(t, p, b)
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			lost.Lock()
			l := lease
			lost.Unlock()
			if l && p.triesOf("Extend") > 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("Done not retried")
			}
		}
		// The next renewal (100 ms) finds the lease lost; Done's next try was 500 ms away.
		time.Sleep(2 * time.Second)
		n := p.triesOf("Done")
		if n > 3 {
			t.Fatalf("Done tried %d times, and on after the lease was lost", n)
		}
		time.Sleep(time.Second)
		if m := p.triesOf("Done"); m != n {
			t.Fatalf("Done still tried after the lease was lost: %d, then %d", n, m)
		}
	})
}

// An error that is no outage (a refusal, a bug) is retried for one lease, then given up: the
// runner does not hold a run forever on it.
func TestRunnerGivesUpOnOtherErrorsAfterALease(t *testing.T) {
	t.Parallel() // it waits out real timers; alone it would hold a test slot
	p := newFlakyPeer(func(method string, try int) error {
		if method == "Done" {
			return errors.New("the server answered 500")
		}
		return nil
	})
	b := &scriptBackend{lines: numbered(1), exited: make(chan struct{})}
	b.exit()
	startRunner(t, p, b)
	time.Sleep(3 * time.Second) // five leases
	n := p.triesOf("Done")
	if n < 2 || n > 4 {
		t.Fatalf("Done tried %d times in five leases: want a few tries within the first lease, then none", n)
	}
	p.mu.Lock()
	since := time.Since(p.doneAt)
	p.mu.Unlock()
	if since < time.Second {
		t.Fatalf("Done still tried %s ago", since)
	}
}

// A container that exits as its engine restarts: the backend's Logs answers only once the
// engine is back, past the grace the runner gives a log stream after the exit. The wait for
// the log counts as delivering, so the run keeps every line of its log.
func TestRunnerWaitsForALogOpenedLate(t *testing.T) {
	t.Parallel()
	p := newFlakyPeer(func(string, int) error { return nil })
	b := &scriptBackend{lines: numbered(5), exited: make(chan struct{}), openAfter: 600 * time.Millisecond}
	b.exit() // it has exited before its log can be read
	startRunner(t, p, b, func(r *Runner) { r.LogsGrace = 100 * time.Millisecond })
	select {
	case <-p.settled:
	case <-time.After(10 * time.Second):
		t.Fatal("the run was not settled")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.result.Status != domain.ExecPassed {
		t.Fatalf("settled %s %q", p.result.Status, p.result.Error)
	}
	if got, want := strings.Join(p.stored, ""), strings.Join(b.lines, "\n")+"\n"; got != want {
		t.Fatalf("stored log: %q, want %q", got, want)
	}
}
