package control

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"verdict/internal/domain"
	"verdict/internal/report"
	"verdict/internal/run"
	"verdict/internal/store"
)

// appDir and skipBudget are the runner's (package run): where the reports are, and how much
// else of /app it reads before copying folders one by one.
const (
	appDir     = "/app"
	skipBudget = 16 << 20
)

const junitXML = `<testsuite name="s"><testcase classname="c" name="works"/></testsuite>`

// fakeBackend runs pretend containers: each exits when the test says (or at once with
// autoExit), and every container's /app holds files. CopyOut waits while gate is open.
type fakeBackend struct {
	files    map[string]string // path under /app → content
	autoExit bool
	exitCode int // what autoExit exits with

	mu      sync.Mutex
	started []string
	exits   map[string]chan int
	copies  map[string][]string // container → paths copied
	gate    chan struct{}       // non-nil: CopyOut waits until it is closed
	changed chan struct{}       // pulsed on every start and copy
}

func newFakeBackend(files map[string]string) *fakeBackend {
	return &fakeBackend{files: files, exits: map[string]chan int{}, copies: map[string][]string{},
		changed: make(chan struct{}, 1)}
}

func (b *fakeBackend) pulse() {
	select {
	case b.changed <- struct{}{}:
	default:
	}
}

func (b *fakeBackend) Name() string                              { return "fake" }
func (b *fakeBackend) Ping(context.Context) error                { return nil }
func (b *fakeBackend) EnsureImage(context.Context, string) error { return nil }
func (b *fakeBackend) Start(_ context.Context, s run.Spec) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	id := s.Labels[run.LabelTask]
	b.started = append(b.started, id)
	b.exits[id] = make(chan int, 1)
	if b.autoExit {
		b.exits[id] <- b.exitCode
	}
	b.pulse()
	return id, nil
}
func (b *fakeBackend) Logs(context.Context, string) (io.ReadCloser, error) {
	return io.NopCloser(strings.NewReader("hello\n")), nil
}
func (b *fakeBackend) Wait(ctx context.Context, id string) (int, error) {
	b.mu.Lock()
	ch := b.exits[id]
	b.mu.Unlock()
	select {
	case code := <-ch:
		return code, nil
	case <-ctx.Done():
		return -1, ctx.Err()
	}
}
func (b *fakeBackend) CopyOut(ctx context.Context, id, p string) (io.ReadCloser, error) {
	b.mu.Lock()
	b.copies[id] = append(b.copies[id], p)
	gate := b.gate
	b.pulse()
	b.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return appArchive(b.files, p)
}
func (b *fakeBackend) Stop(context.Context, string, time.Duration) error { return nil }
func (b *fakeBackend) Remove(context.Context, string) error              { return nil }
func (b *fakeBackend) List(context.Context, map[string]string) ([]run.Container, error) {
	return nil, nil
}
func (b *fakeBackend) ListDir(context.Context, string, string, bool) ([]string, error) {
	return nil, nil
}

func (b *fakeBackend) startedIDs() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.started)
}

func (b *fakeBackend) copiesOf(id string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.copies[id])
}

// appArchive is the engine's archive of p (/app or a folder under it) given the files of
// /app: entries under p's base name, directories before what they hold, in name order.
func appArchive(files map[string]string, p string) (io.ReadCloser, error) {
	sub := strings.TrimPrefix(strings.TrimPrefix(p, appDir), "/")
	entries := map[string]bool{} // name under sub → is a directory
	for name := range files {
		rel := name
		if sub != "" {
			var ok bool
			if rel, ok = strings.CutPrefix(name, sub+"/"); !ok {
				continue
			}
		}
		entries[rel] = false
		for d := path.Dir(rel); d != "."; d = path.Dir(d) {
			entries[d] = true
		}
	}
	if len(entries) == 0 {
		return nil, fmt.Errorf("%w: %s", run.ErrPathNotFound, p)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	base := path.Base(p)
	must := func(err error) {
		if err != nil {
			panic(err)
		}
	}
	must(tw.WriteHeader(&tar.Header{Name: base + "/", Typeflag: tar.TypeDir, Mode: 0o755}))
	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if entries[n] {
			must(tw.WriteHeader(&tar.Header{Name: base + "/" + n + "/", Typeflag: tar.TypeDir, Mode: 0o755}))
			continue
		}
		full := n
		if sub != "" {
			full = sub + "/" + n
		}
		body := files[full]
		must(tw.WriteHeader(&tar.Header{Name: base + "/" + n, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(body))}))
		_, err := io.WriteString(tw, body)
		must(err)
	}
	must(tw.Close())
	return io.NopCloser(&buf), nil
}

