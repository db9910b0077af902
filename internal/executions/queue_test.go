package executions_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"verdict/internal/control"
	"verdict/internal/crypto/secretbox"
	"verdict/internal/domain"
	"verdict/internal/executions"
	"verdict/internal/identity"
	"verdict/internal/report"
	"verdict/internal/store"
	"verdict/internal/store/sqlstore"
	"verdict/internal/store/sqlstore/sqlitetest"
	"verdict/internal/testenv"
)

// The service's rules on the real store (a temporary SQLite file), without the HTTP layer,
// a runner or any service: the fast tier (go test -short) runs them. The end-to-end tests in
// internal/app check the same rules through the API on both databases.

// fixture is one organization with an admin, a developer and a viewer, and the service.
type fixture struct {
	st                 *sqlstore.Store
	box                *secretbox.Box
	clock              *testenv.Clock
	svc                *executions.Service
	events             *events
	org                *domain.Organization
	admin, dev, viewer *identity.Principal
	mu                 sync.Mutex
	woken              int
	stopped            []string
	ctx                context.Context
}

// events records what the service announces.
type events struct {
	mu      sync.Mutex
	updated []domain.Execution
}

func (e *events) ExecutionUpdated(x *domain.Execution) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.updated = append(e.updated, *x)
}

func (e *events) ExecutionLog(string, string, string, int64) {}

func (e *events) statuses(taskID string) []domain.ExecStatus {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []domain.ExecStatus
	for _, x := range e.updated {
		if x.TaskID == taskID {
			out = append(out, x.Status)
		}
	}
	return out
}

var _ control.Events = (*events)(nil)

// newFixture builds the service on a fresh store for an organization on plan; edit changes
// its dependencies first.
func newFixture(t *testing.T, plan domain.Plan, edit func(*executions.Deps)) *fixture {
	t.Helper()
	f := &fixture{st: sqlitetest.Open(t), box: sqlitetest.Box(t, 0x11), events: &events{}, ctx: context.Background(),
		clock: testenv.NewClock(time.Date(2026, 4, 10, 9, 0, 0, 0, time.UTC))}
	reports, err := report.NewFSStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	d := executions.Deps{Store: f.st, Box: f.box, Reports: reports, Events: f.events, Clock: f.clock.Now,
		Wake: func() { f.mu.Lock(); f.woken++; f.mu.Unlock() },
		Stop: func(id string) { f.mu.Lock(); f.stopped = append(f.stopped, id); f.mu.Unlock() }}
	if edit != nil {
		edit(&d)
	}
	f.svc = executions.New(d)
	f.org = sqlitetest.Org(t, f.st, "Queue Co", plan, f.clock.Now())
	f.admin = sqlitetest.As(sqlitetest.Member(t, f.st, f.org, "admin@queue.test", domain.RoleAdmin))
	f.dev = sqlitetest.As(sqlitetest.Member(t, f.st, f.org, "dev@queue.test", domain.RoleDeveloper))
	f.viewer = sqlitetest.As(sqlitetest.Member(t, f.st, f.org, "viewer@queue.test", domain.RoleViewer))
	return f
}

// queue queues in as the developer and fails the test on an error.
func (f *fixture) queue(t *testing.T, in executions.QueueInput) *domain.Execution {
	t.Helper()
	e, err := f.svc.Queue(f.ctx, f.dev, in)
	if err != nil {
		t.Fatalf("queue %+v: %v", in, err)
	}
	return e
}

// stored reads a run back from the store, as the organization's.
func (f *fixture) stored(t *testing.T, taskID string) *domain.Execution {
	t.Helper()
	e, err := f.st.Executions().Get(f.ctx, f.org.ID, taskID)
	if err != nil {
		t.Fatalf("run %s: %v", taskID, err)
	}
	return e
}

