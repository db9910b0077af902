package retention_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"verdict/internal/domain"
	"verdict/internal/report"
	"verdict/internal/retention"
	"verdict/internal/store"
	"verdict/internal/store/sqlstore/sqlitetest"
	"verdict/internal/testenv"
)

var now = time.Date(2026, 3, 10, 9, 0, 0, 0, time.UTC)

// world is a store on a temporary SQLite file and a report folder on disk.
type world struct {
	t       *testing.T
	st      store.Store
	reports *report.FSStore
	dir     string
	n       int
}

func newWorld(t *testing.T) *world {
	st := sqlitetest.Open(t)
	dir := t.TempDir()
	reports, err := report.NewFSStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	return &world{t: t, st: st, reports: reports, dir: dir}
}

// run is a run of org that ended age ago, as the run plane leaves it: its log written while
// it ran, a report folder stored, its bytes counted in the organization's storage.
func (w *world) run(org *domain.Organization, age time.Duration, pinned bool) *domain.Execution {
	w.t.Helper()
	ctx := context.Background()
	w.n++
	end := now.Add(-age)
	started := end.Add(-time.Minute)
	e := &domain.Execution{ID: domain.NewID(), OrganizationID: org.ID, TaskID: fmt.Sprintf("run-%d", w.n), Image: "suite:1",
		Status: domain.ExecRunning, RunnerID: "r", QueuedAt: started, StartedAt: &started,
		Labels: map[string]string{"branch": "main"}}
	must(w.t, w.st.Executions().Create(ctx, e))
	must(w.t, w.st.Logs().Append(ctx, e.ID, 1, "line one of "+e.TaskID+"\n"))
	must(w.t, w.st.Logs().Append(ctx, e.ID, 2, "line two\n"))
	n, err := w.reports.Put(ctx, org.ID, e.TaskID, bytes.NewReader(testenv.Tar(w.t, testenv.TarEntry{Name: "playwright-report/"},
		testenv.TarEntry{Name: "playwright-report/index.html", Body: "<p>report of " + e.TaskID + "</p>"})), "playwright-report", 1<<20)
	must(w.t, err)
	must(w.t, w.st.Executions().Finish(ctx, e.ID, "r", store.Finish{Status: domain.ExecPassed, FinishedAt: end,
		ReportDirs: []string{"playwright-report"}, ReportIndexes: []string{"playwright-report"}, ReportBytes: n,
		Summary: domain.Summary{Total: 1, Passed: 1}, Tests: []domain.TestResult{{Name: "t", Status: domain.TestPassed}}}))
	must(w.t, w.st.Organizations().AddStorageUsed(ctx, org.ID, n))
	if pinned {
		must(w.t, w.st.Executions().SetPinned(ctx, org.ID, e.TaskID, true))
	}
	got, err := w.st.Executions().Get(ctx, org.ID, e.TaskID)
	must(w.t, err)
	return got
}

// state is what is left of a run: its row (nil: deleted), its log and whether its report
// folder is on disk.
func (w *world) state(e *domain.Execution) (*domain.Execution, string, bool) {
	w.t.Helper()
	ctx := context.Background()
	got, err := w.st.Executions().Get(ctx, e.OrganizationID, e.TaskID)
	if err == store.ErrNotFound {
		got = nil
	} else {
		must(w.t, err)
	}
	log, err := w.st.Logs().Read(ctx, e.ID)
	must(w.t, err)
	_, statErr := os.Stat(filepath.Join(w.dir, "reports", e.OrganizationID, e.TaskID))
	return got, log, statErr == nil
}

func (w *world) storage(org *domain.Organization) int64 {
	w.t.Helper()
	o, err := w.st.Organizations().Get(context.Background(), org.ID)
	must(w.t, err)
	return o.StorageUsedBytes
}

