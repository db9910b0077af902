package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"verdict/internal/domain"
)

// Runner claims PENDING runs from its Peer and carries them out on its Backend, Slots at a
// time. It owns nothing durable: a lost runner's runs end ERROR when their leases expire. What
// it has to report about a run (its container, log lines, reports, final status) it keeps
// while the control plane cannot be reached, and delivers when it is back (deliver).
//
// A run holds a slot from its claim until it is settled (Peer.Done returned): its container,
// the collection of its reports and the control plane's post-run chain (analysis) included.
// So a runner's runs that are RUNNING or ANALYZING are never more than its slots, and the
// runners list, the runs list and the organizations' maxConcurrentRuns (which counts RUNNING
// and ANALYZING runs) always agree.
type Runner struct {
	ID        string
	Peer      Peer // the control plane
	Backend   Backend
	Clock     domain.Clock
	Log       *slog.Logger
	Slots     int
	Resources Resources

	Lease     time.Duration // how long a claim lasts without a heartbeat [30s]
	Heartbeat time.Duration // how often the lease is renewed and cancels are looked for [Lease/3]
	Poll      time.Duration // how often to look for work when not woken [1s]
	// RetryWait is the first wait before a report or a renewal the control plane did not take is
	// tried again; it doubles up to 20 times itself [250ms, so up to 5s].
	RetryWait time.Duration
	// LogsGrace is how long the engine's log stream may go on after the container exited, the
	// control plane's time not counted, before it is given up [10s].
	LogsGrace time.Duration

	wakeOnce sync.Once
	wake     chan struct{}
	mu       sync.Mutex
	cancels  map[string]context.CancelCauseFunc // by execution ID, for in-process cancels
	bigApps  map[string]bool                    // images whose /app is too big to copy whole
}

func (r *Runner) init() {
	r.wakeOnce.Do(func() {
		r.wake = make(chan struct{}, 1)
		r.cancels = map[string]context.CancelCauseFunc{}
		if r.Lease <= 0 {
			r.Lease = 30 * time.Second
		}
		if r.Heartbeat <= 0 {
			r.Heartbeat = r.Lease / 3
		}
		if r.Poll <= 0 {
			r.Poll = time.Second
		}
		if r.RetryWait <= 0 {
			r.RetryWait = firstRetry
		}
		if r.LogsGrace <= 0 {
			r.LogsGrace = 10 * time.Second
		}
		if r.Slots <= 0 {
			r.Slots = 2
		}
		if r.Log == nil {
			r.Log = slog.Default()
		}
	})
}

