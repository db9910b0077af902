package main

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// fault is one injected failure: how it starts, how long it lasts, how it ends, and what the
// runs it hits should end as.
type fault struct {
	key, title string
	expect     string // printed with the runs
	lines      int    // numbered lines of the runs in flight, one every 100 ms
	inject     func(ctx context.Context) (string, error)
	hold       time.Duration
	restore    func(ctx context.Context) (string, error)
	// leaseLost: the runner cannot renew the runs in flight, so they end ERROR (runner lost),
	// which is correct: their outcome is not the service's to keep.
	leaseLost bool
	// want is the final status a run of the kind may end with, and whether an ERROR must say
	// why; nil: PASSED, whatever the kind.
	want func(kind string) (statuses []string, explained bool)
}

func faultByKey(c *chaos, key string) *fault {
	none := func(context.Context) (string, error) { return "", nil }
	switch key {
	case "postgres":
		return &fault{key: key, title: fmt.Sprintf("PostgreSQL stopped for %s", c.hold), lines: 60,
			expect: "every run PASSED (exit 0): the runs in flight finish during the outage and keep their outcome",
			inject: func(ctx context.Context) (string, error) { return "", c.pg.stop(ctx) },
			hold:   c.hold,
			restore: func(ctx context.Context) (string, error) {
				return "", c.pg.start(ctx)
			}}
	case "redis":
		return &fault{key: key, title: fmt.Sprintf("Redis stopped for %s", c.hold), lines: 60,
			expect: "every run PASSED (exit 0)",
			inject: func(context.Context) (string, error) { c.redis.stop(); return "", nil },
			hold:   c.hold,
			restore: func(ctx context.Context) (string, error) {
				return "", c.redis.start(ctx)
			}}
	case "engine":
		return &fault{key: key, title: "Docker engine restarted mid-run", lines: 150,
			expect: "the runs in flight end ERROR with a clear error (their containers were stopped); the others PASSED, or ERROR with a clear error when claimed while the engine was away",
			want: func(kind string) ([]string, bool) {
				if kind == "in flight" {
					return []string{"ERROR"}, true
				}
				return []string{"PASSED", "ERROR"}, true
			},
			inject: func(ctx context.Context) (string, error) {
				stopped, err := c.engine.restart(ctx)
				return fmt.Sprintf("the engine took %.1f s to stop", stopped.Seconds()), err
			},
			restore: none}
	case "freeze":
		d := c.lease / 2
		return &fault{key: key, title: fmt.Sprintf("runner frozen %s (heartbeat %s, lease %s)", d, c.lease/3, c.lease), lines: 60,
			expect: "every run PASSED (exit 0): the lease outlasts the freeze",
			inject: func(context.Context) (string, error) { return "", c.signalRunner(syscall.SIGSTOP) },
			hold:   d,
			restore: func(context.Context) (string, error) {
				return "", c.signalRunner(syscall.SIGCONT)
			}}
	case "lease":
		// Past the lease and one reaper round (5 s), so the reaper has ended the runs.
		d := c.lease + 8*time.Second
		return &fault{key: key, title: fmt.Sprintf("runner frozen %s, past its lease (%s)", d, c.lease), lines: 60,
			expect: "the runs in flight end ERROR (runner lost); the queued run PASSED after the thaw", leaseLost: true,
			want: func(kind string) ([]string, bool) {
				if kind == "in flight" {
					return []string{"ERROR"}, true
				}
				return []string{"PASSED"}, false
			},
			inject: func(context.Context) (string, error) { return "", c.signalRunner(syscall.SIGSTOP) },
			hold:   d,
			restore: func(context.Context) (string, error) {
				return "", c.signalRunner(syscall.SIGCONT)
			}}
	case "replica":
		victim := c.replicas[len(c.replicas)-1]
		return &fault{key: key, title: fmt.Sprintf("%s killed (SIGKILL) mid-request, restarted 5 s later", victim.name), lines: 60,
			expect: "every run PASSED (exit 0); only requests in flight on the killed replica fail (502 from the balancer)",
			inject: func(ctx context.Context) (string, error) {
				// Mid-request: once a request other than an event stream is in flight on it
				// (the runner's long-polls are, most of the time).
				be := c.lb.backendOf(victim.addr())
				var busy []string
				_ = waitFor(ctx, 10*time.Second, func() bool {
					busy = be.busy()
					for _, b := range busy {
						if !strings.HasSuffix(b, "/events") {
							return true
						}
					}
					return false
				})
				victim.p.stop(syscall.SIGKILL, 5*time.Second)
				sort.Strings(busy)
				return fmt.Sprintf("killed with %d requests in flight on it: %s", len(busy), strings.Join(busy, ", ")), nil
			},
			hold: 5 * time.Second,
			restore: func(ctx context.Context) (string, error) {
				return "", victim.start(ctx)
			}}
	case "disk":
		return &fault{key: key, title: "the data folder's disk full (64 MiB ext4 on a loop device)", lines: 60,
			expect: "every run PASSED (exit 0); the reports that do not fit are not kept",
			inject: func(context.Context) (string, error) {
				n, err := c.disk.fill()
				return fmt.Sprintf("filled with %d MiB; %d bytes free", n>>20, c.disk.free()), err
			},
			hold: 15 * time.Second,
			restore: func(context.Context) (string, error) {
				return "", c.disk.release()
			}}
	}
	panic("unknown fault " + key)
}