func (w *world) job() *retention.Job {
	return &retention.Job{Store: w.st, Reports: w.reports, Clock: func() time.Time { return now }, Batch: 2,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

const day = 24 * time.Hour

// A pass expires the files of finished runs past the organization's logs days (its log and
// report folder go, the run stays with a note and its results, the storage goes down), deletes
// the runs past its runs days, and leaves pinned runs and younger runs alone; a second pass
// changes nothing.
func TestPass(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	free := sqlitetest.Org(t, w.st, "Free Co", domain.PlanFree, now) // 14 and 90 days
	team := sqlitetest.Org(t, w.st, "Team Co", domain.PlanTeam, now) // shortened below to 5 and 20 days
	must(t, w.st.Organizations().SetRetention(ctx, team.ID, domain.RetentionSetting{LogsDays: ptr(5), RunsDays: ptr(20)}))

	young := w.run(free, 13*day, false)
	old := []*domain.Execution{w.run(free, 15*day, false), w.run(free, 20*day, false), w.run(free, 30*day, false)}
	pinned := w.run(free, 30*day, true)
	ancient := w.run(free, 91*day, false)
	pinnedAncient := w.run(free, 100*day, true)
	teamOld := w.run(team, 6*day, false)
	teamYoung := w.run(team, 4*day, false)
	teamAncient := w.run(team, 21*day, false)
	before := w.storage(free)

	res, err := w.job().Pass(ctx)
	must(t, err)
	if res.Expired != 6 || res.Deleted != 2 {
		t.Fatalf("pass: %+v, want 6 runs' files expired (3 free and the ancient one, 1 team and its ancient one) and 2 runs deleted", res)
	}
	note := domain.FilesExpiredNote(now)
	var freed int64
	for _, e := range append(old, teamOld) {
		got, log, files := w.state(e)
		if got == nil || got.FilesExpiredAt == nil || !got.FilesExpiredAt.Equal(now) || log != "" || files ||
			got.ReportBytes != 0 || len(got.ReportDirs) != 0 || got.Notes[len(got.Notes)-1] != note ||
			got.Status != domain.ExecPassed || got.Summary.Total != 1 || len(got.Tests) != 1 {
			t.Errorf("%s (ended %s ago): %+v, log %q, report folder on disk %v", e.TaskID, now.Sub(*e.FinishedAt), got, log, files)
		}
		if e.OrganizationID == free.ID {
			freed += e.ReportBytes
		}
	}
	for _, e := range []*domain.Execution{young, pinned, pinnedAncient, teamYoung} {
		got, log, files := w.state(e)
		if got == nil || got.FilesExpiredAt != nil || got.ReportBytes != e.ReportBytes || log == "" || !files {
			t.Errorf("%s (ended %s ago, pinned %v) was touched: %+v, log %q, files %v", e.TaskID, now.Sub(*e.FinishedAt), e.Pinned, got, log, files)
		}
	}
	for _, e := range []*domain.Execution{ancient, teamAncient} {
		if got, log, files := w.state(e); got != nil || log != "" || files {
			t.Errorf("%s (ended %s ago) is left: %+v, log %q, files %v", e.TaskID, now.Sub(*e.FinishedAt), got, log, files)
		}
	}
	if got := w.storage(free); got != before-freed-ancient.ReportBytes {
		t.Errorf("free organization's storage %d, want %d - %d - %d", got, before, freed, ancient.ReportBytes)
	}
	if got := w.storage(team); got != teamYoung.ReportBytes {
		t.Errorf("team organization's storage %d, want what its young run holds (%d)", got, teamYoung.ReportBytes)
	}

	again, err := w.job().Pass(ctx)
	must(t, err)
	if again != (retention.Result{}) {
		t.Fatalf("a second pass: %+v", again)
	}

	// Unpinned, the old pinned run's files expire at the next pass, and the ancient one goes.
	must(t, w.st.Executions().SetPinned(ctx, free.ID, pinned.TaskID, false))
	must(t, w.st.Executions().SetPinned(ctx, free.ID, pinnedAncient.TaskID, false))
	res, err = w.job().Pass(ctx)
	must(t, err)
	if res.Expired != 2 || res.Deleted != 1 {
		t.Fatalf("after unpinning: %+v", res)
	}
	if got, _, files := w.state(pinned); got == nil || got.FilesExpiredAt == nil || files {
		t.Errorf("the unpinned run: %+v, files %v", got, files)
	}
	if got, _, _ := w.state(pinnedAncient); got != nil {
		t.Errorf("the unpinned ancient run is left: %+v", got)
	}
}

// The server's maxima cut every organization's retention, whatever its plan or setting.
func TestServerMaximum(t *testing.T) {
	w := newWorld(t)
	ent := sqlitetest.Org(t, w.st, "Big Co", domain.PlanEnterprise, now) // 365 and 730 days
	e := w.run(ent, 40*day, false)
	kept := w.run(ent, 20*day, false)
	j := w.job()
	j.Max = domain.Retention{LogsDays: 30}
	res, err := j.Pass(context.Background())
	must(t, err)
	if got, _, files := w.state(e); res.Expired != 1 || got.FilesExpiredAt == nil || files {
		t.Fatalf("%+v: %+v, files %v", res, got, files)
	}
	if got, _, files := w.state(kept); got.FilesExpiredAt != nil || !files {
		t.Fatalf("a run within the maximum: %+v, files %v", got, files)
	}
}

// Jobs racing (replicas) take each run once: the storage goes down by what the runs held,
// not more.
func TestRacingJobs(t *testing.T) {
	w := newWorld(t)
	org := sqlitetest.Org(t, w.st, "Race Co", domain.PlanFree, now)
	var held int64
	for range 12 {
		held += w.run(org, 20*day, false).ReportBytes
	}
	young := w.run(org, day, false)
	var wg sync.WaitGroup
	results := make([]retention.Result, 4)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			results[i], err = w.job().Pass(context.Background())
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	expired := 0
	var freed int64
	for _, r := range results {
		expired, freed = expired+r.Expired, freed+r.Freed
	}
	if expired != 12 || freed != held {
		t.Fatalf("passes expired %d runs, freed %d bytes; want 12 and %d: %+v", expired, freed, held, results)
	}
	if got := w.storage(org); got != young.ReportBytes {
		t.Fatalf("storage %d, want %d", got, young.ReportBytes)
	}
}

func ptr[T any](v T) *T { return &v }