// Notify wakes the runner at once: a run was queued or a slot freed.
func (r *Runner) Notify() {
	r.init()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// errCancelled and errShutdown are the causes a run's context ends with.
var (
	errCancelled = errors.New("cancelled")
	errShutdown  = errors.New("runner stopped")
)

// Cancel stops a run this runner holds, at once (the heartbeat would find it too).
func (r *Runner) Cancel(executionID string) {
	r.init()
	r.mu.Lock()
	c := r.cancels[executionID]
	r.mu.Unlock()
	if c != nil {
		c(errCancelled)
	}
}

// Run claims and carries out runs until ctx ends; then it stops its containers, settles their
// runs as ERROR, and returns.
func (r *Runner) Run(ctx context.Context) {
	r.init()
	slots := make(chan struct{}, r.Slots)
	var wg sync.WaitGroup
	defer wg.Wait()
	poll := time.NewTicker(r.Poll)
	defer poll.Stop()
	failing := false // claims fail: said once, not at every poll of an outage
	for {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		w, err := r.Peer.Next(ctx, r.Lease)
		switch {
		case err != nil && ctx.Err() == nil && !failing:
			r.Log.Error("claiming a run failed; trying again at every poll", "err", err)
			failing = true
		case err == nil && failing:
			r.Log.Info("claiming runs again")
			failing = false
		}
		if err != nil || w == nil {
			<-slots
			select {
			case <-r.wake:
			case <-poll.C:
			case <-ctx.Done():
				return
			}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			// The slot is given back once the run is settled; that wakes the claimer, and a
			// finished run frees its organization's place too.
			defer func() { <-slots; r.Notify() }()
			r.execute(ctx, w)
		}()
	}
}

// execute carries out one claimed run from start to its final status.
func (r *Runner) execute(parent context.Context, w *Work) {
	log := r.Log.With("org", w.OrganizationID, "task", w.TaskID)
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(parent))
	defer cancel(nil)
	stopOnShutdown := context.AfterFunc(parent, func() { cancel(errShutdown) })
	defer stopOnShutdown()
	r.mu.Lock()
	r.cancels[w.ID] = cancel
	r.mu.Unlock()
	defer func() { r.mu.Lock(); delete(r.cancels, w.ID); r.mu.Unlock() }()

	// What the runner has to report about the run (its container, log lines, reports, final
	// status) is kept and retried while the control plane cannot be reached, until the lease
	// is lost or the runner stops.
	lost, lose := context.WithCancelCause(context.WithoutCancel(parent))
	defer lose(nil)
	c := claim{lost: lost, stopping: parent.Done()}

	// The lease is renewed until Done returns, not only until the run's context ends: a
	// cancelled or timed-out run still stops its container and collects its reports, and the
	// reaper must not take it for lost meanwhile.
	alive, stopLease := context.WithCancel(context.WithoutCancel(parent))
	defer stopLease()
	go r.keepLease(alive, func(cause error) { cancel(cause); lose(cause) }, cancel, w, log)

	res := r.carryOut(ctx, c, w, log)
	res.FinishedAt = r.Clock()
	// The post-run chain (analysis, the final write) is the control plane's, within Done.
	// Every log line is stored by now.
	err := r.deliver(c, log, "settling the run", func() error { return r.Peer.Done(ctx, w.ID, res) })
	switch {
	case errors.Is(err, ErrLeaseLost):
		// The reaper ended it (its outcome here is dropped), or an earlier try whose answer
		// was lost settled it.
		log.Warn("the run is no longer this runner's", "status", res.Status, "error", res.Error)
		return
	case err != nil:
		log.Warn("settling the run failed; the lease reaper will end it", "err", err)
		return
	}
	log.Info("run finished", "status", res.Status, "error", res.Error)
}

// keepLease renews the lease until ctx ends, and cancels the run when a cancel was requested
// (renewing on while the cancelled run winds down), or loses it (lost, ErrLeaseLost) when the
// lease was lost. A renewal that failed is tried again sooner than the next heartbeat, backing
// off up to r.maxRetry(): the runner renews within moments of the control plane's return.
func (r *Runner) keepLease(ctx context.Context, lost, cancel context.CancelCauseFunc, w *Work, log *slog.Logger) {
	t := time.NewTimer(r.Heartbeat)
	defer t.Stop()
	wait, failed := r.RetryWait, 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		// A renewal that takes longer than the lease is of no use; the next one goes.
		ectx, ecancel := context.WithTimeout(ctx, r.Lease)
		stop, err := r.Peer.Extend(ectx, w.ID, r.Lease)
		ecancel()
		next := r.Heartbeat
		switch {
		case errors.Is(err, ErrLeaseLost):
			lost(ErrLeaseLost)
			return
		case err != nil:
			if failed == 0 && ctx.Err() == nil {
				log.Warn("lease renewal failed; trying again until the control plane answers", "err", err)
			}
			failed++
			next, wait = min(wait, r.Heartbeat), min(2*wait, r.maxRetry())
		default:
			if failed > 0 {
				log.Info("lease renewed again", "failed renewals", failed)
			}
			failed, wait = 0, r.RetryWait
			if stop {
				cancel(errCancelled) // a no-op after the first
			}
		}
		t.Reset(next)
	}
}

