package notify_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"verdict/internal/control"
	"verdict/internal/domain"
	"verdict/internal/egress"
	"verdict/internal/mail"
	"verdict/internal/notify"
	"verdict/internal/notify/notifytest"
	"verdict/internal/store"
	"verdict/internal/store/sqlstore/sqlitetest"
)

type fixture struct {
	t       *testing.T
	st      store.Store
	svc     *notify.Service
	worker  *mail.Worker
	admin   *domain.User
	org     *domain.Organization
	project *domain.Project
	now     time.Time
}

func newFixture(t *testing.T) *fixture {
	st := sqlitetest.Open(t)
	now := time.Now().UTC().Truncate(time.Millisecond)
	org := sqlitetest.Org(t, st, "Acme", domain.PlanTeam, now)
	admin := sqlitetest.Member(t, st, org, "admin@acme.test", domain.RoleAdmin)
	p := &domain.Project{ID: domain.NewID(), OrganizationID: org.ID, Name: "Web", CreatedAt: now, UpdatedAt: now}
	if err := st.Projects().Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	guard, err := egress.New([]string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	retry := mail.RetryPolicy{Base: time.Millisecond, Max: time.Millisecond, Window: time.Hour}
	svc := notify.New(notify.Deps{Store: st, Box: sqlitetest.Box(t, 3), Egress: guard, PublicURL: "https://verdict.example",
		ReportURL: func(context.Context, *domain.Execution) string { return "https://reports.example/r/1/index.html" },
		Retry:     &retry, Timeout: 2 * time.Second})
	w := &mail.Worker{Repo: st.Outbox(), Deliverers: control.Deliveries([]control.Step{svc}),
		Policies: map[string]mail.RetryPolicy{notify.OutboxKind: retry}, Lanes: map[string]func(string) string{notify.OutboxKind: notify.Lane}}
	return &fixture{t: t, st: st, svc: svc, worker: w, admin: admin, org: org, project: p, now: now}
}

func (f *fixture) add(kind, url, secret string, on ...string) *notify.Created {
	f.t.Helper()
	c, err := f.svc.Create(context.Background(), sqlitetest.As(f.admin), f.project.ID, notify.Input{Kind: kind, URL: url, On: on, Secret: secret})
	if err != nil {
		f.t.Fatal(err)
	}
	return c
}

// finished stores a finished run of the project and returns it as the post-run steps see it.
func (f *fixture) finished(status domain.ExecStatus, tests ...domain.TestResult) *domain.Execution {
	f.t.Helper()
	f.now = f.now.Add(time.Minute)
	start, end := f.now.Add(-30*time.Second), f.now
	code := 1
	e := &domain.Execution{ID: domain.NewID(), OrganizationID: f.org.ID, ProjectID: f.project.ID, TaskID: "run-" + domain.RandomHex(4),
		Image: "suite:1", Status: status, QueuedAt: start, StartedAt: &start, FinishedAt: &end, ExitCode: &code, Tests: tests,
		Summary: domain.Summarize(tests)}
	if err := f.st.Executions().Create(context.Background(), e); err != nil {
		f.t.Fatal(err)
	}
	return e
}

func (f *fixture) drain() {
	f.t.Helper()
	for range 5 {
		if _, err := f.worker.RunOnce(context.Background()); err != nil {
			f.t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A failed run gives one message to each receiver whose rules take it, in the shape the receiver
// takes (the fakes refuse anything else), and the webhook's signature verifies; the run's end
// reported again gives nothing more.
func TestFailedRunReachesEachKindOnce(t *testing.T) {
	f := newFixture(t)
	slack, teams := notifytest.Slack(t), notifytest.Teams(t)
	secret := "s3cret-signing-key-0123"
	hook := notifytest.Webhook(t, "", secret)
	quiet := notifytest.Webhook(t, "", secret)
	f.add("slack", slack.URL+"/services/T0/B0/xyz", "", "failure")
	f.add("teams", teams.URL+"/workflows/abc", "", "failure", "recovery")
	f.add("webhook", hook.URL+"/verdict", secret, "failure")
	f.add("webhook", quiet.URL+"/verdict", secret, "recovery") // not a failure's

	run := f.finished(domain.ExecFailed,
		domain.TestResult{Suite: "login", Name: "rejects <bad> & wrong passwords", Status: domain.TestFailed, Error: "expected 401\ngot 200"},
		domain.TestResult{Suite: "login", Name: "accepts good", Status: domain.TestPassed})
	for range 2 {
		if err := f.svc.After(context.Background(), run, nil); err != nil {
			t.Fatal(err)
		}
	}
	f.drain()
	for name, rc := range map[string]*notifytest.Receiver{"slack": slack, "teams": teams, "webhook": hook} {
		if got := rc.Got(); len(got) != 1 || len(rc.Refused()) != 0 {
			t.Errorf("%s got %d messages (refused %q), want 1", name, len(got), rc.Refused())
		}
	}
	if n := quiet.Attempts(); n != 0 {
		t.Errorf("the recovery-only webhook was called %d times for a failure", n)
	}
	ev := hook.Got()[0]
	run0 := ev.Body["run"].(map[string]any)
	if ev.Event != "run.finished" || run0["status"] != "FAILED" || run0["url"] != "https://verdict.example/runs/"+run.TaskID ||
		run0["reportUrl"] != "https://reports.example/r/1/index.html" || len(run0["failingTests"].([]any)) != 1 {
		t.Errorf("webhook event: %+v", ev.Body)
	}
	msg := slack.Got()[0].Body
	blocks := msg["blocks"].([]any)
	if !strings.Contains(mustJSON(t, blocks), "rejects &lt;bad&gt; &amp; wrong passwords") {
		t.Errorf("Slack blocks do not escape the test's name: %s", mustJSON(t, blocks))
	}
	card := teams.Got()[0].Body["attachments"].([]any)[0].(map[string]any)["content"].(map[string]any)
	if card["version"] != "1.4" || !strings.Contains(mustJSON(t, card), "Open the run") {
		t.Errorf("Teams card: %s", mustJSON(t, card))
	}

	// Then a pass: the recovery webhook and Teams hear of it; Slack (failure only) does not.
	pass := f.finished(domain.ExecPassed, domain.TestResult{Suite: "login", Name: "accepts good", Status: domain.TestPassed})
	if err := f.svc.After(context.Background(), pass, nil); err != nil {
		t.Fatal(err)
	}
	f.drain()
	if len(quiet.Got()) != 1 || len(teams.Got()) != 2 || len(slack.Got()) != 1 {
		t.Errorf("after a recovery: quiet %d, teams %d, slack %d; want 1, 2, 1", len(quiet.Got()), len(teams.Got()), len(slack.Got()))
	}
	if r := quiet.Got()[0].Body["run"].(map[string]any); r["recovered"] != true {
		t.Errorf("the recovery event: %+v", r)
	}
	// A second pass is no recovery.
	if err := f.svc.After(context.Background(), f.finished(domain.ExecPassed), nil); err != nil {
		t.Fatal(err)
	}
	f.drain()
	if len(quiet.Got()) != 1 {
		t.Errorf("a second pass was told as a recovery")
	}
}

// A 4xx other than 408 and 429 fails the delivery at once; a 5xx is retried until a 2xx; the
// deliveries list says so, and never holds the URL.
func TestDeliveryOutcomes(t *testing.T) {
	f := newFixture(t)
	gone := notifytest.Webhook(t, "", "0123456789abcdef0123")
	gone.Answer(func() int { return 410 })
	flaky := notifytest.Webhook(t, "", "0123456789abcdef0123")
	n := 0
	flaky.Answer(func() int {
		n++
		if n < 3 {
			return 503
		}
		return 200
	})
	g := f.add("webhook", gone.URL+"/secret-path", "0123456789abcdef0123", "always")
	fl := f.add("webhook", flaky.URL+"/secret-path", "0123456789abcdef0123", "always")
	if err := f.svc.After(context.Background(), f.finished(domain.ExecPassed), nil); err != nil {
		t.Fatal(err)
	}
	f.drain()
	p := sqlitetest.As(f.admin)
	ds, err := f.svc.Deliveries(context.Background(), p, f.project.ID, g.ID)
	if err != nil || len(ds) != 1 || ds[0].Status != "failed" || ds[0].StatusCode != 410 || ds[0].Attempts != 1 || gone.Attempts() != 1 {
		t.Fatalf("the 410 delivery: %+v %v (attempts %d)", ds, err, gone.Attempts())
	}
	ds, err = f.svc.Deliveries(context.Background(), p, f.project.ID, fl.ID)
	if err != nil || len(ds) != 1 || ds[0].Status != "delivered" || ds[0].StatusCode != 200 || ds[0].Attempts != 3 || len(flaky.Got()) != 1 {
		t.Fatalf("the retried delivery: %+v %v", ds, err)
	}
	if strings.Contains(mustJSON(t, ds), "secret-path") {
		t.Fatalf("a delivery shows the URL: %s", mustJSON(t, ds))
	}
	// Redelivered: the same event ID, once more.
	if _, err := f.svc.Redeliver(context.Background(), p, f.project.ID, fl.ID, ds[0].ID); err != nil {
		t.Fatal(err)
	}
	f.drain()
	got := flaky.Got()
	if len(got) != 2 || got[0].EventID != got[1].EventID {
		t.Fatalf("redelivery: %+v", got)
	}
	// Another project's ID, another notification's delivery: 404.
	var de *domain.Error
	if _, err := f.svc.Redeliver(context.Background(), p, f.project.ID, g.ID, ds[0].ID); !errors.As(err, &de) || de.Kind != domain.KindNotFound {
		t.Fatalf("redelivering another notification's delivery: %v", err)
	}
}

// A refused schedule reaches the notifications that take failures.
func TestScheduleRefused(t *testing.T) {
	f := newFixture(t)
	hook := notifytest.Webhook(t, "", "0123456789abcdef0123")
	other := notifytest.Webhook(t, "", "0123456789abcdef0123")
	f.add("webhook", hook.URL, "0123456789abcdef0123", "failure")
	f.add("webhook", other.URL, "0123456789abcdef0123", "gate_failed")
	if err := f.svc.ScheduleRefused(context.Background(), f.org.ID, f.project.ID, "sch1", "nightly", "Run limit reached"); err != nil {
		t.Fatal(err)
	}
	f.drain()
	got := hook.Got()
	if len(got) != 1 || got[0].Event != "schedule.refused" || got[0].Body["schedule"].(map[string]any)["reason"] != "Run limit reached" {
		t.Fatalf("schedule.refused: %+v", got)
	}
	if other.Attempts() != 0 {
		t.Fatal("a gate-only notification heard of a refused schedule")
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// A delivery the receiver answered 2xx is not made again when its outbox row comes back (the
// worker's record of it was lost: at least once); the receiver would dedupe it, but it is not
// even sent.
func TestDeliveredIsNotMadeAgain(t *testing.T) {
	f := newFixture(t)
	hook := notifytest.Webhook(t, "", "0123456789abcdef0123")
	n := f.add("webhook", hook.URL, "0123456789abcdef0123", "always")
	if err := f.svc.After(context.Background(), f.finished(domain.ExecPassed), nil); err != nil {
		t.Fatal(err)
	}
	f.drain()
	ds, err := f.svc.Deliveries(context.Background(), sqlitetest.As(f.admin), f.project.ID, n.ID)
	if err != nil || len(ds) != 1 || ds[0].Status != "delivered" {
		t.Fatalf("deliveries: %+v %v", ds, err)
	}
	now := time.Now()
	d := &domain.Delivery{ID: ds[0].ID, OrganizationID: f.org.ID, NotificationID: n.ID}
	if err := f.st.Outbox().Enqueue(context.Background(), &store.Mail{Kind: notify.OutboxKind, To: []string{},
		Text: notify.Payload(d), NextAttempt: now, CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	f.drain()
	if n := hook.Attempts(); n != 1 {
		t.Fatalf("the receiver was called %d times, want once", n)
	}
}
