package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"strings"
	"sync"
	"time"
	"verdict/internal/billing"

	"verdict/internal/crypto/secretbox"
	"verdict/internal/domain"
	"verdict/internal/report"
	"verdict/internal/store"
)

// Events is where the runner announces what happens; the realtime hub implements it.
type Events interface {
	ExecutionUpdated(e *domain.Execution)
	// ExecutionLog announces chunk (whole lines), which starts offset bytes into the run's log.
	ExecutionLog(orgID, taskID, chunk string, offset int64)
}

// Metrics records runs as they start and reach their final status (metrics.Metrics).
type Metrics interface {
	RunStarted(e *domain.Execution)
	RunFinished(e *domain.Execution)
}

// Runner claims PENDING executions and carries them out on its Backend, Slots at a time.
// It owns nothing durable: a lost runner's runs end ERROR when their leases expire.
//
// A run holds a slot while its container runs. Once the container has exited, its reports are
// collected, the container removed and the final status written by one of Collectors, and the
// slot goes to the next run at once. The run stays RUNNING (its lease renewed, cancels heard)
// until that final write, so it still counts against its organization's maxConcurrentRuns,
// which the store counts from RUNNING runs: the limit stays exact while the runner's own
// capacity is Slots containers plus Collectors collections.
type Runner struct {
	ID        string
	Store     store.Store
	Backend   Backend
	Reports   report.Store
	ReportDir func(orgID, taskID string) string // local folder of a run's reports, for parsing
	Box       *secretbox.Box
	Events    Events
	Clock     domain.Clock
	Log       *slog.Logger
	Slots     int
	// Collectors bounds the runs collecting reports at once [Slots]; a run whose container
	// exited waits for one while keeping its slot, so collections cannot pile up.
	Collectors int
	Resources  Resources
	Alerts     *billing.Alerts // storage alerts as reports are kept or refused; nil: none
	Analyst    Analyst         // explains failed runs (see settle); nil: none
	Metrics    Metrics         // records starts and ends; nil: none

	Lease     time.Duration // how long a claim lasts without a heartbeat [30s]
	Heartbeat time.Duration // how often the lease is renewed and cancels are looked for [Lease/3]
	Poll      time.Duration // how often to look for work when not woken [1s]

	// ReportFS presents a run's reports for parsing where they are not in a local folder
	// (report.S3Store.FS); used instead of ReportDir when set.
	ReportFS func(ctx context.Context, orgID, taskID string) (fs.FS, error)

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
		if r.Slots <= 0 {
			r.Slots = 2
		}
		if r.Collectors <= 0 {
			r.Collectors = r.Slots
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
	errLeaseLost = errors.New("lease lost")
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

func limitFor(p domain.Plan) int { return domain.LimitsFor(p).MaxConcurrentRuns }

// Run claims and carries out runs until ctx ends; then it stops its containers, settles their
// runs as ERROR, and returns.
func (r *Runner) Run(ctx context.Context) {
	r.init()
	slots := make(chan struct{}, r.Slots)
	collectors := make(chan struct{}, r.Collectors)
	var wg sync.WaitGroup
	defer wg.Wait()
	poll := time.NewTicker(r.Poll)
	defer poll.Stop()
	for {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		now := r.Clock()
		e, err := r.Store.Executions().Claim(ctx, r.ID, now, now.Add(r.Lease), limitFor)
		if err != nil || e == nil {
			<-slots
			if err != nil && ctx.Err() == nil {
				r.Log.Error("claiming a run failed", "err", err)
			}
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
			l := &lane{slots: slots, collectors: collectors, notify: r.Notify, slot: true}
			defer l.release()
			r.execute(ctx, e, l)
		}()
	}
}

// lane is one run's hold on the runner: its slot until the container exits, then a collector
// until the final status is written. Each release wakes the claimer: a freed slot can take a
// run, and a finished run frees its organization's place.
type lane struct {
	slots, collectors chan struct{}
	notify            func()
	slot, collector   bool
}

// exited trades the slot for a collector, waiting for one with the slot still held.
func (l *lane) exited() {
	l.collectors <- struct{}{}
	l.collector = true
	l.slot = false
	<-l.slots
	l.notify()
}

// collected gives the collector back once the reports are in: what follows (analysis) may
// take long and must not keep other runs' reports waiting.
func (l *lane) collected() {
	if l.collector {
		<-l.collectors
		l.collector = false
		l.notify()
	}
}

func (l *lane) release() {
	if l.slot {
		<-l.slots
	}
	if l.collector {
		<-l.collectors
	}
	l.notify()
}

// execute carries out one claimed run from start to its final status, holding l's slot until
// its container is no longer running and a collector until its reports are in.
func (r *Runner) execute(parent context.Context, e *domain.Execution, l *lane) {
	log := r.Log.With("org", e.OrganizationID, "task", e.TaskID)
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(parent))
	defer cancel(nil)
	stopOnShutdown := context.AfterFunc(parent, func() { cancel(errShutdown) })
	defer stopOnShutdown()
	r.mu.Lock()
	r.cancels[e.ID] = cancel
	r.mu.Unlock()
	defer func() { r.mu.Lock(); delete(r.cancels, e.ID); r.mu.Unlock() }()

	r.Events.ExecutionUpdated(e)
	if r.Metrics != nil {
		r.Metrics.RunStarted(e)
	}
	// The lease is renewed until the final write, not only until the run's context ends: a
	// cancelled or timed-out run still stops its container and collects its reports, and the
	// reaper must not take it for lost meanwhile.
	alive, stopLease := context.WithCancel(context.WithoutCancel(parent))
	defer stopLease()
	go r.keepLease(alive, cancel, e)

	f := r.carryOut(ctx, e, log, l.exited)
	f.FinishedAt = r.Clock()
	l.collected()
	r.settle(ctx, e, f, log)
}

// countStorage adds u.Used report bytes to the organization's storage (none when reports were
// refused) and raises the storage alerts the new figure, or the refusal, calls for.
func (r *Runner) countStorage(ctx context.Context, orgID string, u billing.Usage) error {
	return r.Store.InTx(ctx, func(tx store.Store) error {
		if u.Used > 0 {
			if err := tx.Organizations().AddStorageUsed(ctx, orgID, u.Used); err != nil {
				return err
			}
		}
		org, err := tx.Organizations().Get(ctx, orgID)
		if err != nil {
			return err
		}
		u.Resource, u.Before = billing.ResourceStorage, org.StorageUsedBytes-u.Used
		u.Used, u.Limit = org.StorageUsedBytes, org.Limits().MaxStorageBytes
		return r.Alerts.Check(ctx, tx, org, u)
	})
}

// keepLease renews the lease until ctx ends, and cancels the run when a cancel was requested
// (renewing on while the cancelled run winds down) or the lease was lost.
func (r *Runner) keepLease(ctx context.Context, cancel context.CancelCauseFunc, e *domain.Execution) {
	t := time.NewTicker(r.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		stop, err := r.Store.Executions().Heartbeat(ctx, e.ID, r.ID, r.Clock().Add(r.Lease))
		switch {
		case errors.Is(err, store.ErrNotFound):
			cancel(errLeaseLost)
			return
		case err != nil:
			r.Log.Warn("lease renewal failed", "task", e.TaskID, "err", err)
		case stop:
			cancel(errCancelled) // a no-op after the first
		}
	}
}

// carryOut runs the container and works out the result. It never returns without a status.
func (r *Runner) carryOut(ctx context.Context, e *domain.Execution, log *slog.Logger, exited func()) store.Finish {
	fail := func(format string, args ...any) store.Finish {
		return store.Finish{Status: domain.ExecError, Error: fmt.Sprintf(format, args...)}
	}
	env, err := OpenEnv(r.Box, e.EnvCipher)
	if err != nil {
		return fail("the run's variables could not be decrypted")
	}
	if err := r.Backend.EnsureImage(ctx, e.Image); err != nil {
		if ended := endedBy(ctx); ended != nil {
			return *ended
		}
		if errors.Is(err, ErrImageNotFound) {
			return fail("image %q not found on the Docker engine and could not be pulled", e.Image)
		}
		// The engine's words can tell an open registry port from a closed one: they go to the
		// log, not to the run.
		log.Warn("preparing the image failed", "image", e.Image, "err", err)
		return fail("the Docker engine could not prepare image %q", e.Image)
	}
	spec, err := r.spec(e, env)
	if err != nil {
		// Commands are checked when runs are queued; one queued before that check may not parse.
		return fail("the command could not be read: %v", err)
	}
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
	if err := r.Store.Executions().SetContainer(ctx, e.ID, id); err != nil {
		log.Warn("recording the container failed", "err", err)
	}

	logsDone := make(chan struct{})
	go func() {
		defer close(logsDone)
		r.streamLogs(ctx, e, id, masker(env), log)
	}()

	timeout := time.Duration(e.TimeoutSeconds) * time.Second
	if timeout <= 0 {
		timeout = domain.DefaultTimeout
	}
	wctx, wcancel := context.WithTimeout(ctx, timeout)
	exit, werr := r.Backend.Wait(wctx, id)
	wcancel()
	var ended *store.Finish
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
		case errors.Is(werr, context.DeadlineExceeded):
			f := fail("timed out after %s", timeout)
			ended = &f
		default:
			f := fail("waiting for the container failed: %v", werr)
			ended = &f
		}
	}
	exited()
	select {
	case <-logsDone:
	case <-time.After(10 * time.Second):
		log.Warn("log stream did not end after the container exited")
	}

	// Reports are kept for every run that got as far as a container, even a cancelled one.
	rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer rcancel()
	f := r.collectReports(rctx, e, id, log)
	if ended != nil {
		ended.ReportDirs, ended.ReportBytes, ended.Notes = f.ReportDirs, f.ReportBytes, f.Notes
		ended.Tests, ended.Summary, ended.ReportIndexes = f.Tests, f.Summary, f.ReportIndexes
		return *ended
	}
	f.ExitCode = &exit
	f.Status = domain.Verdict(exit, f.Tests)
	return f
}