// runRec is one run the driver queued and what became of it.
type runRec struct {
	taskID string
	kind   string // in flight, queued, queued during, or probe
	lines  int    // numbered lines the image prints
	f      *follower
	final  *execution
	stored string
	logErr error
}

// pending is a run whose queueing was not answered.
type pending struct {
	taskID string
	lines  int
}

// result is what one fault did.
type result struct {
	f      *fault
	notes  []string
	broken []string // the fault could not be injected or ended: the checks would prove nothing
	// What the balancer answered before the fault (its runs queued), during it until the
	// service recovered, and after (the runs finishing).
	before, traffic, after *traffic
	runs                   []*runRec

	faultFor    time.Duration // from the injection to the end of the restore
	readyAfter  time.Duration // from the restore until /readyz is 200 on every replica; -1: not within the bound
	passAfter   time.Duration // from the restore until a new run passed; -1: not within the bound
	probe       string        // what became of that new run
	readyDuring []string      // per replica: how often /readyz answered 200 during the fault

	mu         sync.Mutex
	unanswered []pending      // runs queued without an answer: looked for once the fault is over
	invites    map[string]int // invitee → status answered (0: no answer)
	tickets    map[string]int // issue title → status answered

	checks []check
}

func (r *result) note(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notes = append(r.notes, fmt.Sprintf(format, args...))
}

func (r *result) addRun(rr *runRec) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.runs = append(r.runs, rr)
}

func (r *result) allRuns() []*runRec {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*runRec(nil), r.runs...)
}

// The bounds of what the driver waits for after a fault, beyond recoverWithin: long enough to
// measure a slow recovery, short enough to keep the whole script within its time.
const (
	measureFor = 45 * time.Second // readiness and the new run
	settleFor  = 60 * time.Second // every run of the fault final
)

