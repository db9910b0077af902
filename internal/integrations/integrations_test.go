package integrations

// The service against fake Linear and Monday.com APIs (trackertest) speaking their GraphQL
// wire protocol over HTTP, on a real SQLite store: settings and key checks, tickets and their
// descriptions, and every way a tracker can fail (refused key, 500, timeout, malformed answer,
// GraphQL and legacy errors), with the key kept out of every error and log line.

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"verdict/internal/crypto/secretbox"
	"verdict/internal/domain"
	"verdict/internal/httpkind"
	"verdict/internal/identity"
	"verdict/internal/integrations/trackertest"
	"verdict/internal/store"
	"verdict/internal/store/sqlstore"
)

const (
	linearKey = "lin_api_0123456789abcdefTOPSECRET"
	mondayKey = "eyJhbGciOiJIUzI1NiJ9.monday-TOPSECRET-token"
	reportURL = "https://verdict.example/reports/org/run-1/playwright-report/"
)

type fixture struct {
	t      *testing.T
	ctx    context.Context
	st     *sqlstore.Store
	s      *Service
	linear *trackertest.Linear
	monday *trackertest.Monday
	logs   *syncBuffer
	events *recordedEvents
	org    *domain.Organization
	admin  *identity.Principal
	dev    *identity.Principal
	viewer *identity.Principal
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

type recordedEvents struct {
	mu   sync.Mutex
	runs []*domain.Execution
}

func (r *recordedEvents) ExecutionUpdated(e *domain.Execution) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.runs = append(r.runs, e)
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	st, err := sqlstore.Open(ctx, "", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	org := &domain.Organization{ID: domain.NewID(), Name: "Acme", Slug: "acme", Plan: domain.PlanTeam, CreatedAt: time.Now()}
	if err := st.Organizations().Create(ctx, org); err != nil {
		t.Fatal(err)
	}
	box, err := secretbox.New([]byte(strings.Repeat("t", 32)))
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, ctx: ctx, st: st, org: org, logs: &syncBuffer{}, events: &recordedEvents{},
		linear: trackertest.NewLinear(t, linearKey), monday: trackertest.NewMonday(t, mondayKey)}
	f.linear.Delay, f.monday.Delay = 2*time.Second, 2*time.Second
	f.s = New(Deps{Store: st, Box: box, Endpoints: map[string]Endpoint{linearP: {URL: f.linear.URL}, mondayP: {URL: f.monday.URL}}, Timeout: 300 * time.Millisecond,
		ReportURL: func(_ context.Context, e *domain.Execution) string {
			if e.TaskID == "no-report" {
				return ""
			}
			return reportURL
		},
		Events: f.events, Log: slog.New(slog.NewTextHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	for _, r := range []domain.Role{domain.RoleAdmin, domain.RoleDeveloper, domain.RoleViewer} {
		p := &identity.Principal{UserID: domain.NewID(), OrgID: org.ID, Role: r}
		switch r {
		case domain.RoleAdmin:
			f.admin = p
		case domain.RoleDeveloper:
			f.dev = p
		default:
			f.viewer = p
		}
	}
	t.Cleanup(func() {
		if l := f.logs.String(); strings.Contains(l, "TOPSECRET") {
			t.Errorf("a key appears in the log:\n%s", l)
		}
	})
	return f
}

func ptr[T any](v T) *T { return &v }

// The registered trackers' providers.
const (
	linearP = "linear"
	mondayP = "monday"
)

// linearInput and mondayInput are Input for each tracker, by its settings' names.
type linearInput struct {
	APIKey  *string
	TeamID  string
	Enabled *bool
}

func (l linearInput) in() Input {
	return Input{APIKey: l.APIKey, Values: map[string]string{"teamId": l.TeamID}, Enabled: l.Enabled}
}

type mondayInput struct {
	APIKey           *string
	BoardID, GroupID string
}

func (m mondayInput) in() Input {
	return Input{APIKey: m.APIKey, Values: map[string]string{"boardId": m.BoardID, "groupId": m.GroupID}}
}

func linearSettings(configured, enabled bool, team string) Settings {
	return Settings{Configured: configured, Enabled: enabled, Values: map[string]string{"teamId": team}}
}

func sameSettings(got *Settings, want Settings) bool {
	return got != nil && got.Configured == want.Configured && got.Enabled == want.Enabled && maps.Equal(got.Values, want.Values)
}

// wantError fails unless err is a *domain.Error with status and code, and never carries a key.
func wantError(t *testing.T, what string, err error, status int, code string) *domain.Error {
	t.Helper()
	var de *domain.Error
	if !errors.As(err, &de) || httpkind.Status(de.Kind) != status || de.Code != code {
		t.Fatalf("%s: got %v, want %d %s", what, err, status, code)
	}
	if strings.Contains(de.Error(), "TOPSECRET") {
		t.Fatalf("%s: the error shows the key: %v", what, de)
	}
	return de
}

// failedRun stores a finished FAILED run with two failed tests, a passed one and an analysis.
func (f *fixture) failedRun(task string) *domain.Execution {
	f.t.Helper()
	started := time.Date(2026, 3, 10, 9, 0, 0, 0, time.UTC)
	finished := started.Add(5200 * time.Millisecond)
	tests := []domain.TestResult{
		{Name: "logs in", Suite: "auth", Status: domain.TestPassed, DurationMs: 120},
		{Name: "rejects a bad password", Suite: "auth", Status: domain.TestFailed, DurationMs: 97,
			Error: "expected status 401, got 500\n    at auth.spec.ts:12"},
		{Name: "lists *runs* [x](http://evil.example)", Suite: "ui", Status: domain.TestFailed, DurationMs: 5012,
			Error: "locator('#runs') not found: ```timeout``` 5000ms exceeded"},
	}
	exit := 1
	e := &domain.Execution{ID: domain.NewID(), OrganizationID: f.org.ID, TaskID: task, Image: "verdict-examples/fail:latest",
		Folder: "all", TimeoutSeconds: 600, Status: domain.ExecFailed, ExitCode: &exit, Tests: tests,
		Summary: domain.Summarize(tests), QueuedAt: started, StartedAt: &started, FinishedAt: &finished,
		Analysis: &domain.Analysis{Status: domain.AnalysisCompleted, Provider: "builtin", Model: "builtin", Category: "product_bug",
			Summary: "The login API answers 500", RootCause: "A server error in POST /login", SuggestedFix: "Look at the API's log",
			Confidence: 0.8, CreatedAt: finished}}
	if err := f.st.Executions().Create(f.ctx, e); err != nil {
		f.t.Fatal(err)
	}
	return e
}

func (f *fixture) saveLinear() {
	f.t.Helper()
	if _, err := f.s.Save(f.ctx, f.admin, linearP, linearInput{APIKey: ptr(linearKey), TeamID: trackertest.Team}.in()); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) saveMonday(group string) {
	f.t.Helper()
	if _, err := f.s.Save(f.ctx, f.admin, mondayP, mondayInput{APIKey: ptr(mondayKey), BoardID: trackertest.Board, GroupID: group}.in()); err != nil {
		f.t.Fatal(err)
	}
}

func TestLinearSettings(t *testing.T) {
	f := newFixture(t)
	got, err := f.s.Settings(f.ctx, f.viewer, linearP)
	if err != nil || !sameSettings(got, Settings{Values: map[string]string{}}) {
		t.Fatalf("before any save: %+v, %v", got, err)
	}
	// Only admins save; a refused key, or a tracker that fails, saves nothing.
	wantError(t, "developer saves", func() error {
		_, err := f.s.Save(f.ctx, f.dev, linearP, linearInput{APIKey: ptr(linearKey), TeamID: trackertest.Team}.in())
		return err
	}(), 403, "Forbidden")
	wantError(t, "no key yet", func() error {
		_, err := f.s.Save(f.ctx, f.admin, linearP, linearInput{TeamID: trackertest.Team}.in())
		return err
	}(), 400, "Missing required fields")
	wantError(t, "no team", func() error {
		_, err := f.s.Save(f.ctx, f.admin, linearP, linearInput{APIKey: ptr(linearKey)}.in())
		return err
	}(), 400, "Missing required fields")
	wantError(t, "a team ID with spaces", func() error {
		_, err := f.s.Save(f.ctx, f.admin, linearP, linearInput{APIKey: ptr(linearKey), TeamID: "my team"}.in())
		return err
	}(), 400, "Validation error")
	wantError(t, "a refused key", func() error {
		_, err := f.s.Save(f.ctx, f.admin, linearP, linearInput{APIKey: ptr("lin_api_wrong_TOPSECRET"), TeamID: trackertest.Team}.in())
		return err
	}(), 400, "Invalid API key")
	for _, c := range []struct {
		mode   trackertest.Mode
		status int
		code   string
		says   string
	}{
		{trackertest.Fail500, 502, "Tracker error", "HTTP 500 Internal Server Error"},
		{trackertest.Slow, 504, "Tracker timeout", "did not answer within 300ms"},
		{trackertest.Malformed, 502, "Tracker error", "could not be read"},
	} {
		f.linear.Set(c.mode)
		_, err := f.s.Save(f.ctx, f.admin, linearP, linearInput{APIKey: ptr(linearKey), TeamID: trackertest.Team}.in())
		de := wantError(t, string(c.mode), err, c.status, c.code)
		if !strings.Contains(de.Message, c.says) || !strings.Contains(de.Message, "nothing was saved") {
			t.Errorf("%s: message %q, want it to say %q and that nothing was saved", c.mode, de.Message, c.says)
		}
	}
	f.linear.Set(trackertest.OK)
	if _, err := f.st.Integrations().Get(f.ctx, f.org.ID, linearP); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("something was stored after failed saves: %v", err)
	}

	saved, err := f.s.Save(f.ctx, f.admin, linearP, linearInput{APIKey: ptr("  " + linearKey + "\n"), TeamID: trackertest.Team}.in())
	if err != nil || !sameSettings(saved, linearSettings(true, true, trackertest.Team)) {
		t.Fatalf("save: %+v, %v", saved, err)
	}
	reqs := f.linear.Requests()
	last := reqs[len(reqs)-1]
	if last.OperationName != "Viewer" || !strings.Contains(last.Query, "viewer") || last.Header.Get("Authorization") != linearKey {
		t.Fatalf("the key check: %+v", last)
	}
	// The key is sealed at rest.
	in, err := f.st.Integrations().Get(f.ctx, f.org.ID, linearP)
	if err != nil || strings.Contains(in.KeyCipher, "TOPSECRET") || in.KeyCipher == "" {
		t.Fatalf("stored: %+v, %v", in, err)
	}
	// enabled: false keeps the credentials, without asking Linear; so does a save without a key.
	n := len(f.linear.Requests())
	off, err := f.s.Save(f.ctx, f.admin, linearP, linearInput{TeamID: trackertest.Team, Enabled: ptr(false)}.in())
	if err != nil || !sameSettings(off, linearSettings(true, false, trackertest.Team)) {
		t.Fatalf("disable: %+v, %v", off, err)
	}
	if after, _ := f.st.Integrations().Get(f.ctx, f.org.ID, linearP); after.KeyCipher != in.KeyCipher {
		t.Fatal("disabling changed the stored key")
	}
	if len(f.linear.Requests()) != n {
		t.Fatal("a save without a key asked Linear")
	}
	if got, _ := f.s.Settings(f.ctx, f.viewer, linearP); got.Enabled || !got.Configured {
		t.Fatalf("viewer reads %+v", got)
	}
	audit, err := f.st.Audit().List(f.ctx, f.org.ID, 10)
	if err != nil || len(audit) != 2 || audit[0].Action != "integration.updated" || audit[0].Details["enabled"] != false {
		t.Fatalf("audit: %+v, %v", audit, err)
	}
	for _, a := range audit {
		if strings.Contains(a.Action+a.TargetID+a.TargetType, "TOPSECRET") {
			t.Fatal("the audit log shows the key")
		}
	}
}

func TestMondaySettings(t *testing.T) {
	f := newFixture(t)
	wantError(t, "a refused token", func() error {
		_, err := f.s.Save(f.ctx, f.admin, mondayP, mondayInput{APIKey: ptr("bad-TOPSECRET"), BoardID: trackertest.Board}.in())
		return err
	}(), 400, "Invalid API key")
	wantError(t, "a board that is not a number", func() error {
		_, err := f.s.Save(f.ctx, f.admin, mondayP, mondayInput{APIKey: ptr(mondayKey), BoardID: "board-1"}.in())
		return err
	}(), 400, "Validation error")
	wantError(t, "viewer saves", func() error {
		_, err := f.s.Save(f.ctx, f.viewer, mondayP, mondayInput{APIKey: ptr(mondayKey), BoardID: trackertest.Board}.in())
		return err
	}(), 403, "Forbidden")
	saved, err := f.s.Save(f.ctx, f.admin, mondayP, mondayInput{APIKey: ptr(mondayKey), BoardID: trackertest.Board, GroupID: "topics"}.in())
	if err != nil || !sameSettings(saved, Settings{Configured: true, Enabled: true, Values: map[string]string{"boardId": trackertest.Board, "groupId": "topics"}}) {
		t.Fatalf("save: %+v, %v", saved, err)
	}
	reqs := f.monday.Requests()
	last := reqs[len(reqs)-1]
	if last.OperationName != "Me" || !strings.Contains(last.Query, "account") || last.Header.Get("Authorization") != mondayKey ||
		last.Header.Get("API-Version") == "" {
		t.Fatalf("the token check: %+v", last)
	}
	in, _ := f.st.Integrations().Get(f.ctx, f.org.ID, mondayP)
	if in.Settings["accountSlug"] != "acme" {
		t.Fatalf("the account's slug was not kept: %+v", in.Settings)
	}
	// A save without a token keeps the token and the slug; without a group, the group is gone.
	saved, err = f.s.Save(f.ctx, f.admin, mondayP, mondayInput{BoardID: trackertest.Board}.in())
	if err != nil || saved.Values["groupId"] != "" || !saved.Enabled {
		t.Fatalf("second save: %+v, %v", saved, err)
	}
	if in2, _ := f.st.Integrations().Get(f.ctx, f.org.ID, mondayP); in2.KeyCipher != in.KeyCipher || in2.Settings["accountSlug"] != "acme" {
		t.Fatalf("second save changed the token or the slug: %+v", in2)
	}
}

func TestRemove(t *testing.T) {
	f := newFixture(t)
	f.saveLinear()
	run := f.failedRun("run-1")
	if _, err := f.s.CreateTicket(f.ctx, f.dev, linearP, TicketInput{TaskID: run.TaskID}); err != nil {
		t.Fatal(err)
	}
	_, err := f.s.Remove(f.ctx, f.dev, linearP)
	wantError(t, "developer removes", err, 403, "Forbidden")
	_, err = f.s.Remove(f.ctx, f.admin, "trello")
	wantError(t, "unknown provider", err, 400, "Unknown provider")
	removed, err := f.s.Remove(f.ctx, f.admin, linearP)
	if err != nil || !removed {
		t.Fatalf("remove: %v, %v", removed, err)
	}
	if got, _ := f.s.Settings(f.ctx, f.viewer, linearP); got.Configured || got.Enabled {
		t.Fatalf("after remove: %+v", got)
	}
	for _, p := range domain.IntegrationProviders {
		if removed, err := f.s.Remove(f.ctx, f.admin, p); err != nil || removed {
			t.Fatalf("removing %s with nothing stored: %v, %v", p, removed, err)
		}
	}
	if e, _ := f.st.Executions().Get(f.ctx, f.org.ID, run.TaskID); len(e.Tickets) != 1 {
		t.Fatalf("the run's ticket went with the integration: %+v", e.Tickets)
	}
	_, err = f.s.CreateTicket(f.ctx, f.dev, linearP, TicketInput{TaskID: run.TaskID})
	wantError(t, "after remove", err, 400, "Integration not configured")
}

func TestLinearIssue(t *testing.T) {
	f := newFixture(t)
	run := f.failedRun("nightly-42")
	_, err := f.s.CreateTicket(f.ctx, f.dev, linearP, TicketInput{TaskID: run.TaskID})
	wantError(t, "not configured", err, 400, "Integration not configured")
	f.saveLinear()

	_, err = f.s.CreateTicket(f.ctx, f.viewer, linearP, TicketInput{TaskID: "nope"})
	wantError(t, "a viewer, past the role", err, 404, "Execution not found")
	_, err = f.s.CreateTicket(f.ctx, f.dev, linearP, TicketInput{})
	wantError(t, "no taskId", err, 400, "Missing required fields")
	_, err = f.s.CreateTicket(f.ctx, f.dev, linearP, TicketInput{TaskID: "nope"})
	wantError(t, "unknown run", err, 404, "Execution not found")
	_, err = f.s.CreateTicket(f.ctx, f.dev, linearP, TicketInput{TaskID: "../x"})
	wantError(t, "a taskId of another shape", err, 404, "Execution not found")
	_, err = f.s.CreateTicket(f.ctx, f.dev, linearP, TicketInput{TaskID: run.TaskID, Title: "two\nlines"})
	wantError(t, "a title on two lines", err, 400, "Validation error")
	_, err = f.s.CreateTicket(f.ctx, f.dev, linearP, TicketInput{TaskID: run.TaskID, Description: strings.Repeat("x", maxDescriptionBytes+1)})
	wantError(t, "a description too long", err, 400, "Validation error")
	pending := &domain.Execution{ID: domain.NewID(), OrganizationID: f.org.ID, TaskID: "pending-1", Image: "x", Status: domain.ExecPending,
		QueuedAt: time.Now()}
	if err := f.st.Executions().Create(f.ctx, pending); err != nil {
		t.Fatal(err)
	}
	_, err = f.s.CreateTicket(f.ctx, f.dev, linearP, TicketInput{TaskID: "pending-1"})
	wantError(t, "a run in progress", err, 409, "Execution not finished")
	if len(f.linear.Issues()) != 0 {
		t.Fatal("a refused request created an issue")
	}

	c, err := f.s.CreateTicket(f.ctx, f.dev, linearP, TicketInput{TaskID: run.TaskID, Description: "Seen on **staging** only."})
	if err != nil {
		t.Fatal(err)
	}
	issues := f.linear.Issues()
	if len(issues) != 1 || c.Ticket.ExternalID != issues[0].ID || c.Ticket.Identifier != "ENG-1" || c.Ticket.URL != issues[0].URL ||
		c.Ticket.Provider != linearP || c.Ticket.CreatedBy != f.dev.UserID || c.Warning != "" {
		t.Fatalf("created %+v; Linear has %+v", c, issues)
	}
	is := issues[0]
	if is.TeamID != trackertest.Team || is.Title != "Verdict: nightly-42 FAILED on verdict-examples/fail:latest (2 of 3 tests failed)" {
		t.Fatalf("issue: %+v", is)
	}
	for _, want := range []string{
		"Seen on **staging** only.\n\n---\n\n## Verdict run `nightly-42`",
		"- **Status:** FAILED", "- **Image:** `verdict-examples/fail:latest`", "3 total: 1 passed, 2 failed",
		"- **Exit code:** 1", "(ran 5.2s)",
		"- **Report:** [https://verdict.example/reports/org/run-1/playwright-report/](" + reportURL + ")",
		"### Failing tests (2)", "- **auth › rejects a bad password** (97ms)", "expected status 401, got 500\n      at auth.spec.ts:12",
		// Names from the suite are escaped; messages sit in a fence longer than their backticks.
		`ui › lists \*runs\* \[x\](http://evil.example)`, "````\n  locator('#runs') not found: ```timeout``` 5000ms exceeded\n  ````",
		"### Failure analysis", "- **Category:** product\\_bug (confidence 80%, builtin)", "- **Summary:** The login API answers 500",
		"- **Root cause:** A server error in POST /login", "- **Suggested fix:** Look at the API's log",
	} {
		if !strings.Contains(is.Description, want) {
			t.Errorf("the description lacks %q:\n%s", want, is.Description)
		}
	}
	if strings.Contains(is.Description, "logs in") {
		t.Error("the description lists a passed test")
	}
	e, err := f.st.Executions().Get(f.ctx, f.org.ID, run.TaskID)
	if err != nil || len(e.Tickets) != 1 || e.Tickets[0] != c.Ticket {
		t.Fatalf("the run's tickets: %+v, %v", e.Tickets, err)
	}
	if len(f.events.runs) != 1 || len(f.events.runs[0].Tickets) != 1 {
		t.Fatalf("announced: %+v", f.events.runs)
	}

	// A title of the caller's, and a run without a report or analysis.
	bare := &domain.Execution{ID: domain.NewID(), OrganizationID: f.org.ID, TaskID: "no-report", Image: "x:1", Status: domain.ExecError,
		Error: "image not found", QueuedAt: time.Now()}
	if err := f.st.Executions().Create(f.ctx, bare); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.CreateTicket(f.ctx, f.admin, linearP, TicketInput{TaskID: "no-report", Title: "  Broken image  "}); err != nil {
		t.Fatal(err)
	}
	is = f.linear.Issues()[1]
	if is.Title != "Broken image" || !strings.Contains(is.Description, "- **Error:** image not found") ||
		strings.Contains(is.Description, "Report:") || strings.Contains(is.Description, "analysis") {
		t.Fatalf("second issue: %+v", is)
	}

	// Disabled: 400, and Linear is not asked.
	if _, err := f.s.Save(f.ctx, f.admin, linearP, linearInput{TeamID: trackertest.Team, Enabled: ptr(false)}.in()); err != nil {
		t.Fatal(err)
	}
	_, err = f.s.CreateTicket(f.ctx, f.dev, linearP, TicketInput{TaskID: run.TaskID})
	wantError(t, "disabled", err, 400, "Integration disabled")
	if len(f.linear.Issues()) != 2 {
		t.Fatal("a disabled integration created an issue")
	}
}

func TestLinearIssueUpstreamFailures(t *testing.T) {
	f := newFixture(t)
	f.saveLinear()
	run := f.failedRun("run-1")
	for _, c := range []struct {
		mode   trackertest.Mode
		status int
		code   string
		says   string
	}{
		{trackertest.BadKey, 502, "Tracker error", "Linear refused the stored API key (Authentication required, not authenticated"},
		{trackertest.Fail500, 502, "Tracker error", "Linear: HTTP 500 Internal Server Error"},
		{trackertest.Slow, 504, "Tracker timeout", "Linear did not answer within 300ms"},
		{trackertest.Malformed, 502, "Tracker error", "Linear's answer could not be read"},
		{trackertest.GraphQLError, 502, "Tracker error", "Linear: Argument Validation Error: teamId must be the ID of a team you can access"},
	} {
		f.linear.Set(c.mode)
		start := time.Now()
		_, err := f.s.CreateTicket(f.ctx, f.dev, linearP, TicketInput{TaskID: run.TaskID})
		de := wantError(t, string(c.mode), err, c.status, c.code)
		if !strings.Contains(de.Message, c.says) {
			t.Errorf("%s: message %q, want %q", c.mode, de.Message, c.says)
		}
		if time.Since(start) > 1500*time.Millisecond {
			t.Errorf("%s: took %s: the call was not cut at the timeout", c.mode, time.Since(start))
		}
	}
	if e, _ := f.st.Executions().Get(f.ctx, f.org.ID, run.TaskID); len(e.Tickets) != 0 {
		t.Fatalf("failed creations recorded tickets: %+v", e.Tickets)
	}
	if !strings.Contains(f.logs.String(), "creating a Linear issue failed") {
		t.Fatal("the failures were not logged")
	}
}

func TestMondayItem(t *testing.T) {
	f := newFixture(t)
	run := f.failedRun("run-1")
	f.saveMonday("")
	c, err := f.s.CreateTicket(f.ctx, f.dev, mondayP, TicketInput{TaskID: run.TaskID, Title: "Checkout fails", Description: "Line one\n<b>two</b>"})
	if err != nil {
		t.Fatal(err)
	}
	items := f.monday.Items()
	if len(items) != 1 || items[0].GroupSet || items[0].BoardID != trackertest.Board || items[0].Name != "Checkout fails" ||
		c.Ticket.ExternalID != items[0].ID || c.Ticket.URL != items[0].URL || c.Warning != "" || c.Ticket.Identifier != "" {
		t.Fatalf("created %+v; Monday.com has %+v", c, items)
	}
	if len(items[0].Updates) != 1 {
		t.Fatalf("updates: %v", items[0].Updates)
	}
	body := items[0].Updates[0]
	for _, want := range []string{"<p>Line one<br>&lt;b&gt;two&lt;/b&gt;</p>", "<h3>Verdict run run-1</h3>", "<li><b>Status:</b> FAILED</li>",
		"<b>auth › rejects a bad password</b> (97ms)<pre>expected status 401, got 500\n    at auth.spec.ts:12</pre>",
		`<a href="` + reportURL + `">`, "<li><b>Category:</b> product_bug (confidence 80%, builtin)</li>"} {
		if !strings.Contains(body, want) {
			t.Errorf("the update lacks %q:\n%s", want, body)
		}
	}
	var ops []string
	for _, r := range f.monday.Requests() {
		ops = append(ops, r.OperationName)
		if r.Header.Get("Authorization") != mondayKey || r.Header.Get("API-Version") == "" {
			t.Errorf("%s: headers %v", r.OperationName, r.Header)
		}
	}
	if strings.Join(ops, ",") != "Me,CreateItem,CreateUpdate" {
		t.Fatalf("operations: %v", ops)
	}

	// A group from the settings; a link made from the account when the answer has none.
	f.saveMonday("topics")
	f.monday.NoURL = true
	c, err = f.s.CreateTicket(f.ctx, f.dev, mondayP, TicketInput{TaskID: run.TaskID})
	if err != nil {
		t.Fatal(err)
	}
	it := f.monday.Items()[1]
	if !it.GroupSet || it.GroupID != "topics" || c.Ticket.URL != "https://acme.monday.com/boards/"+trackertest.Board+"/pulses/"+it.ID ||
		it.Name != "Verdict: run-1 FAILED on verdict-examples/fail:latest (2 of 3 tests failed)" {
		t.Fatalf("second item %+v, ticket %+v", it, c.Ticket)
	}
	f.monday.NoURL = false

	// The update fails: the item is recorded all the same, with a warning.
	f.monday.Set(trackertest.NoUpdate)
	c, err = f.s.CreateTicket(f.ctx, f.dev, mondayP, TicketInput{TaskID: run.TaskID})
	if err != nil || !strings.Contains(c.Warning, "Update body is too long") {
		t.Fatalf("without the update: %+v, %v", c, err)
	}
	if e, _ := f.st.Executions().Get(f.ctx, f.org.ID, run.TaskID); len(e.Tickets) != 3 {
		t.Fatalf("tickets: %+v", e.Tickets)
	}

	for _, c := range []struct {
		mode   trackertest.Mode
		status int
		code   string
		says   string
	}{
		{trackertest.BadKey, 502, "Tracker error", "Monday.com refused the stored API key (Not Authenticated)"},
		{trackertest.Fail500, 502, "Tracker error", "Monday.com: HTTP 500 Internal Server Error"},
		{trackertest.Slow, 504, "Tracker timeout", "Monday.com did not answer within 300ms"},
		{trackertest.Malformed, 502, "Tracker error", "Monday.com's answer could not be read"},
		{trackertest.GraphQLError, 502, "Tracker error", "Monday.com: The board does not exist or you do not have access to it"},
		{trackertest.LegacyError, 502, "Tracker error", "Monday.com: The board does not exist"},
	} {
		f.monday.Set(c.mode)
		_, err := f.s.CreateTicket(f.ctx, f.dev, mondayP, TicketInput{TaskID: run.TaskID})
		de := wantError(t, string(c.mode), err, c.status, c.code)
		if !strings.Contains(de.Message, c.says) {
			t.Errorf("%s: message %q, want %q", c.mode, de.Message, c.says)
		}
	}
	if e, _ := f.st.Executions().Get(f.ctx, f.org.ID, run.TaskID); len(e.Tickets) != 3 {
		t.Fatalf("failed creations recorded tickets: %+v", e.Tickets)
	}
}

func TestConcurrentTicketsKeepBoth(t *testing.T) {
	f := newFixture(t)
	f.saveLinear()
	f.saveMonday("")
	run := f.failedRun("run-1")
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for i := range 4 {
		wg.Go(func() {
			var err error
			if i%2 == 0 {
				_, err = f.s.CreateTicket(f.ctx, f.dev, linearP, TicketInput{TaskID: run.TaskID})
			} else {
				_, err = f.s.CreateTicket(f.ctx, f.admin, mondayP, TicketInput{TaskID: run.TaskID})
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	e, err := f.st.Executions().Get(f.ctx, f.org.ID, run.TaskID)
	if err != nil || len(e.Tickets) != 4 {
		t.Fatalf("tickets: %+v, %v", e.Tickets, err)
	}
}

func TestOtherOrganizationsRun(t *testing.T) {
	f := newFixture(t)
	f.saveLinear()
	run := f.failedRun("theirs")
	other := &domain.Organization{ID: domain.NewID(), Name: "Other", Slug: "other", Plan: domain.PlanFree, CreatedAt: time.Now()}
	if err := f.st.Organizations().Create(f.ctx, other); err != nil {
		t.Fatal(err)
	}
	// The other organization has Linear too, but not this run.
	outsider := &identity.Principal{UserID: domain.NewID(), OrgID: other.ID, Role: domain.RoleAdmin}
	if _, err := f.s.Save(f.ctx, outsider, linearP, linearInput{APIKey: ptr(linearKey), TeamID: trackertest.Team}.in()); err != nil {
		t.Fatal(err)
	}
	_, err := f.s.CreateTicket(f.ctx, outsider, linearP, TicketInput{TaskID: run.TaskID})
	wantError(t, "another organization's run", err, 404, "Execution not found")
	if got, _ := f.s.Settings(f.ctx, &identity.Principal{OrgID: other.ID, Role: domain.RoleViewer}, linearP); !got.Enabled {
		t.Fatal("settings are not per organization")
	}
	if n := len(f.linear.Issues()); n != 0 {
		t.Fatalf("%d issues created", n)
	}
}

// The caller leaving while the tracker works does not lose the ticket it creates.
func TestCallerLeaves(t *testing.T) {
	f := newFixture(t)
	f.saveLinear()
	run := f.failedRun("run-1")
	f.linear.Delay = 150 * time.Millisecond // under the 300 ms bound
	f.linear.Set(trackertest.Slow)
	ctx, cancel := context.WithCancel(f.ctx)
	time.AfterFunc(50*time.Millisecond, cancel)
	if _, err := f.s.CreateTicket(ctx, f.dev, linearP, TicketInput{TaskID: run.TaskID}); err != nil {
		t.Fatal(err)
	}
	if ctx.Err() == nil {
		t.Fatal("the caller had not left yet")
	}
	if e, _ := f.st.Executions().Get(f.ctx, f.org.ID, run.TaskID); len(e.Tickets) != 1 || len(f.linear.Issues()) != 1 {
		t.Fatalf("tickets %+v, issues %+v", e.Tickets, f.linear.Issues())
	}
}