// endedBy tells whether the run's context ended on purpose: cancel, shutdown, lost lease.
func endedBy(ctx context.Context) *store.Finish {
	switch cause := context.Cause(ctx); {
	case cause == nil:
		return nil
	case errors.Is(cause, errCancelled):
		return &store.Finish{Status: domain.ExecCancelled, Error: "cancelled by a user"}
	case errors.Is(cause, errShutdown):
		return &store.Finish{Status: domain.ExecError, Error: "the runner stopped while the run was in progress"}
	case errors.Is(cause, errLeaseLost):
		return &store.Finish{Status: domain.ExecError, Error: "the runner lost its lease on the run"}
	}
	return nil
}

// spec builds the container of a run: the container contract exactly (docs/architecture.md),
// plus the run's variables. `command`, when given, replaces the image's entrypoint; the folder
// stays its first argument.
func (r *Runner) spec(e *domain.Execution, env RunEnv) (Spec, error) {
	vars := make(map[string]string, len(env.Vars)+4)
	for k, v := range env.Vars {
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
	entrypoint, err := ParseCommand(e.Command)
	if err != nil {
		return Spec{}, err
	}
	return Spec{
		Name:        "verdict-" + e.ID,
		Image:       e.Image,
		Entrypoint:  entrypoint,
		Args:        []string{folder},
		Env:         vars,
		Labels:      map[string]string{LabelManaged: "true", LabelRunner: r.ID, LabelOrg: e.OrganizationID, LabelTask: e.TaskID},
		Resources:   r.Resources,
		HostGateway: true,
	}, nil
}

// streamLogs follows the container's output into the log store and the live channel.
func (r *Runner) streamLogs(ctx context.Context, e *domain.Execution, id string, mask *strings.Replacer, log *slog.Logger) {
	rc, err := r.Backend.Logs(ctx, id)
	if err != nil {
		log.Warn("following the container's logs failed", "err", err)
		return
	}
	defer rc.Close()
	seq, offset := 0, int64(0)
	pumpLogs(ctx, rc, mask, func(chunk string) {
		seq++
		// The live event goes first: watchers should not wait for the database. Its offset
		// lets a watcher that joined late see what it missed, and skip what it has.
		r.Events.ExecutionLog(e.OrganizationID, e.TaskID, chunk, offset)
		offset += int64(len(chunk))
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if err := r.Store.Logs().Append(wctx, e.ID, seq, chunk); err != nil {
			log.Warn("storing log lines failed", "err", err)
		}
	})
}

// collectReports copies the report folders out of the container into the report store,
// within the organization's storage limit, and parses the results they hold. One copy of /app
// brings every folder (each copy costs the engine a mount of the container); for an image whose
// /app holds much besides, the folders are copied one by one.
func (r *Runner) collectReports(ctx context.Context, e *domain.Execution, id string, log *slog.Logger) store.Finish {
	var f store.Finish
	org, err := r.Store.Organizations().Get(ctx, e.OrganizationID)
	if err != nil {
		f.Notes = append(f.Notes, "reports were not collected: the organization could not be read")
		return f
	}
	room := int64(-1)
	if limit := org.Limits().MaxStorageBytes; limit != domain.Unlimited {
		room = max(limit-org.StorageUsedBytes, 0)
	}
	listed := e.ReportFolders
	if len(listed) == 0 {
		listed = domain.DefaultReportFolders
	}
	folders := reportFolders(listed)
	kept := map[string]int64{}
	var total int64
	// keep records one folder's Put; false when the reports must all be dropped.
	keep := func(folder string, n int64, err error) bool {
		switch {
		case errors.Is(err, report.ErrTooManyFiles):
			// A bound on entries, not on storage: this folder alone is left out, and no storage
			// alert is raised.
			f.Notes = append(f.Notes, fmt.Sprintf("report folder %s was not kept: it holds more than %d files and "+
				"folders, the limit for one report folder", folder, report.MaxFiles))
		case errors.Is(err, report.ErrTooLarge):
			return false
		case err != nil:
			log.Warn("storing a report folder failed", "folder", folder, "err", err)
		default:
			kept[folder] = n
			total += n
		}
		return true
	}
	limit := func() int64 {
		if room < 0 {
			return 1 << 40
		}
		return max(room-total, 0)
	}
	put := func(rd io.Reader, into string) (int64, error) {
		return r.Reports.Put(ctx, e.OrganizationID, e.TaskID, rd, into, limit())
	}

	remaining := folders
	if !r.bigApp(e.Image) {
		rc, err := r.Backend.CopyOut(ctx, id, appDir)
		switch {
		case errors.Is(err, ErrPathNotFound):
			remaining = nil
		case err != nil:
			log.Warn("copying the report folders failed", "err", err)
		default:
			found, partial, err := splitReports(rc, folders, room, put)
			rc.Close()
			if errors.Is(err, report.ErrTooLarge) {
				return r.dropReports(ctx, e, f, log)
			}
			if err != nil {
				log.Warn("copying the report folders failed; copying them one by one", "err", err)
				break
			}
			if partial {
				r.rememberBigApp(e.Image)
			}
			remaining = nil
			for _, folder := range folders {
				res, ok := found[folder]
				switch {
				case ok && !keep(folder, res.written, res.err):
					return r.dropReports(ctx, e, f, log)
				case !ok && partial:
					remaining = append(remaining, folder)
				}
			}
		}
	}
	for _, folder := range remaining {
		if _, ok := kept[folder]; ok {
			continue
		}
		rc, err := r.Backend.CopyOut(ctx, id, appDir+"/"+folder)
		if errors.Is(err, ErrPathNotFound) {
			continue
		}
		if err != nil {
			log.Warn("copying a report folder failed", "folder", folder, "err", err)
			continue
		}
		n, err := put(rc, folder)
		rc.Close()
		if !keep(folder, n, err) {
			return r.dropReports(ctx, e, f, log)
		}
	}
	for _, folder := range folders {
		if n, ok := kept[folder]; ok {
			f.ReportDirs = append(f.ReportDirs, folder)
			f.ReportBytes += n
		}
	}
	// Recorded now, so that views link only folders that open without looking at the disk.
	f.ReportIndexes = report.IndexedDirs(ctx, r.Reports, e.OrganizationID, e.TaskID, f.ReportDirs)
	if len(f.ReportDirs) > 0 && (r.ReportDir != nil || r.ReportFS != nil) {
		// Results are the container's words: its secrets are masked in them as in its log.
		mask, err := r.reportMask(e)
		if err != nil {
			f.Notes = append(f.Notes, "test results were not read: the run's secrets to mask in them could not be decrypted")
			return f
		}
		tests, err := r.parseReports(ctx, e)
		if err != nil {
			f.Notes = append(f.Notes, mask("test results could not be read: "+err.Error()))
		}
		for i := range tests {
			tests[i].Name, tests[i].Suite, tests[i].Error = mask(tests[i].Name), mask(tests[i].Suite), mask(tests[i].Error)
		}
		f.Tests, f.Summary = tests, domain.Summarize(tests)
	}
	return f
}

// parseReports reads the test results in the run's stored reports.
func (r *Runner) parseReports(ctx context.Context, e *domain.Execution) ([]domain.TestResult, error) {
	if r.ReportFS == nil {
		return report.ParseDir(r.ReportDir(e.OrganizationID, e.TaskID))
	}
	fsys, err := r.ReportFS(ctx, e.OrganizationID, e.TaskID)
	if err != nil {
		return nil, err
	}
	return report.ParseFS(fsys)
}

// dropReports removes what was kept of the run's reports when together they would pass the
// organization's storage limit, and raises the storage alert.
func (r *Runner) dropReports(ctx context.Context, e *domain.Execution, f store.Finish, log *slog.Logger) store.Finish {
	if _, err := r.Reports.Delete(ctx, e.OrganizationID, e.TaskID); err != nil {
		log.Warn("removing the partial reports failed", "err", err)
	}
	f.ReportDirs, f.ReportBytes = nil, 0
	f.Notes = append(f.Notes, "reports were dropped: they would pass the organization's storage limit")
	if err := r.countStorage(ctx, e.OrganizationID, billing.Usage{Refused: true,
		Note: "The reports of run " + e.TaskID + " were dropped because they would pass the limit."}); err != nil {
		log.Error("raising the storage alert failed", "err", err)
	}
	return f
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

// reportMask returns what makes text from the run's reports storable: cleaned, and with the
// run's secret values masked.
func (r *Runner) reportMask(e *domain.Execution) (func(string) string, error) {
	env, err := OpenEnv(r.Box, e.EnvCipher)
	if err != nil {
		return nil, err
	}
	m := masker(env)
	return func(s string) string {
		s = clean(s)
		if m != nil {
			s = m.Replace(s)
		}
		return s
	}, nil
}

// clean makes text from a container's reports storable everywhere: valid UTF-8 without NUL
// bytes (PostgreSQL text refuses both).
func clean(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "")
}