type noEvents struct{}

func (noEvents) ExecutionUpdated(*domain.Execution)         {}
func (noEvents) ExecutionLog(string, string, string, int64) {}

// runnerFixture is a Runner on fakeBackend with a SQLite store and a report store.
type runnerFixture struct {
	t       *testing.T
	ctx     context.Context
	st      store.Store
	reports *report.FSStore
	b       *fakeBackend
	r       *run.Runner
	plane   *Plane
	org     *domain.Organization
	queued  int
}

func newRunnerFixture(t *testing.T, b *fakeBackend, plan domain.Plan, slots int) *runnerFixture {
	t.Helper()
	ctx := context.Background()
	st, reports := openStores(t)
	org := &domain.Organization{ID: domain.NewID(), Name: "Org", Slug: "org", Plan: domain.PlanFree, CreatedAt: time.Now()}
	if err := st.Organizations().Create(ctx, org); err != nil {
		t.Fatal(err)
	}
	if err := st.Organizations().UpdatePlan(ctx, org.ID, plan, domain.Billing{}); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	plane := &Plane{Store: st, Reports: reports, ReportDir: reports.LocalDir, Events: noEvents{}, Clock: domain.SystemClock, Log: log}
	r := &run.Runner{ID: "test-runner", Peer: plane.Peer("test-runner"), Backend: b, Clock: domain.SystemClock, Log: log,
		Slots: slots,
		// Short leases, renewed often: a run in collection must keep its lease while the
		// reaper sweeps. Polling once an hour: only wake-ups may start runs.
		Lease: 600 * time.Millisecond, Heartbeat: 100 * time.Millisecond, Poll: time.Hour}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); r.Run(runCtx) }()
	reaper := &Reaper{Store: st, Clock: domain.SystemClock, Log: r.Log, Interval: 50 * time.Millisecond}
	go reaper.Run(runCtx)
	t.Cleanup(func() {
		b.mu.Lock()
		if b.gate != nil {
			select {
			case <-b.gate:
			default:
				close(b.gate)
			}
		}
		for _, ch := range b.exits {
			select {
			case ch <- 0:
			default:
			}
		}
		b.mu.Unlock()
		stop()
		<-done
	})
	return &runnerFixture{t: t, ctx: ctx, st: st, reports: reports, b: b, r: r, plane: plane, org: org}
}

// queue adds a PENDING run and wakes the runner, as the API does.
func (f *runnerFixture) queue(task string) {
	f.t.Helper()
	f.queued++ // a second apart: claimed in queue order
	e := &domain.Execution{ID: domain.NewID(), OrganizationID: f.org.ID, TaskID: task, Image: "suite:pass",
		Folder: "all", TimeoutSeconds: 60, Status: domain.ExecPending,
		QueuedAt: time.Now().Add(time.Duration(f.queued-100) * time.Second)}
	if err := f.st.Executions().Create(f.ctx, e); err != nil {
		f.t.Fatal(err)
	}
	f.r.Notify()
}

func (f *runnerFixture) get(task string) *domain.Execution {
	f.t.Helper()
	e, err := f.st.Executions().Get(f.ctx, f.org.ID, task)
	if err != nil {
		f.t.Fatal(err)
	}
	return e
}

// eventually waits up to 5 s for cond.
func (f *runnerFixture) eventually(what string, cond func() bool) {
	f.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			f.t.Fatalf("timed out waiting for %s", what)
		}
		select {
		case <-f.b.changed:
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// never checks that cond stays false for a while.
func (f *runnerFixture) never(what string, cond func() bool) {
	f.t.Helper()
	for end := time.Now().Add(400 * time.Millisecond); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if cond() {
			f.t.Fatalf("%s", what)
		}
	}
}

func (f *runnerFixture) started(n int) func() bool {
	return func() bool { return len(f.b.startedIDs()) >= n }
}

