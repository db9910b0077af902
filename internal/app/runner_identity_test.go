//go:build integration

package app_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"verdict/internal/domain"
	"verdict/internal/peerhttp"
	"verdict/internal/run"
	"verdict/internal/testenv"
)

// junitPassing is a JUnit report of one passing test.
const junitPassing = `<?xml version="1.0"?><testsuite name="bound" tests="1"><testcase name="holds" classname="bound"/></testsuite>`

// remoteClient is a `verdict runner` process's client to h: a random instance of its own.
func remoteClient(t *testing.T, h *harness, name string) *peerhttp.Client {
	t.Helper()
	c, err := peerhttp.NewClient(peerhttp.ClientDeps{URL: h.srv.URL, Secret: runnerSecret, Name: name, Slots: 4,
		Backoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestRunnerRunsBoundToTheirProcess: a run answers only to the runner process that claimed it.
// Instance A of runner "shared" claims a run; another process with the same name and secret
// (another instance) renews, records a container, appends a log line, uploads reports and
// settles that run: each call is refused as a lost lease (409) and changes nothing. A then
// carries the run to its end. A restarted runner (a new instance under the name) is refused
// its earlier life's run too, and claims and settles new runs as usual.
func TestRunnerRunsBoundToTheirProcess(t *testing.T) {
	for _, d := range []string{"sqlite", "postgres"} {
		t.Run(d, func(t *testing.T) {
			h := newHarness(t, harnessOpts{dialect: d,
				env: map[string]string{"VERDICT_RUNNER": "none", "VERDICT_RUNNER_SECRET": runnerSecret}})
			ctx := context.Background()
			admin := h.signup("bound-"+d+"@example.com", "Bound Co")
			a := bearer(admin.token)
			// Room for two runs at once: the earlier life's run holds a slot until it is reaped.
			if err := h.app.Store.Organizations().UpdatePlan(ctx, admin.orgID, domain.PlanTeam, domain.Billing{}); err != nil {
				t.Fatal(err)
			}
			task := h.queue(a, map[string]any{"image": passImage, "taskId": "bound-run"})

			first := remoteClient(t, h, "shared")
			if err := first.Hello(ctx); err != nil {
				t.Fatal(err)
			}
			w, err := first.Next(ctx, time.Minute)
			if err != nil || w == nil {
				t.Fatalf("the first process's claim: %+v %v", w, err)
			}
			stored := func() *domain.Execution {
				t.Helper()
				e, err := h.app.Store.Executions().GetByID(ctx, w.ID)
				if err != nil {
					t.Fatal(err)
				}
				return e
			}
			claimed := stored()
			if claimed.Status != domain.ExecRunning || claimed.RunnerID != "remote:shared" || claimed.RunnerInstance == "" ||
				claimed.LeaseUntil == nil {
				t.Fatalf("claimed run: %+v", claimed)
			}
			if got := h.do("GET", "/api/executions/"+task, a, nil); got.str("execution", "runner") != "remote:shared" ||
				bytes.Contains([]byte(got.raw), []byte(claimed.RunnerInstance)) {
				t.Fatalf("the run as its organization sees it: %s", got.raw)
			}

			// Another process under the same name and secret.
			other := remoteClient(t, h, "shared")
			archive := testenv.Tar(t, testenv.TarEntry{Name: "junit/"}, testenv.TarEntry{Name: "junit/results.xml", Body: junitPassing})
			forged := run.Reports{Dirs: []string{"junit"}, Bytes: 999, Summary: domain.Summary{Total: 7, Passed: 7}}
			for _, c := range []struct {
				what string
				call func() error
			}{
				{"extend", func() error { _, err := other.Extend(ctx, w.ID, 10*time.Minute); return err }},
				{"started", func() error { return other.Started(ctx, w.ID, "intruder-container") }},
				{"log", func() error { return other.Log(ctx, w.ID, 1, 0, "forged line\n") }},
				{"upload", func() error { _, err := other.Upload(ctx, w.ID, bytes.NewReader(archive)); return err }},
				{"done", func() error {
					return other.Done(ctx, w.ID, run.Result{Status: domain.ExecPassed, ExitCode: new(int), FinishedAt: h.clock.Now(), Reports: forged})
				}},
			} {
				if err := c.call(); !errors.Is(err, run.ErrLeaseLost) {
					t.Errorf("another process's %s of the run: %v, want a lost lease (409)", c.what, err)
				}
			}
			after := stored()
			if after.Status != domain.ExecRunning || after.ContainerID != "" || !after.LeaseUntil.Equal(*claimed.LeaseUntil) ||
				after.RunnerInstance != claimed.RunnerInstance || len(after.ReportDirs) != 0 || after.ReportBytes != 0 ||
				after.Summary.Total != 0 || after.FinishedAt != nil {
				t.Fatalf("the run after another process's calls: %+v", after)
			}
			if log, err := h.app.Store.Logs().Read(ctx, w.ID); err != nil || log != "" {
				t.Fatalf("the log after another process's calls: %q %v", log, err)
			}
			org := h.do("GET", "/api/organization", a, nil)
			if used := org.get("organization", "limits", "currentStorageUsedBytes"); used != 0.0 {
				t.Fatalf("storage after another process's upload: %v", used)
			}

			// The process that claimed it carries it to its end.
			if _, err := first.Extend(ctx, w.ID, 2*time.Minute); err != nil {
				t.Fatalf("extend: %v", err)
			}
			if err := first.Started(ctx, w.ID, "first-container"); err != nil {
				t.Fatalf("started: %v", err)
			}
			if err := first.Log(ctx, w.ID, 1, 0, "a real line\n"); err != nil {
				t.Fatalf("log: %v", err)
			}
			rep, err := first.Upload(ctx, w.ID, bytes.NewReader(archive))
			if err != nil || rep.Summary.Total != 1 {
				t.Fatalf("upload: %+v %v", rep, err)
			}
			if err := first.Done(ctx, w.ID, run.Result{Status: domain.ExecPassed, ExitCode: new(int), FinishedAt: h.clock.Now(), Reports: rep}); err != nil {
				t.Fatalf("done: %v", err)
			}
			done := h.do("GET", "/api/executions/"+task, a, nil)
			if done.str("execution", "status") != "PASSED" || done.get("execution", "summary", "total") != 1.0 {
				t.Fatalf("the run after its own process settled it: %s", done.raw)
			}
			if logs := h.do("GET", "/api/executions/"+task+"/logs", a, nil); logs.str("logs") != "a real line\n" {
				t.Fatalf("log: %s", logs.raw)
			}

			// A restart: a new process under the name, once the old one has been silent long
			// enough, holds nothing of its earlier life and claims new runs as usual.
			stale := h.queue(a, map[string]any{"image": passImage, "taskId": "left-behind"})
			lw, err := first.Next(ctx, time.Minute)
			if err != nil || lw == nil {
				t.Fatalf("claim before the restart: %+v %v", lw, err)
			}
			h.clock.Advance(time.Minute) // the old process went silent
			restarted := remoteClient(t, h, "shared")
			if err := restarted.Hello(ctx); err != nil {
				t.Fatalf("hello after the restart: %v", err)
			}
			if err := restarted.Log(ctx, lw.ID, 1, 0, "after restart\n"); !errors.Is(err, run.ErrLeaseLost) {
				t.Fatalf("the restarted process's log of its earlier life's run: %v, want a lost lease", err)
			}
			if got := h.do("GET", "/api/executions/"+stale, a, nil).str("execution", "status"); got != "RUNNING" {
				t.Fatalf("the earlier life's run: %s, want RUNNING until its lease is reaped", got)
			}
			fresh := h.queue(a, map[string]any{"image": passImage, "taskId": "after-restart"})
			nw, err := restarted.Next(ctx, time.Minute)
			if err != nil || nw == nil {
				t.Fatalf("the restarted process's claim: %+v %v", nw, err)
			}
			if err := restarted.Done(ctx, nw.ID, run.Result{Status: domain.ExecFailed, ExitCode: new(int), FinishedAt: h.clock.Now()}); err != nil {
				t.Fatalf("the restarted process settles its run: %v", err)
			}
			if got := h.do("GET", "/api/executions/"+fresh, a, nil).str("execution", "status"); got != "FAILED" {
				t.Fatalf("the restarted process's run: %s", got)
			}
		})
	}
}
