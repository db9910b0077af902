//go:build integration

package app_test

import (
	"bytes"
	"context"
	"html"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"verdict/internal/domain"
	"verdict/internal/peerhttp"
	"verdict/internal/run"
	"verdict/internal/testenv"
	"verdict/internal/testenv/s3env"
)

const day = 24 * time.Hour

// retentionHarness is a server without a runner of its own, whose runs a remote runner (the
// test, over HTTP) carries out on the harness's clock, with the retention job every 50 ms.
func retentionHarness(t *testing.T, dialect string, env map[string]string) *harness {
	e := map[string]string{"VERDICT_RUNNER": "none", "VERDICT_RUNNER_SECRET": runnerSecret}
	for k, v := range env {
		e[k] = v
	}
	return newHarness(t, harnessOpts{dialect: dialect, workers: true, retention: 50 * time.Millisecond, env: e})
}

// keptRun is a run carried to its end by a remote runner: its log and reports (an HTML report
// and a JUnit file) stored through the server's runner routes, as `verdict runner` stores them.
type keptRun struct {
	task, id, htmlURL string
	reportBytes       float64
}

func settleRun(t *testing.T, h *harness, c *peerhttp.Client, a auth, task string, extra ...map[string]any) keptRun {
	t.Helper()
	ctx := context.Background()
	body := map[string]any{"image": passImage, "taskId": task}
	for _, m := range extra { // more of the queueing request's fields
		for k, v := range m {
			body[k] = v
		}
	}
	h.queue(a, body)
	w, err := c.Next(ctx, time.Minute)
	if err != nil || w == nil || w.TaskID != task {
		t.Fatalf("claim %s: %+v %v", task, w, err)
	}
	if err := c.Log(ctx, w.ID, 1, 0, "log line of "+task+"\n"); err != nil {
		t.Fatal(err)
	}
	// Small: the runner routes set the upload's read deadline by the harness's clock, which
	// stands before the real one, so only what arrives with the request's head is read.
	archive := testenv.Tar(t,
		testenv.TarEntry{Name: "playwright-report/index.html", Body: "<!doctype html><title>report of " + task + "</title>"},
		testenv.TarEntry{Name: "junit/results.xml", Body: junitPassing})
	rep, err := c.Upload(ctx, w.ID, bytes.NewReader(archive))
	if err != nil || rep.Summary.Total != 1 {
		t.Fatalf("upload %s: %+v %v", task, rep, err)
	}
	if err := c.Done(ctx, w.ID, run.Result{Status: domain.ExecPassed, ExitCode: new(int), FinishedAt: h.clock.Now(), Reports: rep}); err != nil {
		t.Fatal(err)
	}
	r := h.do("GET", "/api/executions/"+task, a, nil)
	htmlURL, _ := strings.CutPrefix(r.str("execution", "htmlReportUrl"), publicURL)
	if r.str("execution", "status") != "PASSED" || htmlURL == "" || r.get("execution", "reportBytes") == 0.0 {
		t.Fatalf("run %s: %s", task, r.raw)
	}
	return keptRun{task: task, id: w.ID, htmlURL: htmlURL, reportBytes: r.get("execution", "reportBytes").(float64)}
}

// storageOf is the organization's storage in use, as the API shows it.
func storageOf(h *harness, a auth) float64 {
	return h.do("GET", "/api/organization", a, nil).get("organization", "limits", "currentStorageUsedBytes").(float64)
}

// waitExpired waits until the run shows its files expired (the job's pass), and returns it.
func waitExpired(h *harness, a auth, task string) resp {
	h.t.Helper()
	return h.waitFor(a, task, 15*time.Second, func(r resp) bool { return r.get("execution", "filesExpiredAt") != nil })
}