var reportFiles = map[string]string{
	"junit/results.xml":            junitXML,
	"playwright-report/index.html": "<html></html>",
	"playwright-report/data/a.txt": "a",
	"node_modules/x/index.js":      "module.exports = 1",
	"tests/a.spec.ts":              "test('a')",
}

// A run keeps its slot through its reports' collection: with one slot, the next run does not
// start while the first collects (RUNNING, its lease renewed past several lease lengths, the
// reaper sweeping), and starts once the first is final. So the runs a runner has RUNNING are
// never more than its slots. Each run's reports came from one copy of /app.
func TestRunnerKeepsTheSlotThroughCollection(t *testing.T) {
	b := newFakeBackend(reportFiles)
	b.autoExit = true
	b.gate = make(chan struct{})
	f := newRunnerFixture(t, b, domain.PlanEnterprise, 1)

	f.queue("a")
	f.queue("b")
	f.eventually("run a to be copied", func() bool { return len(f.b.copiesOf("a")) == 1 })
	f.never("run b started while run a, in collection, held the only slot", f.started(2))
	time.Sleep(3 * f.r.Lease / 2) // past a's first lease: only renewals keep it
	if e := f.get("a"); e.Status != domain.ExecRunning {
		t.Fatalf("run a in collection is %s, want RUNNING", e.Status)
	}

	close(b.gate)
	f.eventually("run b to start once run a is final", f.started(2))
	if e := f.get("a"); !e.Status.Final() {
		t.Fatalf("run b started before run a was final (%s)", e.Status)
	}
	for _, task := range []string{"a", "b"} {
		f.eventually("run "+task+" to finish", func() bool { return f.get(task).Status.Final() })
		e := f.get(task)
		if e.Status != domain.ExecPassed || e.Summary.Total != 1 || !slices.Equal(e.ReportDirs, []string{"playwright-report", "junit"}) {
			t.Fatalf("run %s: %s %q, %+v, reports %v", task, e.Status, e.Error, e.Summary, e.ReportDirs)
		}
		if got := f.b.copiesOf(task); !slices.Equal(got, []string{appDir}) {
			t.Fatalf("run %s copied %v, want one copy of %s", task, got, appDir)
		}
		rc, _, err := f.reports.Open(f.ctx, f.org.ID, task, "playwright-report/data/a.txt")
		if err != nil {
			t.Fatalf("run %s: report file: %v", task, err)
		}
		rc.Close()
		if _, _, err := f.reports.Open(f.ctx, f.org.ID, task, "node_modules/x/index.js"); err == nil {
			t.Fatalf("run %s kept a file outside the report folders", task)
		}
	}
}

// A run in collection still counts against its organization's limit: on the free plan (one
// run at a time) the second run waits for the first's final status, with free runner slots,
// and starts as soon as that status is written (the runner polls once an hour here).
func TestRunnerOrgLimitCountsRunsInCollection(t *testing.T) {
	b := newFakeBackend(reportFiles)
	b.autoExit = true
	b.gate = make(chan struct{})
	f := newRunnerFixture(t, b, domain.PlanFree, 3)

	f.queue("a")
	f.queue("b")
	f.eventually("run a to be copied", func() bool { return len(f.b.copiesOf("a")) == 1 })
	f.never("run b started while run a, in collection, used the organization's one place", f.started(2))
	if e := f.get("b"); e.Status != domain.ExecPending {
		t.Fatalf("run b is %s", e.Status)
	}
	close(b.gate)
	f.eventually("run b to start once run a is final", f.started(2))
	if e := f.get("a"); !e.Status.Final() {
		t.Fatalf("run b started before run a was final (%s)", e.Status)
	}
	f.eventually("run b to finish", func() bool { return f.get("b").Status.Final() })
}