func (f *fixture) count(t *testing.T) int {
	t.Helper()
	n, err := f.st.Executions().CountSince(f.ctx, f.org.ID, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// claim starts the organization's oldest pending run, as a runner does.
func (f *fixture) claim(t *testing.T) *domain.Execution {
	t.Helper()
	now := f.clock.Now()
	e, err := f.st.Executions().Claim(f.ctx, "runner-1", "", "", now, now.Add(time.Minute), func(domain.Plan) int { return 100 })
	if err != nil || e == nil {
		t.Fatalf("claim: %v %v", e, err)
	}
	return e
}

// Every malformed request is a 400 naming the field, and nothing is queued.
func TestQueueValidation(t *testing.T) {
	f := newFixture(t, domain.PlanTeam, nil)
	manyEnv := map[string]string{}
	for i := range 101 {
		manyEnv[fmt.Sprintf("V%d", i)] = "x"
	}
	long := strings.Repeat("a", 2049)
	for _, c := range []struct {
		name      string
		in        executions.QueueInput
		code, msg string
	}{
		{"long image", executions.QueueInput{Image: long}, "Validation error", "image is too long"},
		{"long command", executions.QueueInput{Image: "img", Command: long}, "Validation error", "command is too long"},
		{"long folder", executions.QueueInput{Image: "img", Folder: long}, "Validation error", "folder is too long"},
		{"two commands", executions.QueueInput{Image: "img", Command: "npm test; rm -rf /"}, "Validation error", "command must be one command"},
		{"unclosed quote", executions.QueueInput{Image: "img", Command: `npm test "x`}, "Validation error", "command is not valid"},
		{"NUL in command", executions.QueueInput{Image: "img", Command: "a\x00b"}, "Validation error", "command must not contain NUL"},
		{"taskId", executions.QueueInput{Image: "img", TaskID: "bad id!"}, "Invalid taskId", "taskId must be 1 to 64 characters"},
		{"long taskId", executions.QueueInput{Image: "img", TaskID: strings.Repeat("t", 65)}, "Invalid taskId", "1 to 64"},
		{"negative timeout", executions.QueueInput{Image: "img", TimeoutSeconds: -1}, "Validation error", "timeoutSeconds must be between 1 and 86400"},
		{"timeout over a day", executions.QueueInput{Image: "img", TimeoutSeconds: 86401}, "Validation error", "timeoutSeconds must be between 1 and 86400"},
		{"folder ..", executions.QueueInput{Image: "img", Folder: "../etc"}, "Validation error", "folder must not contain .."},
		{"folder a/../..", executions.QueueInput{Image: "img", Folder: "a/../../b"}, "Validation error", "folder must not contain .."},
		{"absolute folder", executions.QueueInput{Image: "img", Folder: "/etc"}, "Validation error", "folder must be a relative path"},
		{"backslash folder", executions.QueueInput{Image: "img", Folder: `a\b`}, "Validation error", "folder must be a relative path"},
		{"ftp baseUrl", executions.QueueInput{Image: "img", BaseURL: "ftp://x"}, "Validation error", "baseUrl must be an http(s) URL"},
		{"baseUrl without host", executions.QueueInput{Image: "img", BaseURL: "http://"}, "Validation error", "baseUrl must be an http(s) URL"},
		{"101 envVars", executions.QueueInput{Image: "img", EnvVars: manyEnv}, "Validation error", "at most 100 envVars"},
		{"env name", executions.QueueInput{Image: "img", EnvVars: map[string]string{"1X": "y"}}, "Validation error", `environment variable name "1X" is not valid`},
		{"reserved TASK_ID", executions.QueueInput{Image: "img", EnvVars: map[string]string{"TASK_ID": "x"}}, "Reserved variable", "TASK_ID is reserved by the container contract"},
		{"reserved BASE_URL", executions.QueueInput{Image: "img", EnvVars: map[string]string{"BASE_URL": "http://x"}}, "Reserved variable", "BASE_URL is reserved"},
		{"NUL in a value", executions.QueueInput{Image: "img", EnvVars: map[string]string{"A": "x\x00y"}}, "Validation error", "the value of A is too long or holds a NUL byte"},
		{"long value", executions.QueueInput{Image: "img", EnvVars: map[string]string{"A": strings.Repeat("v", 32<<10+1)}}, "Validation error", "the value of A is too long"},
		{"label key", executions.QueueInput{Image: "img", Labels: map[string]string{"Bad Key": "x"}}, "Validation error", `label "Bad Key": a key is 1 to 63`},
		{"label value", executions.QueueInput{Image: "img", Labels: map[string]string{"k": "a\nb"}}, "Validation error", "a value is at most 256 characters"},
		{"environment", executions.QueueInput{Image: "img", Environment: "qa"}, "Validation error", "environment must be development, staging or production"},
		{"no image", executions.QueueInput{}, "Missing required fields", "image is required unless projectId names a project with an image"},
		{"blank image", executions.QueueInput{Image: "   "}, "Missing required fields", "image is required"},
		{"bad image", executions.QueueInput{Image: "Not An Image"}, "Validation error", `image "Not An Image" is not a valid image reference`},
		{"unknown project", executions.QueueInput{ProjectID: domain.NewID()}, "Project not found", "No such project in your organization"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := f.svc.Queue(f.ctx, f.dev, c.in)
			status := 400
			if c.code == "Project not found" {
				status = 404
			}
			testenv.WantError(t, err, status, c.code, c.msg)
		})
	}
	if n := f.count(t); n != 0 {
		t.Fatalf("%d runs stored after refused requests", n)
	}
	if f.woken != 0 || len(f.events.updated) != 0 {
		t.Fatalf("refused requests woke the runner %d times and announced %d runs", f.woken, len(f.events.updated))
	}
	// Labels at the limit pass; one more is refused.
	labels := map[string]string{}
	for i := range domain.MaxLabels {
		labels[fmt.Sprintf("k%d", i)] = "v"
	}
	f.queue(t, executions.QueueInput{Image: "img", Labels: labels})
	labels["one-more"] = "v"
	_, err := f.svc.Queue(f.ctx, f.dev, executions.QueueInput{Image: "img", Labels: labels})
	testenv.WantError(t, err, 400, "Validation error", fmt.Sprintf("at most %d labels", domain.MaxLabels))
}

// A viewer cannot queue, cancel or delete runs, or change projects.
func TestViewersAreReadOnly(t *testing.T) {
	f := newFixture(t, domain.PlanTeam, nil)
	e := f.queue(t, executions.QueueInput{Image: "img"})
	const msg = "Viewers cannot start, cancel or delete runs, or change projects"
	_, err := f.svc.Queue(f.ctx, f.viewer, executions.QueueInput{Image: "img"})
	testenv.WantError(t, err, 403, "Forbidden", msg)
	_, err = f.svc.Cancel(f.ctx, f.viewer, e.TaskID)
	testenv.WantError(t, err, 403, "Forbidden", msg)
	testenv.WantError(t, f.svc.Delete(f.ctx, f.viewer, e.TaskID), 403, "Forbidden", msg)
	name := "P"
	_, err = f.svc.CreateProject(f.ctx, f.viewer, executions.ProjectInput{Name: &name})
	testenv.WantError(t, err, 403, "Forbidden", msg)
	if got := f.stored(t, e.TaskID); got.Status != domain.ExecPending || got.CancelRequested {
		t.Fatalf("the viewer's cancel changed the run: %s cancel requested %v", got.Status, got.CancelRequested)
	}
	// Reading is for every role.
	if got, err := f.svc.Get(f.ctx, f.viewer, e.TaskID); err != nil || got.ID != e.ID {
		t.Fatalf("viewer's read: %v %v", got, err)
	}
	if n := f.count(t); n != 1 {
		t.Fatalf("%d runs, want 1", n)
	}
}

// The plan's maxTestRuns counts the runs queued in the billing period (deleted ones too); the
// next period starts again. The refusal carries the usage.
func TestQueueRunLimit(t *testing.T) {
	f := newFixture(t, domain.PlanFree, nil)
	var last *domain.Execution
	for range 99 {
		last = f.queue(t, executions.QueueInput{Image: "img"})
	}
	// A deleted run still counts.
	if err := f.svc.Delete(f.ctx, f.admin, last.TaskID); err != nil {
		t.Fatal(err)
	}
	f.queue(t, executions.QueueInput{Image: "img"}) // the 100th
	_, err := f.svc.Queue(f.ctx, f.admin, executions.QueueInput{Image: "img"})
	de := testenv.WantError(t, err, 403, "Test run limit exceeded", "The free plan allows 100 test runs per billing period")
	if got := fmt.Sprint(de.Fields["usage"]); got != "map[limit:100 percentUsed:100 used:100]" {
		t.Fatalf("usage %s", got)
	}
	if n, _ := f.svc.CountRunsSince(f.ctx, f.org.ID, time.Time{}); n != 100 {
		t.Fatalf("%d runs counted, want 100", n)
	}
	// Another organization's count is its own.
	other := sqlitetest.Org(t, f.st, "Other Co", domain.PlanFree, f.clock.Now())
	if _, err := f.svc.Queue(f.ctx, sqlitetest.As(sqlitetest.Member(t, f.st, other, "o@other.test", domain.RoleDeveloper)),
		executions.QueueInput{Image: "img"}); err != nil {
		t.Fatalf("another organization was refused: %v", err)
	}
	// The calendar month is the period without a subscription: May starts again.
	f.clock.Advance(21*24*time.Hour + 15*time.Hour) // 2026-05-01 00:00
	f.queue(t, executions.QueueInput{Image: "img"})

	// With a subscription, its period counts: runs before its start do not.
	start, end := f.clock.Now().Add(time.Hour), f.clock.Now().AddDate(0, 1, 0)
	sub := "sub_1"
	if err := f.st.Organizations().UpdatePlan(f.ctx, f.org.ID, domain.PlanFree, domain.Billing{ProviderSubscriptionID: &sub,
		CurrentPeriodStart: &start, CurrentPeriodEnd: &end}); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(2 * time.Hour)
	for range 100 {
		f.queue(t, executions.QueueInput{Image: "img"})
	}
	_, err = f.svc.Queue(f.ctx, f.dev, executions.QueueInput{Image: "img"})
	testenv.WantError(t, err, 403, "Test run limit exceeded", "100 test runs")
}

// Past maxConcurrentRuns a run is not refused: it waits PENDING with the reason; the runner is
// woken and the run announced either way.
func TestQueueConcurrentRuns(t *testing.T) {
	f := newFixture(t, domain.PlanFree, nil) // one run at a time
	first := f.queue(t, executions.QueueInput{Image: "img"})
	if first.Status != domain.ExecPending || first.QueueReason != "waiting for a runner" {
		t.Fatalf("first run: %s %q", first.Status, first.QueueReason)
	}
	f.claim(t)
	second := f.queue(t, executions.QueueInput{Image: "img"})
	if second.Status != domain.ExecPending || second.QueueReason != "waiting for a free run slot: 1 of 1 in use" {
		t.Fatalf("second run: %s %q", second.Status, second.QueueReason)
	}
	if got := f.stored(t, second.TaskID).QueueReason; got != second.QueueReason {
		t.Fatalf("stored reason %q", got)
	}
	if f.woken != 2 || !slices.Equal(f.events.statuses(second.TaskID), []domain.ExecStatus{domain.ExecPending}) {
		t.Fatalf("woken %d times, events of the second run %v", f.woken, f.events.statuses(second.TaskID))
	}
	// The team plan has five slots.
	team := newFixture(t, domain.PlanTeam, nil)
	for range 5 {
		team.queue(t, executions.QueueInput{Image: "img"})
		team.claim(t)
	}
	if r := team.queue(t, executions.QueueInput{Image: "img"}).QueueReason; r != "waiting for a free run slot: 5 of 5 in use" {
		t.Fatalf("sixth team run: %q", r)
	}
}

// A run that names no image gets the server's default image and base URL, and the default
// timeout within the plan's cap; an explicit timeout past the cap is refused.
func TestQueueDefaults(t *testing.T) {
	f := newFixture(t, domain.PlanFree, func(d *executions.Deps) {
		d.DefaultImage, d.DefaultBaseURL = "registry.test/suite:1", "http://app.test"
		d.PlanTimeouts = map[domain.Plan]time.Duration{domain.PlanFree: 10 * time.Minute}
	})
	e := f.queue(t, executions.QueueInput{})
	got := f.stored(t, e.TaskID)
	if got.Image != "registry.test/suite:1" || got.BaseURL != "http://app.test" || got.TimeoutSeconds != 600 ||
		!strings.HasPrefix(got.TaskID, "run-") || got.TriggeredBy != f.dev.UserID || got.ViaAPIKey || got.ProjectID != "" {
		t.Fatalf("defaults: %+v", got)
	}
	_, err := f.svc.Queue(f.ctx, f.dev, executions.QueueInput{TimeoutSeconds: 601})
	testenv.WantError(t, err, 400, "Validation error", "timeoutSeconds must be at most 600 on the free plan")
	if e := f.queue(t, executions.QueueInput{TimeoutSeconds: 600, Image: " other:2 "}); e.TimeoutSeconds != 600 || e.Image != "other:2" {
		t.Fatalf("explicit timeout and image: %d %q", e.TimeoutSeconds, e.Image)
	}
	// A call with an API key is marked as such.
	key := *f.dev
	key.APIKeyID = "k1"
	if e, err := f.svc.Queue(f.ctx, &key, executions.QueueInput{}); err != nil || !f.stored(t, e.TaskID).ViaAPIKey {
		t.Fatalf("queued with a key: %v", err)
	}
	// Without a cap the default is the house's 30 minutes.
	team := newFixture(t, domain.PlanTeam, nil)
	if e := team.queue(t, executions.QueueInput{Image: "img"}); e.TimeoutSeconds != 1800 {
		t.Fatalf("default timeout %d, want 1800", e.TimeoutSeconds)
	}
	d, err := f.svc.Defaults(f.ctx, f.viewer)
	if err != nil || d.Image != "registry.test/suite:1" || d.BaseURL != "http://app.test" || d.Timeout != 10*time.Minute {
		t.Fatalf("Defaults: %+v %v", d, err)
	}
}

// A project fills in what the request leaves out: image, folder, timeout (within the plan's
// cap), report folders, the environment's target URL and its variables, secrets unsealed for
// the container only; the request's own values win.
func TestQueueProjectDefaults(t *testing.T) {
	f := newFixture(t, domain.PlanFree, func(d *executions.Deps) {
		d.DefaultBaseURL = "http://default.test"
		d.PlanTimeouts = map[domain.Plan]time.Duration{domain.PlanFree: 20 * time.Minute}
	})
	in := executions.ProjectInput{Name: ptr("Shop"), Image: ptr("shop/e2e:2"), DefaultFolder: ptr("tests/smoke"), TimeoutSeconds: ptr(3600)}
	in.WithTargetURLs(map[string]string{"staging": "https://staging.shop.test"})
	in.WithReportFolders([]string{"/app/playwright-report", "coverage/"})
	in.WithEnvVars([]domain.EnvVar{{Key: "API_USER", Value: "bot"}, {Key: "API_TOKEN", Value: "s3cret", Secret: true}})
	proj, err := f.svc.CreateProject(f.ctx, f.dev, in)
	if err != nil {
		t.Fatal(err)
	}
	e := f.queue(t, executions.QueueInput{ProjectID: proj.ID, Environment: "staging", EnvVars: map[string]string{"API_USER": "ci", "EXTRA": "1"}})
	got := f.stored(t, e.TaskID)
	if got.ProjectID != proj.ID || got.Image != "shop/e2e:2" || got.Folder != "tests/smoke" || got.TimeoutSeconds != 1200 ||
		got.BaseURL != "https://staging.shop.test" || !slices.Equal(got.ReportFolders, []string{"playwright-report", "coverage"}) ||
		!slices.Equal(got.EnvNames, []string{"API_TOKEN", "API_USER", "EXTRA"}) {
		t.Fatalf("project run: %+v", got)
	}
	if strings.Contains(got.EnvCipher, "s3cret") {
		t.Fatal("the secret is stored in clear")
	}
	env, err := control.OpenEnv(f.box, got.EnvCipher)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(env.Vars) != "map[API_TOKEN:s3cret API_USER:ci EXTRA:1]" || !slices.Equal(env.Secrets, []string{"API_TOKEN"}) {
		t.Fatalf("the container's variables: %v secrets %v", env.Vars, env.Secrets)
	}
	// The request's own values win; an environment without a target URL gets the default.
	e = f.queue(t, executions.QueueInput{ProjectID: proj.ID, Image: "mine:1", Folder: "tests/full", TimeoutSeconds: 60, Environment: "production"})
	if e.Image != "mine:1" || e.Folder != "tests/full" || e.TimeoutSeconds != 60 || e.BaseURL != "http://default.test" {
		t.Fatalf("request over project: %+v", e)
	}
	// A project without an image leaves the image to the request.
	bare, err := f.svc.UpdateProject(f.ctx, f.dev, proj.ID, executions.ProjectInput{Image: ptr("")})
	if err != nil || bare.Image != "" {
		t.Fatalf("clearing the image: %+v %v", bare, err)
	}
	_, err = f.svc.Queue(f.ctx, f.dev, executions.QueueInput{ProjectID: proj.ID})
	testenv.WantError(t, err, 400, "Missing required fields", "image is required")
}

func ptr[T any](v T) *T { return &v }

// The server's image patterns and the organization's own narrow what may run (403), and the
// refusal does not tell which images are allowed.
func TestQueueImagePolicy(t *testing.T) {
	f := newFixture(t, domain.PlanTeam, func(d *executions.Deps) { d.AllowedImages = []string{"registry.test/*"} })
	_, err := f.svc.Queue(f.ctx, f.dev, executions.QueueInput{Image: "docker.io/evil:1"})
	de := testenv.WantError(t, err, 403, "Image not allowed", `The image "docker.io/evil:1" is not allowed by this server's or your organization's image policy`)
	if strings.Contains(de.Message, "registry.test") {
		t.Fatalf("the refusal tells the policy: %s", de.Message)
	}
	f.queue(t, executions.QueueInput{Image: "registry.test/other:1"})
	if err := f.st.Organizations().SetAllowedImages(f.ctx, f.org.ID, []string{"registry.test/team/*"}); err != nil {
		t.Fatal(err)
	}
	_, err = f.svc.Queue(f.ctx, f.dev, executions.QueueInput{Image: "registry.test/other:1"})
	testenv.WantError(t, err, 403, "Image not allowed", "registry.test/other:1")
	f.queue(t, executions.QueueInput{Image: "registry.test/team/suite:1"})
	if n := f.count(t); n != 2 {
		t.Fatalf("%d runs, want 2", n)
	}
}

// A taskId is unique within an organization (409), not across them; a generated one is
// readable and never collides.
func TestQueueTaskIDs(t *testing.T) {
	f := newFixture(t, domain.PlanTeam, nil)
	e := f.queue(t, executions.QueueInput{Image: "img", TaskID: "nightly-1"})
	if e.TaskID != "nightly-1" {
		t.Fatalf("taskId %q", e.TaskID)
	}
	_, err := f.svc.Queue(f.ctx, f.admin, executions.QueueInput{Image: "img", TaskID: "nightly-1"})
	testenv.WantError(t, err, 409, "Task ID already in use", "An execution with this taskId exists in your organization")
	other := sqlitetest.Org(t, f.st, "Other Co", domain.PlanTeam, f.clock.Now())
	if _, err := f.svc.Queue(f.ctx, sqlitetest.As(sqlitetest.Member(t, f.st, other, "o@other.test", domain.RoleAdmin)),
		executions.QueueInput{Image: "img", TaskID: "nightly-1"}); err != nil {
		t.Fatalf("another organization's nightly-1: %v", err)
	}
	a, b := f.queue(t, executions.QueueInput{Image: "img"}), f.queue(t, executions.QueueInput{Image: "img"})
	if !strings.HasPrefix(a.TaskID, "run-") || a.TaskID == b.TaskID || !domain.ValidTaskID(a.TaskID) {
		t.Fatalf("generated taskIds %q %q", a.TaskID, b.TaskID)
	}
}

// Another organization's runs and projects do not exist for the caller: every lookup is the
// same 404 as an unknown one, and nothing of them changes.
func TestTenantIsolation(t *testing.T) {
	f := newFixture(t, domain.PlanTeam, nil)
	proj, err := f.svc.CreateProject(f.ctx, f.admin, executions.ProjectInput{Name: ptr("Mine"), Image: ptr("img")})
	if err != nil {
		t.Fatal(err)
	}
	e := f.queue(t, executions.QueueInput{ProjectID: proj.ID})
	if err := f.st.Logs().Append(f.ctx, e.ID, 1, "secret log line\n"); err != nil {
		t.Fatal(err)
	}
	other := sqlitetest.Org(t, f.st, "Other Co", domain.PlanTeam, f.clock.Now())
	intruder := sqlitetest.As(sqlitetest.Member(t, f.st, other, "admin@other.test", domain.RoleAdmin))

	const runMsg, projMsg = "No such execution in your organization", "No such project in your organization"
	for _, taskID := range []string{e.TaskID, "no-such-run", "../" + e.TaskID} {
		_, err := f.svc.Get(f.ctx, intruder, taskID)
		testenv.WantError(t, err, 404, "Execution not found", runMsg)
		_, err = f.svc.GetListed(f.ctx, intruder, taskID)
		testenv.WantError(t, err, 404, "Execution not found", runMsg)
		_, err = f.svc.FindForReport(f.ctx, other.ID, taskID)
		testenv.WantError(t, err, 404, "Execution not found", runMsg)
		_, err = f.svc.Cancel(f.ctx, intruder, taskID)
		testenv.WantError(t, err, 404, "Execution not found", runMsg)
		testenv.WantError(t, f.svc.Delete(f.ctx, intruder, taskID), 404, "Execution not found", runMsg)
	}
	_, err = f.svc.ReadLog(f.ctx, intruder, e, 0, -1, func([]byte) error { t.Fatal("another organization's log was read"); return nil })
	testenv.WantError(t, err, 404, "Execution not found", runMsg)
	if runs, total, err := f.svc.List(f.ctx, intruder, store.ExecutionFilter{Limit: 50}); err != nil || total != 0 || len(runs) != 0 {
		t.Fatalf("the intruder lists %d runs (%d) %v", len(runs), total, err)
	}
	if m, err := f.svc.Insights(f.ctx, intruder, "img"); err != nil || m.SampleSize != 0 {
		t.Fatalf("the intruder's metrics: %+v %v", m, err)
	}

	_, err = f.svc.Queue(f.ctx, intruder, executions.QueueInput{ProjectID: proj.ID})
	testenv.WantError(t, err, 404, "Project not found", projMsg)
	_, err = f.svc.GetProject(f.ctx, intruder, proj.ID)
	testenv.WantError(t, err, 404, "Project not found", projMsg)
	_, err = f.svc.UpdateProject(f.ctx, intruder, proj.ID, executions.ProjectInput{Name: ptr("Taken")})
	testenv.WantError(t, err, 404, "Project not found", projMsg)
	testenv.WantError(t, f.svc.DeleteProject(f.ctx, intruder, proj.ID), 404, "Project not found", projMsg)
	if list, err := f.svc.ListProjects(f.ctx, intruder); err != nil || len(list) != 0 {
		t.Fatalf("the intruder lists projects %v %v", list, err)
	}
	_, err = f.svc.TestsStructure(f.ctx, intruder, "", proj.ID)
	testenv.WantError(t, err, 404, "Project not found", projMsg)

	// Nothing of the owner's changed.
	if got := f.stored(t, e.TaskID); got.Status != domain.ExecPending || got.CancelRequested {
		t.Fatalf("the run after the intruder: %s cancel %v", got.Status, got.CancelRequested)
	}
	if got, err := f.svc.GetProject(f.ctx, f.viewer, proj.ID); err != nil || got.Name != "Mine" {
		t.Fatalf("the project after the intruder: %+v %v", got, err)
	}
	var log strings.Builder
	if _, err := f.svc.ReadLog(f.ctx, f.viewer, e, 0, -1, func(p []byte) error { log.Write(p); return nil }); err != nil || log.String() != "secret log line\n" {
		t.Fatalf("the owner's log: %q %v", log.String(), err)
	}
}

// A pending run is cancelled at once and announced; a running one is flagged for its runner,
// which is told to stop it; a finished one cannot be cancelled (409).
func TestCancel(t *testing.T) {
	f := newFixture(t, domain.PlanTeam, nil)
	pending := f.queue(t, executions.QueueInput{Image: "img"})
	got, err := f.svc.Cancel(f.ctx, f.dev, pending.TaskID)
	if err != nil || got.Status != domain.ExecCancelled || got.FinishedAt == nil {
		t.Fatalf("cancel of a pending run: %+v %v", got, err)
	}
	if st := f.events.statuses(pending.TaskID); !slices.Equal(st, []domain.ExecStatus{domain.ExecPending, domain.ExecCancelled}) {
		t.Fatalf("announced %v", st)
	}
	if len(f.stopped) != 0 {
		t.Fatalf("a pending run's cancel stopped %v", f.stopped)
	}
	_, err = f.svc.Cancel(f.ctx, f.dev, pending.TaskID)
	testenv.WantError(t, err, 409, "Execution already finished", "The execution has already ended with CANCELLED")

	f.clock.Advance(time.Second)
	running := f.queue(t, executions.QueueInput{Image: "img"})
	f.claim(t)
	got, err = f.svc.Cancel(f.ctx, f.admin, running.TaskID)
	if err != nil || got.Status != domain.ExecRunning || !got.CancelRequested {
		t.Fatalf("cancel of a running run: %+v %v", got, err)
	}
	if !slices.Equal(f.stopped, []string{running.ID}) {
		t.Fatalf("stopped %v, want the running run", f.stopped)
	}
	if err := f.st.Executions().Finish(f.ctx, running.ID, "runner-1", store.Finish{Status: domain.ExecFailed, FinishedAt: f.clock.Now()}); err != nil {
		t.Fatal(err)
	}
	_, err = f.svc.Cancel(f.ctx, f.admin, running.TaskID)
	testenv.WantError(t, err, 409, "Execution already finished", "ended with FAILED")
	_, err = f.svc.Cancel(f.ctx, f.admin, "no-such-run")
	testenv.WantError(t, err, 404, "Execution not found", "")
}

// Deleting a run removes it and its log (an active one is cancelled and stopped first); it
// still counts against the period's runs.
func TestDelete(t *testing.T) {
	f := newFixture(t, domain.PlanTeam, nil)
	e := f.queue(t, executions.QueueInput{Image: "img"})
	f.claim(t)
	if err := f.st.Logs().Append(f.ctx, e.ID, 1, "line\n"); err != nil {
		t.Fatal(err)
	}
	if err := f.svc.Delete(f.ctx, f.dev, e.TaskID); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.stopped, []string{e.ID}) {
		t.Fatalf("stopped %v", f.stopped)
	}
	_, err := f.svc.Get(f.ctx, f.dev, e.TaskID)
	testenv.WantError(t, err, 404, "Execution not found", "")
	if n, err := f.st.Logs().Size(f.ctx, e.ID); err != nil || n != 0 {
		t.Fatalf("log left: %d bytes %v", n, err)
	}
	if n, _ := f.svc.CountRunsSince(f.ctx, f.org.ID, time.Time{}); n != 1 {
		t.Fatalf("%d runs counted after the delete, want 1", n)
	}
	testenv.WantError(t, f.svc.Delete(f.ctx, f.dev, e.TaskID), 404, "Execution not found", "")
}