// waitGone waits until the run is deleted.
func waitGone(h *harness, a auth, task string) {
	h.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for h.do("GET", "/api/executions/"+task, a, nil).status != 404 {
		if time.Now().After(deadline) {
			h.t.Fatalf("run %s is still there", task)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRetentionEndToEnd: a free organization (logs 14 days, runs 90, here cut to 60 by the
// server's maximum). A finished run older than its logs days loses its log and report files at
// the job's next pass: its view and page still open with the note and filesExpiredAt, its log
// route answers the note, its report 410, and the storage goes down by its bytes. A pinned run
// of the same age keeps everything until it is unpinned. Runs older than the runs days are
// deleted. Pins are for admins and developers and audit-logged; the retention settings are
// read by every member, changed by admins within their bounds, and applied by the job.
func TestRetentionEndToEnd(t *testing.T) {
	for _, d := range []string{"sqlite", "postgres"} {
		t.Run(d, func(t *testing.T) {
			dataDir := t.TempDir()
			h := retentionHarness(t, d, map[string]string{"VERDICT_DATA_DIR": dataDir, "VERDICT_RETENTION_MAX_RUNS_DAYS": "60"})
			ctx := context.Background()
			admin := h.signup("keeper-"+d+"@example.com", "Keeper Co")
			a := bearer(admin.token)
			dev := bearer(h.join(admin, "dev-"+d+"@example.com", "developer").token)
			viewer := bearer(h.join(admin, "viewer-"+d+"@example.com", "viewer").token)
			stranger := bearer(h.signup("stranger-"+d+"@example.com", "Elsewhere Co").token)
			c := remoteClient(t, h, "keeper")
			// advance moves the clock by days, and signs everyone in again (sessions last a day).
			advance := func(days time.Duration) {
				h.clock.Advance(days)
				admin.token = h.login(admin.email)
				a, dev, viewer = bearer(admin.token), bearer(h.login("dev-"+d+"@example.com")), bearer(h.login("viewer-"+d+"@example.com"))
				stranger = bearer(h.login("stranger-" + d + "@example.com"))
			}

			// The settings as every member reads them: the plan's values within the server's maximum.
			got := h.do("GET", "/api/organization/retention", viewer, nil)
			expect(t, got, 200, "")
			if got.get("data", "logsDays") != 14.0 || got.get("data", "runsDays") != 60.0 || got.str("data", "plan") != "free" ||
				got.get("data", "defaults", "logsDays") != 14.0 || got.get("data", "defaults", "runsDays") != 90.0 ||
				got.get("data", "max", "runsDays") != 60.0 || got.get("data", "max", "logsDays") != nil ||
				got.get("data", "setting", "logsDays") != nil {
				t.Fatalf("retention: %s", got.raw)
			}

			// Two runs end now; one is pinned. A third ends ten days later.
			t0 := h.clock.Now()
			old := settleRun(t, h, c, a, "old-run")
			pinned := settleRun(t, h, c, a, "pinned-run")
			expect(t, h.do("PUT", "/api/executions/"+pinned.task+"/pin", viewer, nil), 403, "Forbidden")
			expect(t, h.do("PUT", "/api/executions/"+pinned.task+"/pin", stranger, nil), 404, "Execution not found")
			pin := h.do("PUT", "/api/executions/"+pinned.task+"/pin", dev, nil)
			expect(t, pin, 200, "")
			if pin.get("execution", "pinned") != true || pin.get("execution", "filesExpiredAt") != nil {
				t.Fatalf("pin: %s", pin.raw)
			}
			advance(10 * day)
			young := settleRun(t, h, c, a, "young-run")
			before := storageOf(h, a)
			if want := old.reportBytes + pinned.reportBytes + young.reportBytes; before != want {
				t.Fatalf("storage %v, want the runs' %v", before, want)
			}

			// Fifteen days after the first two ended, the job expires the unpinned one's files.
			advance(5 * day)
			expired := waitExpired(h, a, old.task)
			note := domain.FilesExpiredNote(t0.Add(15 * day))
			ex := expired.get("execution").(map[string]any)
			notes, _ := ex["notes"].([]any)
			if ex["status"] != "PASSED" || ex["filesExpiredAt"] != t0.Add(15*day).Format("2006-01-02T15:04:05.000Z") ||
				ex["reportBytes"] != 0.0 || ex["htmlReportUrl"] != nil || len(ex["artifacts"].([]any)) != 0 ||
				len(ex["reportFolders"].([]any)) != 0 || ex["pinned"] != false || len(notes) == 0 || notes[len(notes)-1] != note ||
				ex["summary"].(map[string]any)["total"] != 1.0 || len(ex["tests"].([]any)) != 1 {
				t.Fatalf("the expired run: %s", expired.raw)
			}
			if got := storageOf(h, a); got != before-old.reportBytes {
				t.Fatalf("storage %v after the expiry, want %v - %v", got, before, old.reportBytes)
			}
			logs := h.do("GET", "/api/executions/"+old.task+"/logs", a, nil)
			expect(t, logs, 200, "")
			if logs.str("logs") != note+"\n" {
				t.Fatalf("the expired run's log: %s", logs.raw)
			}
			page := h.do("GET", "/api/executions/"+old.task+"/logs?since=0", a, nil)
			if page.str("data", "log") != note+"\n" || page.get("data", "complete") != true {
				t.Fatalf("the expired run's log page: %s", page.raw)
			}
			expect(t, h.do("GET", old.htmlURL, a, nil), 410, "Report expired")
			expect(t, h.do("GET", "/reports/"+admin.orgID+"/"+old.task+"/junit/results.xml", a, nil), 410, "Report expired")
			expect(t, h.do("GET", "/api/executions/"+old.task+"/report-token", a, nil), 410, "Report expired")
			if r := h.do("GET", old.htmlURL, stranger, nil); r.status != 404 {
				t.Fatalf("another organization's member asks the expired report: %d", r.status)
			}
			if chunks, err := h.app.Store.Logs().Read(ctx, old.id); err != nil || chunks != "" {
				t.Fatalf("the expired run's log chunks: %q %v", chunks, err)
			}
			if _, err := os.Stat(filepath.Join(dataDir, "reports", admin.orgID, old.task)); !os.IsNotExist(err) {
				t.Fatalf("the expired run's report folder: %v", err)
			}
			// The list shows the run expired and the other pinned.
			list := h.do("GET", "/api/executions", a, nil)
			for _, item := range list.get("data", "executions").([]any) {
				it := item.(map[string]any)
				switch it["taskId"] {
				case old.task:
					if it["filesExpiredAt"] == nil || it["reportBytes"] != 0.0 {
						t.Fatalf("listed expired run: %v", it)
					}
				case pinned.task:
					if it["pinned"] != true || it["filesExpiredAt"] != nil {
						t.Fatalf("listed pinned run: %v", it)
					}
				}
			}
			// Its page opens and says so.
			b := h.withSession(t, admin.token)
			p := b.get("/runs/" + old.task)
			wantStatus(t, "the expired run's page", p, 200, "Log and report files expired on")
			for _, want := range []string{html.EscapeString(note), `action="/runs/` + old.task + `/pin"`} {
				if !strings.Contains(p.body, want) {
					t.Fatalf("the expired run's page lacks %q: %s", want, p.body)
				}
			}
			// The pinned run, as old, and the young one keep everything.
			for _, k := range []keptRun{pinned, young} {
				r := h.do("GET", "/api/executions/"+k.task, a, nil)
				if r.get("execution", "filesExpiredAt") != nil || r.get("execution", "reportBytes") != k.reportBytes {
					t.Fatalf("%s: %s", k.task, r.raw)
				}
				if rep := h.do("GET", k.htmlURL, a, nil); rep.status != 200 || !strings.Contains(rep.raw, "report of "+k.task) {
					t.Fatalf("%s's report: %d %s", k.task, rep.status, rep.raw)
				}
				if l := h.do("GET", "/api/executions/"+k.task+"/logs", a, nil); l.str("logs") != "log line of "+k.task+"\n" {
					t.Fatalf("%s's log: %s", k.task, l.raw)
				}
			}
			pp := b.get("/runs/" + pinned.task)
			wantStatus(t, "the pinned run's page", pp, 200, "Pinned: kept until unpinned")
			if !strings.Contains(pp.body, `action="/runs/`+pinned.task+`/unpin"`) {
				t.Fatalf("no unpin button: %s", pp.body)
			}

			// The settings: admins only, within the plan's values and the server's maximum.
			for body, msg := range map[string]string{
				`{"logsDays":15}`:                 "logsDays may be at most 14, the free plan's retention",
				`{"logsDays":0}`:                  "logsDays must be a whole number of days from 1",
				`{"logsDays":7.5}`:                "logsDays must be a whole number of days",
				`{"runsDays":61}`:                 "runsDays may be at most 60, this server's maximum",
				`{"runsDays":70}`:                 "runsDays may be at most 60, this server's maximum",
				`{"logsDays":10,"runsDays":5}`:    "runsDays (5) must be at least logsDays (10)",
				`{"runsDays":"30"}`:               "runsDays must be a whole number of days",
				`{"logsDays":-3,"runsDays":null}`: "logsDays must be a whole number of days from 1",
			} {
				r := h.do("PATCH", "/api/organization/retention", a, body)
				expect(t, r, 400, "Validation error")
				if !strings.Contains(r.str("message"), msg) {
					t.Fatalf("%s: %s, want %q", body, r.raw, msg)
				}
			}
			expect(t, h.do("PATCH", "/api/organization/retention", a, `{}`), 400, "Missing required fields")
			expect(t, h.do("PATCH", "/api/organization/retention", viewer, `{"logsDays":7}`), 403, "Forbidden")
			expect(t, h.do("PATCH", "/api/organization/retention", dev, `{"logsDays":7}`), 403, "Forbidden")
			set := h.do("PATCH", "/api/organization/retention", a, `{"logsDays":7}`)
			expect(t, set, 200, "")
			if set.get("data", "logsDays") != 7.0 || set.get("data", "runsDays") != 60.0 || set.get("data", "setting", "logsDays") != 7.0 {
				t.Fatalf("set: %s", set.raw)
			}
			// The young run (5 days old) expires once it passes the organization's 7 days.
			advance(3 * day)
			waitExpired(h, a, young.task)
			if got := storageOf(h, a); got != pinned.reportBytes {
				t.Fatalf("storage %v, want what the pinned run holds (%v)", got, pinned.reportBytes)
			}
			reset := h.do("PATCH", "/api/organization/retention", a, `{"logsDays":null}`)
			if reset.get("data", "logsDays") != 14.0 || reset.get("data", "setting", "logsDays") != nil {
				t.Fatalf("reset: %s", reset.raw)
			}

			// Unpinned, the pinned run's files go at the next pass.
			unpin := h.do("DELETE", "/api/executions/"+pinned.task+"/pin", a, nil)
			expect(t, unpin, 200, "")
			if unpin.get("execution", "pinned") != false {
				t.Fatalf("unpin: %s", unpin.raw)
			}
			waitExpired(h, a, pinned.task)
			if got := storageOf(h, a); got != 0 {
				t.Fatalf("storage %v after every run's files expired", got)
			}

			// Past the runs days (60, the server's maximum), the runs are deleted; a pinned one stays.
			expect(t, h.do("PUT", "/api/executions/"+young.task+"/pin", a, nil), 200, "")
			advance(60 * day)
			waitGone(h, a, old.task)
			waitGone(h, a, pinned.task)
			if r := h.do("GET", "/api/executions/"+young.task, a, nil); r.status != 200 || r.get("execution", "pinned") != true {
				t.Fatalf("the pinned young run: %s", r.raw)
			}
			if r := h.do("GET", "/api/executions", a, nil); r.get("data", "total") != 1.0 {
				t.Fatalf("runs left: %s", r.raw)
			}
			// Deleted runs still count against the period's runs (the ledger keeps them).
			if n, err := h.app.Store.Executions().CountSince(ctx, admin.orgID, t0.Add(-time.Hour)); err != nil || n != 3 {
				t.Fatalf("runs counted: %d %v", n, err)
			}

			// Every pin, unpin and change of the settings is in the audit log.
			entries, err := h.app.Store.Audit().List(ctx, admin.orgID, 100)
			if err != nil {
				t.Fatal(err)
			}
			var actions []string
			for _, e := range entries {
				actions = append(actions, e.Action)
			}
			for action, n := range map[string]int{"execution.pinned": 2, "execution.unpinned": 1, "organization.retention_updated": 2} {
				if got := countOf(actions, action); got != n {
					t.Errorf("%d audit entries %s, want %d: %v", got, action, n, actions)
				}
			}
		})
	}
}

func countOf(list []string, s string) int {
	n := 0
	for _, v := range list {
		if v == s {
			n++
		}
	}
	return n
}

// TestRetentionS3: with reports in an S3 bucket, the job deletes the expired run's objects
// and gives back their storage; a younger run's objects stay.
func TestRetentionS3(t *testing.T) {
	b := s3env.Bucket(t)
	env := s3Env(b, t.TempDir())
	h := retentionHarness(t, "sqlite", env)
	admin := h.signup("bucket-keeper@example.com", "Bucket Keeper Co")
	// An API key: it outlasts the sessions as the clock moves on by days.
	a := apiKey(h.do("POST", "/api/auth/api-keys", bearer(admin.token), map[string]any{"name": "ci"}).str("apiKey"))
	c := remoteClient(t, h, "bucket-keeper")
	old := settleRun(t, h, c, a, "old-in-bucket")
	h.clock.Advance(10 * day)
	young := settleRun(t, h, c, a, "young-in-bucket")
	keys := func(task string) []string { return b.Keys(t, admin.orgID+"/"+task+"/") }
	if len(keys(old.task)) != 2 || len(keys(young.task)) != 2 {
		t.Fatalf("objects before: %v %v", keys(old.task), keys(young.task))
	}
	h.clock.Advance(5 * day)
	waitExpired(h, a, old.task)
	// The job marks a batch expired first and deletes its files after: wait for the delete.
	for deadline := time.Now().Add(15 * time.Second); len(keys(old.task)) != 0 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	if left := keys(old.task); len(left) != 0 {
		t.Fatalf("the expired run's objects are left: %v", left)
	}
	if got := keys(young.task); !slices.Equal(got, []string{admin.orgID + "/" + young.task + "/junit/results.xml",
		admin.orgID + "/" + young.task + "/playwright-report/index.html"}) {
		t.Fatalf("the young run's objects: %v", got)
	}
	if got := storageOf(h, a); got != young.reportBytes {
		t.Fatalf("storage %v, want %v", got, young.reportBytes)
	}
	expect(t, h.do("GET", old.htmlURL, a, nil), 410, "Report expired")
	if rep := h.do("GET", young.htmlURL, a, nil); rep.status != 200 {
		t.Fatalf("the young run's report: %d", rep.status)
	}
}