// An image whose /app holds more than skipBudget besides the reports is copied whole once:
// the folders it had not reached are then copied one by one, and its later runs copy only
// folders.
func TestRunnerBigAppFallsBackToFolders(t *testing.T) {
	files := maps.Clone(reportFiles)
	files["big/blob"] = strings.Repeat("x", skipBudget+1) // before junit and playwright-report
	files["allure-results/r.json"] = "{}"                 // before the big file: met in the copy of /app
	b := newFakeBackend(files)
	b.autoExit = true
	f := newRunnerFixture(t, b, domain.PlanEnterprise, 1)

	f.queue("a")
	f.eventually("run a to finish", func() bool { return f.get("a").Status.Final() })
	f.queue("b")
	f.eventually("run b to finish", func() bool { return f.get("b").Status.Final() })

	want := []string{"playwright-report", "allure-results", "junit"}
	for _, task := range []string{"a", "b"} {
		if e := f.get(task); e.Status != domain.ExecPassed || !slices.Equal(e.ReportDirs, want) {
			t.Fatalf("run %s: %s %q, reports %v notes %v", task, e.Status, e.Error, e.ReportDirs, e.Notes)
		}
	}
	if got := f.b.copiesOf("a"); len(got) == 0 || got[0] != appDir || slices.Contains(got, appDir+"/allure-results") {
		t.Fatalf("run a copied %v: want /app first, then only the folders it had not reached", got)
	}
	if got := f.b.copiesOf("b"); slices.Contains(got, appDir) {
		t.Fatalf("run b copied %v: the image's /app is known to be big", got)
	}
}

// A run whose command does not parse (queued before commands were checked) ends ERROR with
// the parser's reason, and no container starts with the command taken as one word.
func TestRunnerRefusesAMalformedCommand(t *testing.T) {
	b := newFakeBackend(reportFiles)
	b.autoExit = true
	f := newRunnerFixture(t, b, domain.PlanEnterprise, 1)
	e := &domain.Execution{ID: domain.NewID(), OrganizationID: f.org.ID, TaskID: "bad", Image: "suite:pass",
		Command: `pytest -k "not slow`, Folder: "all", TimeoutSeconds: 60, Status: domain.ExecPending, QueuedAt: time.Now()}
	if err := f.st.Executions().Create(f.ctx, e); err != nil {
		t.Fatal(err)
	}
	f.r.Notify()
	f.eventually("the run to end", func() bool { return f.get("bad").Status.Final() })
	if got := f.get("bad"); got.Status != domain.ExecError || !strings.Contains(got.Error, "the command could not be read") {
		t.Fatalf("malformed command: %s %q", got.Status, got.Error)
	}
	if started := b.startedIDs(); len(started) != 0 {
		t.Fatalf("containers started: %v", started)
	}
}

// With no report folders named, the results are found where the frameworks write them by
// default: Maven Surefire's target/surefire-reports, Gradle's build/test-results/<task>, a
// reporter's results/ (here Playwright's junit reporter), Cypress's reporters' folders.
func TestRunnerFindsResultsInTheFrameworksFolders(t *testing.T) {
	files := map[string]string{
		"target/surefire-reports/TEST-com.shop.OrderTest.xml": `<testsuite name="com.shop.OrderTest"><testcase classname="com.shop.OrderTest" name="totals"/></testsuite>`,
		"build/test-results/test/TEST-com.shop.CartTest.xml":  `<testsuite name="com.shop.CartTest"><testcase classname="com.shop.CartTest" name="adds"/></testsuite>`,
		"results/junit.xml":                 `<testsuites><testsuite name="cart.spec.ts"><testcase classname="cart.spec.ts" name="checks out"/></testsuite></testsuites>`,
		"cypress/results/results-1234.xml":  `<testsuites><testsuite name="login"><testcase classname="login" name="signs in"/></testsuite></testsuites>`,
		"src/main/java/com/shop/Order.java": "class Order {}",
	}
	b := newFakeBackend(files)
	b.autoExit = true
	f := newRunnerFixture(t, b, domain.PlanEnterprise, 1)
	f.queue("a")
	f.eventually("run a to finish", func() bool { return f.get("a").Status.Final() })
	e := f.get("a")
	if e.Status != domain.ExecPassed || e.Summary.Total != 4 {
		t.Fatalf("run a: %s, %+v (reports %v, notes %v)", e.Status, e.Summary, e.ReportDirs, e.Notes)
	}
	want := []string{"results", "target/surefire-reports", "build/test-results", "cypress/results"}
	for _, d := range want {
		if !slices.Contains(e.ReportDirs, d) {
			t.Fatalf("reports %v, want %v among them", e.ReportDirs, want)
		}
	}
	if slices.ContainsFunc(e.ReportDirs, func(d string) bool { return strings.HasPrefix(d, "src") }) {
		t.Fatalf("reports %v keep the sources", e.ReportDirs)
	}
}