// carryOut runs the container and works out the result. It never returns without a status,
// nor before every log line it read is stored (or the run is no longer the runner's).
func (r *Runner) carryOut(ctx context.Context, c claim, w *Work, log *slog.Logger) Result {
	fail := func(format string, args ...any) Result {
		return Result{Status: domain.ExecError, Error: fmt.Sprintf(format, args...)}
	}
	if err := r.Backend.EnsureImage(ctx, w.Image); err != nil {
		if ended := endedBy(ctx); ended != nil {
			return *ended
		}
		if errors.Is(err, ErrImageNotFound) {
			return fail("image %q not found on %s and could not be pulled", w.Image, Describe(r.Backend))
		}
		// The engine's words can tell an open registry port from a closed one: they go to the
		// log, not to the run.
		log.Warn("preparing the image failed", "image", w.Image, "err", err)
		return fail("%s could not prepare image %q", Describe(r.Backend), w.Image)
	}
	timeout := time.Duration(w.TimeoutSeconds) * time.Second
	if timeout <= 0 {
		timeout = domain.DefaultTimeout
	}
	spec, err := r.spec(w, timeout)
	if err != nil {
		// Commands are checked when runs are queued; one queued before that check may not parse.
		return fail("the command could not be read: %v", err)
	}
	started := time.Now()
	id, err := r.Backend.Start(ctx, spec)
	if err != nil {
		if ended := endedBy(ctx); ended != nil {
			return *ended
		}
		return fail("the container could not start: %v", err)
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := r.Backend.Remove(rctx, id); err != nil {
			log.Warn("removing the container failed", "container", id, "err", err)
		}
	}()

	// The container is recorded (for the control plane to remove through this runner's backend,
	// should an in-process runner lose the run; a remote runner removes its own at its next
	// start), then its log followed; the container runs on meanwhile, and the engine keeps its log.
	logsDone := make(chan struct{})
	logCtx, stopLogs := context.WithCancel(ctx)
	defer stopLogs()
	d := &delivery{}
	go func() {
		defer close(logsDone)
		d.start()
		err := r.deliver(c, log, "recording the container", func() error {
			sctx, cancel := context.WithTimeout(c.lost, 10*time.Second)
			defer cancel()
			return r.Peer.Started(sctx, w.ID, id)
		})
		d.end()
		if err != nil && !errors.Is(err, ErrLeaseLost) {
			log.Warn("recording the container failed", "err", err)
		}
		r.streamLogs(logCtx, c, w, id, Masker(w.Env), d, log)
	}()

	wctx, wcancel := context.WithTimeout(ctx, timeout)
	exit, werr := r.Backend.Wait(wctx, id)
	wcancel()
	var ended *Result
	if werr != nil {
		sctx, scancel := context.WithTimeout(context.Background(), 20*time.Second)
		if err := r.Backend.Stop(sctx, id, 5*time.Second); err != nil {
			log.Warn("stopping the container failed", "err", err)
		}
		scancel()
		switch ended = endedBy(ctx); {
		case ended != nil:
		case errors.Is(werr, ErrDiskLimit):
			f := fail("%s", ErrDiskLimit)
			ended = &f
		case errors.Is(werr, ErrNotStarted):
			f := fail("%v", werr)
			ended = &f
		case errors.Is(werr, context.DeadlineExceeded):
			f := fail("timed out after %s", timeout)
			ended = &f
		default:
			f := fail("waiting for the container failed: %v", werr)
			ended = &f
		}
	}
	awaitLogs(logsDone, d, stopLogs, r.LogsGrace, log)

	// Reports are kept for every run that got as far as a container, even a cancelled one.
	reports := r.collectReports(c, w, id, started, log)
	if ended != nil {
		ended.Reports = reports
		return *ended
	}
	return Result{Status: domain.Verdict(exit, reports.Summary), ExitCode: &exit, Reports: reports}
}

// endedBy tells whether the run's context ended on purpose: cancel, shutdown, lost lease.
func endedBy(ctx context.Context) *Result {
	switch cause := context.Cause(ctx); {
	case cause == nil:
		return nil
	case errors.Is(cause, errCancelled):
		return &Result{Status: domain.ExecCancelled, Error: "cancelled by a user"}
	case errors.Is(cause, errShutdown):
		return &Result{Status: domain.ExecError, Error: "the runner stopped while the run was in progress"}
	case errors.Is(cause, ErrLeaseLost):
		return &Result{Status: domain.ExecError, Error: "the runner lost its lease on the run"}
	}
	return nil
}