func (c *chaos) scenario(ctx context.Context, f *fault) *result {
	r := &result{f: f, invites: map[string]int{}, tickets: map[string]int{}, readyAfter: -1, passAfter: -1}
	r.before = c.lb.setWindow()
	follows, stopFollows := context.WithCancel(ctx)
	defer stopFollows()

	// Three runs on the runner's two slots: two in flight, one queued, when the fault comes.
	var pre []*runRec
	// The queued one is of the usual length: it runs after the fault, so a long one only slows
	// the script down.
	for i := range 3 {
		lines := f.lines
		if i == 2 {
			lines = 60
		}
		if rr := c.queue(ctx, follows, r, lines, 100*time.Millisecond, ""); rr != nil {
			pre = append(pre, rr)
		}
	}
	err := waitFor(ctx, 40*time.Second, func() bool {
		n := 0
		for _, rr := range pre {
			text, _ := rr.f.snapshot()
			if strings.Count(text, "\nline ") >= 3 {
				n++
			}
		}
		return n >= 2
	})
	if err != nil {
		r.note("the runs did not get going before the fault: %v", err)
	}
	for _, rr := range pre {
		rr.kind = "queued"
		if e, err := c.admin.get(ctx, rr.taskID); err == nil && e.Status == "RUNNING" {
			rr.kind = "in flight"
		}
	}

	load, stopLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	c.load(load, follows, r, &wg)
	time.Sleep(500 * time.Millisecond) // clients are calling when the fault comes

	logf("%s: inject", f.key)
	r.traffic = c.lb.setWindow()
	t0 := time.Now()
	watch, stopWatch := context.WithCancel(ctx)
	readiness := c.watchReadiness(watch)
	if note, err := f.inject(ctx); err != nil {
		r.broken = append(r.broken, fmt.Sprintf("injecting the fault failed: %v", err))
	} else if note != "" {
		r.note("%s", note)
	}
	sleepCtx(ctx, f.hold)
	if note, err := f.restore(ctx); err != nil {
		r.broken = append(r.broken, fmt.Sprintf("ending the fault failed: %v", err))
	} else if note != "" {
		r.note("%s", note)
	}
	t1 := time.Now()
	stopWatch()
	r.readyDuring = <-readiness
	r.faultFor = t1.Sub(t0)
	logf("%s: restored after %.1f s; measuring the recovery", f.key, r.faultFor.Seconds())
	c.measureRecovery(ctx, r, t1)
	stopLoad()
	wg.Wait()
	r.after = c.lb.setWindow()

	c.settle(ctx, follows, r, t1)
	logf("%s: done (ready after %s, a new run passed after %s)", f.key, seconds(r.readyAfter), seconds(r.passAfter))
	return r
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

func seconds(d time.Duration) string {
	if d < 0 {
		return "never"
	}
	return fmt.Sprintf("%.1f s", d.Seconds())
}

// queue queues one run of the organization under attack and follows its event stream; nil
// when the service did not take it. With a kind, a refusal is a load outcome, not a problem.
func (c *chaos) queue(ctx, follows context.Context, r *result, lines int, interval time.Duration, kind string) *runRec {
	taskID := fmt.Sprintf("chaos-%s-%d", r.f.key, c.seq.Add(1))
	var err error
	if kind == "" {
		err = c.admin.callRetrying(ctx, 20*time.Second, http.MethodPost, "/api/executions", queueBody(c.image, taskID, lines, interval), nil)
	} else {
		err = c.admin.call(ctx, http.MethodPost, "/api/executions", queueBody(c.image, taskID, lines, interval), nil)
	}
	switch {
	case err == nil:
	case kind == "" && statusOf(err) == http.StatusConflict:
		// An earlier try was taken; its answer was lost.
	case kind == "":
		r.note("queueing %s failed: %v", taskID, err)
		return nil
	default:
		if s := statusOf(err); s == 0 || s == http.StatusBadGateway {
			// No answer from the service: the run may have been queued all the same.
			r.mu.Lock()
			r.unanswered = append(r.unanswered, pending{taskID, lines})
			r.mu.Unlock()
		}
		return nil
	}
	rr := &runRec{taskID: taskID, kind: kind, lines: lines, f: follow(follows, c.admin, taskID)}
	r.addRun(rr)
	return rr
}

// load is what clients do through the fault: read the run list, their user and a run (every
// 250 ms), queue a short run (every 5 s), invite someone (every 2 s: a mail), file a ticket
// from a finished run (every 4 s: an issue in Linear).
func (c *chaos) load(ctx, follows context.Context, r *result, wg *sync.WaitGroup) {
	hc := &http.Client{Timeout: 15 * time.Second}
	cl := &apiClient{base: c.admin.base, token: c.admin.token, hc: hc}
	every := func(d time.Duration, f func(i int)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(d)
			defer t.Stop()
			for i := 1; ; i++ {
				f(i)
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
			}
		}()
	}
	reads := []string{"/api/executions?limit=5", "/api/auth/me", "/api/executions/" + c.ticketRun}
	every(250*time.Millisecond, func(i int) { _ = cl.call(ctx, http.MethodGet, reads[i%len(reads)], nil, nil) })
	every(5*time.Second, func(int) { c.queue(ctx, follows, r, 10, 50*time.Millisecond, "queued during") })
	every(2*time.Second, func(i int) {
		email := fmt.Sprintf("invitee-%s-%d@chaos.test", r.f.key, i)
		err := cl.call(ctx, http.MethodPost, "/api/invitations", map[string]any{"email": email, "role": "developer"}, nil)
		r.mu.Lock()
		r.invites[email] = answered(err)
		r.mu.Unlock()
	})
	every(4*time.Second, func(i int) {
		title := fmt.Sprintf("chaos %s ticket %d", r.f.key, i)
		err := cl.call(ctx, http.MethodPost, "/api/linear/issues", map[string]any{"taskId": c.ticketRun, "title": title}, nil)
		r.mu.Lock()
		r.tickets[title] = answered(err)
		r.mu.Unlock()
	})
}