// The run list filters by status, project, image and labels, newest first with the filter's
// total; a filter no run could match is a 400 naming it.
func TestListFilters(t *testing.T) {
	f := newFixture(t, domain.PlanTeam, nil)
	proj, err := f.svc.CreateProject(f.ctx, f.dev, executions.ProjectInput{Name: ptr("P"), Image: ptr("img-p")})
	if err != nil {
		t.Fatal(err)
	}
	queue := func(in executions.QueueInput) string {
		f.clock.Advance(time.Second)
		return f.queue(t, in).TaskID
	}
	a := queue(executions.QueueInput{Image: "img-a", Labels: map[string]string{"suite": "smoke"}})
	f.claim(t) // a is RUNNING
	b := queue(executions.QueueInput{ProjectID: proj.ID, Labels: map[string]string{"suite": "full", "branch": "main"}})
	c := queue(executions.QueueInput{Image: "img-c", Labels: map[string]string{"suite": "full"}})
	if _, err := f.svc.Cancel(f.ctx, f.dev, c); err != nil {
		t.Fatal(err)
	}
	list := func(flt store.ExecutionFilter) []string {
		t.Helper()
		if flt.Limit == 0 {
			flt.Limit = 50
		}
		runs, total, err := f.svc.List(f.ctx, f.viewer, flt)
		if err != nil {
			t.Fatalf("list %+v: %v", flt, err)
		}
		var ids []string
		for _, r := range runs {
			ids = append(ids, r.TaskID)
		}
		if total < len(ids) {
			t.Fatalf("total %d below the page's %d", total, len(ids))
		}
		return ids
	}
	for _, c := range []struct {
		name string
		f    store.ExecutionFilter
		want []string
	}{
		{"all, newest first", store.ExecutionFilter{}, []string{c, b, a}},
		{"pending", store.ExecutionFilter{Statuses: []domain.ExecStatus{domain.ExecPending}}, []string{b}},
		{"running or cancelled", store.ExecutionFilter{Statuses: []domain.ExecStatus{domain.ExecRunning, domain.ExecCancelled, domain.ExecRunning}}, []string{c, a}},
		{"project", store.ExecutionFilter{ProjectID: proj.ID}, []string{b}},
		{"image", store.ExecutionFilter{Image: "img-a"}, []string{a}},
		{"label", store.ExecutionFilter{Labels: []domain.Label{{Key: "suite", Value: "full"}}}, []string{c, b}},
		{"labels", store.ExecutionFilter{Labels: []domain.Label{{Key: "suite", Value: "full"}, {Key: "branch", Value: "main"}}}, []string{b}},
		{"no match", store.ExecutionFilter{Image: "img-z"}, nil},
		{"page", store.ExecutionFilter{Limit: 1, Offset: 1}, []string{b}},
	} {
		if got := list(c.f); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	_, total, _ := f.svc.List(f.ctx, f.dev, store.ExecutionFilter{Limit: 1})
	if total != 3 {
		t.Errorf("total of a one-run page: %d, want 3", total)
	}

	flt := store.ExecutionFilter{Statuses: []domain.ExecStatus{domain.ExecFailed, domain.ExecFailed, domain.ExecPassed}}
	if err := executions.CheckFilter(&flt); err != nil || !slices.Equal(flt.Statuses, []domain.ExecStatus{domain.ExecFailed, domain.ExecPassed}) {
		t.Fatalf("repeated statuses: %v %v", flt.Statuses, err)
	}
	tooMany := make([]domain.Label, domain.MaxLabels+1)
	for i := range tooMany {
		tooMany[i] = domain.Label{Key: fmt.Sprintf("k%d", i), Value: "v"}
	}
	for _, c := range []struct {
		f   store.ExecutionFilter
		msg string
	}{
		{store.ExecutionFilter{Statuses: []domain.ExecStatus{"DONE"}}, `unknown status "DONE"`},
		{store.ExecutionFilter{ProjectID: "shop"}, `projectId filter "shop" is not a project ID (24 hexadecimal characters)`},
		{store.ExecutionFilter{Image: "Bad Image"}, `image filter "Bad Image" is not a valid image reference`},
		{store.ExecutionFilter{Labels: tooMany}, fmt.Sprintf("at most %d label filters", domain.MaxLabels)},
		{store.ExecutionFilter{Labels: []domain.Label{{Key: "Bad Key", Value: "v"}}}, `label filter "Bad Key:v" must be key:value`},
	} {
		_, _, err := f.svc.List(f.ctx, f.dev, c.f)
		testenv.WantError(t, err, 400, "Validation error", c.msg)
	}
}

// Projects: names are required and unique in the organization, the plan's maxProjects holds,
// every setting is checked, and secrets are sealed and kept when sent back masked.
func TestProjects(t *testing.T) {
	f := newFixture(t, domain.PlanFree, nil) // one project
	_, err := f.svc.CreateProject(f.ctx, f.dev, executions.ProjectInput{Name: ptr("  ")})
	testenv.WantError(t, err, 400, "Missing required fields", "name is required")
	bad := func(edit func(*executions.ProjectInput), msg string) {
		t.Helper()
		in := executions.ProjectInput{Name: ptr("P")}
		edit(&in)
		_, err := f.svc.CreateProject(f.ctx, f.dev, in)
		testenv.WantError(t, err, 400, "Validation error", msg)
	}
	bad(func(in *executions.ProjectInput) { in.Name = ptr("a\u202eb") }, "name must have 1 to 100 visible characters")
	bad(func(in *executions.ProjectInput) { in.Image = ptr("Not An Image") }, "is not a valid image reference")
	bad(func(in *executions.ProjectInput) { in.DefaultFolder = ptr("../x") }, "folder must not contain ..")
	bad(func(in *executions.ProjectInput) { in.TimeoutSeconds = ptr(86401) }, "timeoutSeconds must be between 1 and 86400")
	bad(func(in *executions.ProjectInput) { in.WithTargetURLs(map[string]string{"qa": "http://x"}) }, "targetUrls keys must be development, staging or production")
	bad(func(in *executions.ProjectInput) { in.WithTargetURLs(map[string]string{"staging": "ftp://x"}) }, "targetUrls.staging must be an http(s) URL")
	bad(func(in *executions.ProjectInput) { in.WithReportFolders([]string{"../x"}) }, "report folders must be paths under /app")
	bad(func(in *executions.ProjectInput) { in.WithReportFolders([]string{"~abc"}) }, "report folders must not start with ~")
	bad(func(in *executions.ProjectInput) { in.WithReportFolders(make([]string, 21)) }, "at most 20 report folders")
	bad(func(in *executions.ProjectInput) {
		in.WithEnvVars([]domain.EnvVar{{Key: "A", Value: "1"}, {Key: "A", Value: "2"}})
	}, "environment variable A is given twice")
	reserved := executions.ProjectInput{Name: ptr("P")}
	reserved.WithEnvVars([]domain.EnvVar{{Key: "CI", Value: "1"}})
	_, err = f.svc.CreateProject(f.ctx, f.dev, reserved)
	testenv.WantError(t, err, 400, "Reserved variable", "environment variable CI is reserved by the container contract")
	bad(func(in *executions.ProjectInput) {
		in.WithEnvVars([]domain.EnvVar{{Key: "T", Value: executions.Masked, Secret: true}})
	}, "secret T has no stored value to keep; send its value")

	in := executions.ProjectInput{Name: ptr(" Shop ")}
	in.WithEnvVars([]domain.EnvVar{{Key: "TOKEN", Value: "s3cret", Secret: true}, {Key: "USER", Value: "bot"}})
	proj, err := f.svc.CreateProject(f.ctx, f.dev, in)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := f.st.Projects().Get(f.ctx, f.org.ID, proj.ID)
	if err != nil || stored.Name != "Shop" || len(stored.EnvVars) != 2 || stored.EnvVars[0].Value == "s3cret" {
		t.Fatalf("stored project: %+v %v", stored, err)
	}
	if plain, err := f.box.Open(stored.EnvVars[0].Value); err != nil || string(plain) != "s3cret" {
		t.Fatalf("the sealed secret opens to %q %v", plain, err)
	}
	_, err = f.svc.CreateProject(f.ctx, f.dev, executions.ProjectInput{Name: ptr("Second")})
	testenv.WantError(t, err, 403, "Project limit reached", "The plan's project limit is reached")

	// Sent back masked, the secret keeps its value; a new value replaces it.
	up := executions.ProjectInput{}
	up.WithEnvVars([]domain.EnvVar{{Key: "TOKEN", Value: executions.Masked, Secret: true}})
	if _, err := f.svc.UpdateProject(f.ctx, f.dev, proj.ID, up); err != nil {
		t.Fatal(err)
	}
	kept, _ := f.st.Projects().Get(f.ctx, f.org.ID, proj.ID)
	if len(kept.EnvVars) != 1 || kept.EnvVars[0].Value != stored.EnvVars[0].Value {
		t.Fatalf("masked secret: %+v", kept.EnvVars)
	}

	// After a delete the plan has room again; names are unique in the organization.
	if err := f.svc.DeleteProject(f.ctx, f.dev, proj.ID); err != nil {
		t.Fatal(err)
	}
	testenv.WantError(t, f.svc.DeleteProject(f.ctx, f.dev, proj.ID), 404, "Project not found", "")
	team := newFixture(t, domain.PlanTeam, nil)
	if _, err := team.svc.CreateProject(team.ctx, team.dev, executions.ProjectInput{Name: ptr("Shop")}); err != nil {
		t.Fatal(err)
	}
	_, err = team.svc.CreateProject(team.ctx, team.dev, executions.ProjectInput{Name: ptr("Shop")})
	testenv.WantError(t, err, 409, "Project name already in use", "Another project of your organization has this name")
	second, err := team.svc.CreateProject(team.ctx, team.dev, executions.ProjectInput{Name: ptr("Other")})
	if err != nil {
		t.Fatal(err)
	}
	_, err = team.svc.UpdateProject(team.ctx, team.dev, second.ID, executions.ProjectInput{Name: ptr("Shop")})
	testenv.WantError(t, err, 409, "Project name already in use", "")
}