// spec builds the container of a run: the container contract exactly (docs/architecture.md),
// plus the run's variables. `command`, when given, replaces the image's entrypoint; the folder
// stays its first argument.
func (r *Runner) spec(e *Work, timeout time.Duration) (Spec, error) {
	vars := make(map[string]string, len(e.Env.Vars)+4)
	for k, v := range e.Env.Vars {
		vars[k] = v
	}
	folder := e.Folder
	if folder == "" {
		folder = "all"
	}
	vars["BASE_URL"] = containerURL(e.BaseURL)
	vars["TASK_ID"] = e.TaskID
	vars["CI"] = "true"
	vars["FRAMEWORK_AGNOSTIC"] = "true"
	files := shardFiles(e.Shard, vars)
	entrypoint, err := ParseCommand(e.Command)
	if err != nil {
		return Spec{}, err
	}
	return Spec{
		Files:       files,
		Name:        "verdict-" + e.ID,
		Image:       e.Image,
		Entrypoint:  entrypoint,
		Args:        []string{folder},
		Env:         vars,
		Labels:      map[string]string{LabelManaged: "true", LabelRunner: r.ID, LabelOrg: e.OrganizationID, LabelTask: e.TaskID},
		Resources:   r.Resources,
		HostGateway: true,
		Timeout:     timeout,
		ReportDirs:  ReportFolders(reportFolders(e)),
	}, nil
}

// streamLogs follows the container's output to the control plane, which announces it live and
// stores it. A chunk the control plane cannot take is kept and sent again (the store knows it by
// its seq, so a chunk whose answer was lost is stored once) before the next one, the pump
// blocking meanwhile: what waits is one chunk and the lines read behind it (pumpLogs bounds
// them), the rest stays with the engine.
func (r *Runner) streamLogs(ctx context.Context, c claim, w *Work, id string, mask *strings.Replacer, d *delivery, log *slog.Logger) {
	// Opening counts as delivering: a backend that waits for its engine to answer again (it
	// restarted as the container exited) is not cut short by the grace after the exit.
	d.start()
	rc, err := r.Backend.Logs(ctx, id)
	d.end()
	if err != nil {
		log.Warn("following the container's logs failed", "err", err)
		return
	}
	defer rc.Close()
	seq, offset := 0, int64(0)
	pumpLogs(ctx, rc, mask, func(chunk string) {
		seq++
		d.start()
		defer d.end()
		err := r.deliver(c, log, "storing log lines", func() error {
			wctx, cancel := context.WithTimeout(c.lost, 10*time.Second)
			defer cancel()
			return r.Peer.Log(wctx, w.ID, seq, offset, chunk)
		})
		if err != nil && !errors.Is(err, ErrLeaseLost) {
			log.Warn("storing log lines failed; they are dropped", "err", err)
		}
		offset += int64(len(chunk))
	})
}

// collectReports copies the run's report folders out of its container and uploads them, as one
// archive, to the control plane, which keeps them within the organization's storage limit and
// reads the results they hold. One copy of /app brings every folder (each copy costs the engine
// a mount of the container); for an image whose /app holds much besides, the folders are copied
// one by one.
//
// An upload the control plane could not take is made again, the archive copied afresh from the
// container (which stays until the run's reports are in), for as long as the run is held.
func (r *Runner) collectReports(c claim, w *Work, id string, started time.Time, log *slog.Logger) Reports {
	folders := ReportFolders(reportFolders(w))
	whole := !r.bigApp(w.Image)
	var rep Reports
	err := r.deliver(c, log, "uploading the reports", func() error {
		ctx, cancel := context.WithTimeout(c.lost, 5*time.Minute)
		defer cancel()
		var broke bool
		var err error
		rep, broke, err = r.upload(ctx, w, id, folders, started, whole, log)
		if err != nil && broke && whole {
			// Nothing of a broken archive is kept: the folders are copied again, one by one.
			log.Warn("copying the report folders failed; copying them one by one", "err", err)
			whole = false
			rep, _, err = r.upload(ctx, w, id, folders, started, false, log)
		}
		if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			// Too big or too slow to upload in time: another try would fare no better.
			return fmt.Errorf("the reports took longer than 5 minutes to upload (%v)", err)
		}
		return err
	})
	if errors.Is(err, ErrLeaseLost) {
		return Reports{Notes: []string{"reports were not collected: the runner no longer held the run"}}
	}
	if err != nil {
		log.Warn("uploading the reports failed", "err", err)
		return Reports{Notes: []string{"reports were not collected: they could not be stored"}}
	}
	return rep
}