// answered is the status a call was answered with: 201 for success, 0 without an answer.
func answered(err error) int {
	if err == nil {
		return http.StatusCreated
	}
	return statusOf(err)
}

// watchReadiness asks every replica's /readyz every 500 ms until ctx ends, and then sends how
// often each answered 200: evidence that the fault was felt (or not).
func (c *chaos) watchReadiness(ctx context.Context) <-chan []string {
	out := make(chan []string, 1)
	go func() {
		hc := &http.Client{Timeout: 2 * time.Second}
		ok := make([]int, len(c.replicas))
		n := 0
		for ctx.Err() == nil {
			for i, rp := range c.replicas {
				if rp.ready(hc) {
					ok[i]++
				}
			}
			n++
			sleepCtx(ctx, 500*time.Millisecond)
		}
		var s []string
		for i, rp := range c.replicas {
			s = append(s, fmt.Sprintf("%s %d/%d", rp.name, ok[i], n))
		}
		out <- s
	}()
	return out
}

// measureRecovery times, from the restore, /readyz on every replica and a new run (of another
// organization, so it does not wait behind the fault's runs) passing, as a client that retries
// 502, 503 and connection errors sees it.
func (c *chaos) measureRecovery(ctx context.Context, r *result, t1 time.Time) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		hc := &http.Client{Timeout: 3 * time.Second}
		err := waitFor(ctx, measureFor, func() bool {
			for _, rp := range c.replicas {
				if !rp.ready(hc) {
					return false
				}
			}
			return true
		})
		if err == nil {
			r.readyAfter = time.Since(t1)
		}
	}()
	taskID := fmt.Sprintf("probe-%s-%d", r.f.key, c.seq.Add(1))
	err := c.probe.callRetrying(ctx, measureFor, http.MethodPost, "/api/executions", queueBody(c.image, taskID, 3, 10*time.Millisecond), nil)
	if statusOf(err) == http.StatusConflict {
		err = nil // an earlier try was taken, its answer lost
	}
	if err != nil {
		r.probe = "not queued: " + err.Error()
	} else if e, err := c.waitFinal(ctx, c.probe, taskID, measureFor-time.Since(t1)); err != nil {
		r.probe = err.Error()
	} else {
		r.probe = e.Status
		if e.Status != "PASSED" {
			r.probe += " (" + e.errText() + ")"
		} else {
			r.passAfter = time.Since(t1)
		}
	}
	wg.Wait()
}

// settle waits for every run of the fault to end, for its event stream to close, and reads
// its stored log.
func (c *chaos) settle(ctx, follows context.Context, r *result, t1 time.Time) {
	deadline := t1.Add(settleFor)
	// A run whose queueing had no answer counts if the service has it. Its event stream, opened
	// now, replays its log from the start.
	for _, p := range r.unanswered {
		if _, err := c.admin.getRetrying(ctx, p.taskID); err == nil {
			r.addRun(&runRec{taskID: p.taskID, kind: "queued, no answer", lines: p.lines, f: follow(follows, c.admin, p.taskID)})
		}
	}
	for _, rr := range r.allRuns() {
		for ctx.Err() == nil {
			e, err := c.admin.get(ctx, rr.taskID)
			if err == nil {
				rr.final = e
				if e.final() {
					break
				}
			}
			if time.Now().After(deadline) {
				break
			}
			time.Sleep(250 * time.Millisecond)
		}
	}
	streams := time.Now().Add(10 * time.Second)
	for _, rr := range r.allRuns() {
		select {
		case <-rr.f.done:
		case <-time.After(time.Until(streams)):
		}
		rr.stored, rr.logErr = c.admin.storedLog(ctx, rr.taskID)
	}
	time.Sleep(500 * time.Millisecond) // the engine's die events trail the runs' ends a little
}