// reportFolders are the folders under /app the run lists, or the default ones.
func reportFolders(w *Work) []string {
	if len(w.ReportFolders) == 0 {
		return domain.DefaultReportFolders
	}
	return w.ReportFolders
}

// errUploadReturned ends the archive's pipe once Upload returned, so that writes after an
// early return (reports refused) fail at once instead of blocking.
var errUploadReturned = errors.New("reports already stored or refused")

// upload streams the archive of the report folders to Peer.Upload. broke: the copy out of the
// container failed midway (not Upload).
func (r *Runner) upload(ctx context.Context, w *Work, id string, folders []string, since time.Time, whole bool, log *slog.Logger) (rep Reports, broke bool, err error) {
	pr, pw := io.Pipe()
	produced := make(chan error, 1)
	go func() {
		err := r.archiveReports(ctx, id, w.Image, folders, since, whole, pw, log)
		pw.CloseWithError(err) // nil: the archive ends
		produced <- err
	}()
	rep, err = r.Peer.Upload(ctx, w.ID, pr)
	pr.CloseWithError(errUploadReturned)
	perr := <-produced
	if err != nil {
		if broke = perr != nil && !errors.Is(perr, errUploadReturned); broke {
			// The copy out of the container failed, not the control plane: however Upload
			// failed with it (a request whose body broke off), this is not an outage.
			err = fmt.Errorf("copying the reports out of the container: %w", perr)
		}
		return Reports{}, broke, err
	}
	return rep, false, nil
}

// maxBigApps bounds the images remembered by rememberBigApp; past it the memory starts over.
const maxBigApps = 1024

// bigApp tells whether an earlier run of image had an /app too big to copy whole.
func (r *Runner) bigApp(image string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bigApps[image]
}

func (r *Runner) rememberBigApp(image string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.bigApps == nil || len(r.bigApps) >= maxBigApps {
		r.bigApps = map[string]bool{}
	}
	r.bigApps[image] = true
}

// shardFiles sets a shard's variables in vars (SHARD_INDEX, SHARD_TOTAL, VERDICT_RETRY, the
// run's taskId as TASK_ID, VERDICT_TESTS_FILE and VERDICT_ALL_TESTS_FILE when it has lists)
// and returns the files of its lists, one test or test file per line; nil for a run of one
// container.
func shardFiles(s *ShardWork, vars map[string]string) map[string][]byte {
	if s == nil {
		return nil
	}
	vars["TASK_ID"] = s.RunTaskID
	vars["SHARD_INDEX"] = strconv.Itoa(s.Index)
	vars["SHARD_TOTAL"] = strconv.Itoa(s.Total)
	if s.Retry {
		vars["VERDICT_RETRY"] = "1"
	}
	if s.Tests == nil {
		return nil
	}
	lines := func(l []string) []byte {
		var b strings.Builder
		for _, t := range l {
			b.WriteString(t)
			b.WriteByte('\n')
		}
		return []byte(b.String())
	}
	files := map[string][]byte{TestsFile: lines(s.Tests)}
	vars["VERDICT_TESTS_FILE"] = TestsFile
	if s.AllTests != nil {
		files[AllTestsFile] = lines(s.AllTests)
		vars["VERDICT_ALL_TESTS_FILE"] = AllTestsFile
	}
	return files
}
