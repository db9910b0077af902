package storetest

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"verdict/internal/domain"
	"verdict/internal/store"
)

// testRetention: pins, the expiry of runs' files with the storage they release, and the
// deletion of old runs, as retention uses them.
func testRetention(t *testing.T, open Opener) {
	// finishedRun is a PASSED run of orgID that finished at end, with reports of bytes.
	finishedRun := func(f *fixture, orgID string, end time.Time, bytes int64, edit func(e *domain.Execution)) *domain.Execution {
		f.t.Helper()
		return f.runWith(orgID, end.Add(-time.Minute), func(e *domain.Execution) {
			e.Status, e.FinishedAt, e.StartedAt = domain.ExecPassed, ptr(end), ptr(end.Add(-30*time.Second))
			e.ReportDirs, e.ReportIndexes, e.ReportBytes = []string{"playwright-report"}, []string{"playwright-report"}, bytes
			e.Notes = []string{"an earlier note"}
			if edit != nil {
				edit(e)
			}
		})
	}
	// pin pins the run e; a run is queued unpinned.
	pin := func(f *fixture, e *domain.Execution) {
		f.t.Helper()
		must(f.t, f.s.Executions().SetPinned(f.ctx, e.OrganizationID, e.TaskID, true))
		e.Pinned = true
	}
	// expire marks the files of the runs es expired at at, alone of their organization's runs
	// (the others are pinned meanwhile); a run is queued with its files.
	expire := func(f *fixture, at time.Time, es ...*domain.Execution) {
		f.t.Helper()
		for _, e := range es {
			page, _, err := f.s.Executions().List(f.ctx, e.OrganizationID, store.ExecutionFilter{})
			must(f.t, err)
			var held []domain.Execution
			for _, r := range page {
				if !r.Pinned && !slices.ContainsFunc(es, func(x *domain.Execution) bool { return x.ID == r.ID }) {
					held = append(held, r)
					must(f.t, f.s.Executions().SetPinned(f.ctx, r.OrganizationID, r.TaskID, true))
				}
			}
			_, err = f.s.Executions().ExpireFiles(f.ctx, e.OrganizationID, e.FinishedAt.Add(time.Millisecond), at, "expired", 1000)
			must(f.t, err)
			for _, r := range held {
				must(f.t, f.s.Executions().SetPinned(f.ctx, r.OrganizationID, r.TaskID, false))
			}
			got := f.getRun(e.OrganizationID, e.TaskID)
			if got.FilesExpiredAt == nil {
				f.t.Fatalf("%s did not expire", e.TaskID)
			}
			e.FilesExpiredAt, e.ReportBytes = got.FilesExpiredAt, 0
		}
	}
	storage := func(f *fixture, orgID string) int64 {
		f.t.Helper()
		o, err := f.s.Organizations().Get(f.ctx, orgID)
		must(f.t, err)
		return o.StorageUsedBytes
	}
	taskIDs := func(runs []store.RunFiles) []string {
		out := make([]string, len(runs))
		for i, r := range runs {
			out[i] = r.TaskID
		}
		slices.Sort(out)
		return out
	}

	t.Run("PinnedAndExpiredRoundTrip", func(t *testing.T) {
		f := setup(t, open)
		o := f.org()
		e := finishedRun(f, o.ID, base, 10, nil)
		expire(f, base.Add(time.Hour), e)
		pin(f, e)
		got := f.getRun(o.ID, e.TaskID)
		equal(t, "Get pinned", got.Pinned, true)
		equal(t, "Get filesExpiredAt", got.FilesExpiredAt, ptr(base.Add(time.Hour)))
		listed, err := f.s.Executions().GetListed(f.ctx, o.ID, e.TaskID)
		must(t, err)
		equal(t, "GetListed", [2]any{listed.Pinned, listed.FilesExpiredAt}, [2]any{true, ptr(base.Add(time.Hour))})
		plain := finishedRun(f, o.ID, base, 10, nil)
		equal(t, "a run is neither pinned nor expired when created so", [2]any{f.getRun(o.ID, plain.TaskID).Pinned,
			f.getRun(o.ID, plain.TaskID).FilesExpiredAt}, [2]any{false, (*time.Time)(nil)})
	})

	// The run list reads what retention writes to finished runs at once, however often the
	// page was read before: a finished run's list row is not frozen.
	t.Run("SetPinnedShowsInTheList", func(t *testing.T) {
		f := setup(t, open)
		o, other := f.org(), f.org()
		var runs []*domain.Execution
		for i := range 30 {
			runs = append(runs, finishedRun(f, o.ID, base.Add(time.Duration(i)*time.Minute), 10, nil))
		}
		pinnedIn := func() []string {
			t.Helper()
			page, _, err := f.s.Executions().List(f.ctx, o.ID, store.ExecutionFilter{Limit: 25})
			must(t, err)
			var out []string
			for _, e := range page {
				if e.Pinned {
					out = append(out, e.TaskID)
				}
			}
			return out
		}
		for range 3 {
			equal(t, "pinned before", pinnedIn(), []string(nil))
		}
		must(t, f.s.Executions().SetPinned(f.ctx, o.ID, runs[29].TaskID, true))
		must(t, f.s.Executions().SetPinned(f.ctx, o.ID, runs[10].TaskID, true))
		equal(t, "pinned after", pinnedIn(), []string{runs[29].TaskID, runs[10].TaskID})
		equal(t, "pinned read again", pinnedIn(), []string{runs[29].TaskID, runs[10].TaskID})
		must(t, f.s.Executions().SetPinned(f.ctx, o.ID, runs[29].TaskID, false))
		equal(t, "unpinned", pinnedIn(), []string{runs[10].TaskID})
		equal(t, "Get", f.getRun(o.ID, runs[10].TaskID).Pinned, true)
		wantErr(t, "another organization's run", f.s.Executions().SetPinned(f.ctx, other.ID, runs[10].TaskID, false), store.ErrNotFound)
		wantErr(t, "unknown run", f.s.Executions().SetPinned(f.ctx, o.ID, "nope", true), store.ErrNotFound)
		equal(t, "pinned", f.getRun(o.ID, runs[10].TaskID).Pinned, true)
	})

	t.Run("ExpireFiles", func(t *testing.T) {
		f := setup(t, open)
		o, other := f.org(), f.org()
		cutoff := base.AddDate(0, 0, -14)
		must(t, f.s.Organizations().AddStorageUsed(f.ctx, o.ID, 1000))
		must(t, f.s.Organizations().AddStorageUsed(f.ctx, other.ID, 1000))
		var due []*domain.Execution
		for i := range 5 {
			due = append(due, finishedRun(f, o.ID, cutoff.Add(-time.Duration(5-i)*time.Hour), int64(10*(i+1)), nil))
		}
		failed := finishedRun(f, o.ID, cutoff.Add(-time.Hour), 7, func(e *domain.Execution) { e.Status = domain.ExecFailed })
		pinned := finishedRun(f, o.ID, cutoff.Add(-time.Hour), 100, nil)
		pin(f, pinned)
		recent := finishedRun(f, o.ID, cutoff.Add(time.Minute), 100, nil)
		expired := finishedRun(f, o.ID, cutoff.Add(-time.Hour), 0, nil)
		expire(f, cutoff, expired)
		going := f.runWith(o.ID, cutoff.AddDate(0, 0, -1), func(e *domain.Execution) { e.Status = domain.ExecRunning })
		theirs := finishedRun(f, other.ID, cutoff.Add(-time.Hour), 100, nil)
		// The list page is read (and its runs cached) before they expire.
		if _, _, err := f.s.Executions().List(f.ctx, o.ID, store.ExecutionFilter{Limit: 25}); err != nil {
			t.Fatal(err)
		}

		at := base.Add(time.Second)
		note := domain.FilesExpiredNote(at)
		first, err := f.s.Executions().ExpireFiles(f.ctx, o.ID, cutoff, at, note, 4)
		must(t, err)
		equal(t, "the first batch: the oldest 4", taskIDs(first), taskIDs([]store.RunFiles{
			{TaskID: due[0].TaskID}, {TaskID: due[1].TaskID}, {TaskID: due[2].TaskID}, {TaskID: due[3].TaskID}}))
		equal(t, "storage after the first batch", storage(f, o.ID), int64(1000-10-20-30-40))
		second, err := f.s.Executions().ExpireFiles(f.ctx, o.ID, cutoff, at, note, 4)
		must(t, err)
		equal(t, "the second batch", taskIDs(second), taskIDs([]store.RunFiles{{TaskID: due[4].TaskID}, {TaskID: failed.TaskID}}))
		for _, r := range second {
			if r.TaskID == failed.TaskID && r.ReportBytes != 7 {
				t.Errorf("the failed run's released bytes: %d", r.ReportBytes)
			}
		}
		equal(t, "storage after the second batch", storage(f, o.ID), int64(1000-150-7))
		none, err := f.s.Executions().ExpireFiles(f.ctx, o.ID, cutoff, at.Add(time.Hour), "again", 100)
		must(t, err)
		equal(t, "nothing left", len(none), 0)
		equal(t, "storage released once", storage(f, o.ID), int64(1000-157))
		equal(t, "another organization's storage", storage(f, other.ID), int64(1000))

		got := f.getRun(o.ID, due[0].TaskID)
		equal(t, "expired run", [5]any{got.FilesExpiredAt, got.ReportBytes, len(got.ReportDirs), len(got.ReportIndexes), got.Notes},
			[5]any{ptr(at), int64(0), 0, 0, []string{"an earlier note", note}})
		equal(t, "it keeps its status and results", [2]any{got.Status, got.Summary}, [2]any{domain.ExecPassed, due[0].Summary})
		page, _, err := f.s.Executions().List(f.ctx, o.ID, store.ExecutionFilter{Limit: 25})
		must(t, err)
		for _, e := range page {
			if e.ID == due[0].ID && (e.FilesExpiredAt == nil || !e.FilesExpiredAt.Equal(at) || e.ReportBytes != 0 || len(e.Notes) != 2) {
				t.Errorf("the list shows the expired run as %+v", e)
			}
		}
		for _, e := range []*domain.Execution{pinned, recent, going} {
			if got := f.getRun(o.ID, e.TaskID); got.FilesExpiredAt != nil || got.ReportBytes != e.ReportBytes {
				t.Errorf("%s (pinned %v, status %s) expired: %+v", e.TaskID, e.Pinned, e.Status, got)
			}
		}
		equal(t, "an expired run keeps its expiry", f.getRun(o.ID, expired.TaskID).FilesExpiredAt, ptr(cutoff))
		equal(t, "another organization's run", f.getRun(other.ID, theirs.TaskID).FilesExpiredAt, (*time.Time)(nil))

		// Once unpinned, the pinned run is due.
		must(t, f.s.Executions().SetPinned(f.ctx, o.ID, pinned.TaskID, false))
		last, err := f.s.Executions().ExpireFiles(f.ctx, o.ID, cutoff, at, note, 100)
		must(t, err)
		equal(t, "the unpinned run", taskIDs(last), []string{pinned.TaskID})
		equal(t, "storage", storage(f, o.ID), int64(1000-157-100))
	})

	// Callers racing over the same runs (replicas running the job at once) mark each run once
	// and release its bytes once.
	t.Run("ExpireFilesRacing", func(t *testing.T) {
		f := setup(t, open)
		o := f.org()
		cutoff := base
		var want []string
		for i := range 120 {
			e := finishedRun(f, o.ID, cutoff.Add(-time.Duration(i+1)*time.Minute), 5, nil)
			want = append(want, e.TaskID)
		}
		must(t, f.s.Organizations().AddStorageUsed(f.ctx, o.ID, 120*5+1))
		var mu sync.Mutex
		var got []store.RunFiles
		var wg sync.WaitGroup
		errs := make(chan error, 6)
		start := make(chan struct{})
		for range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for {
					batch, err := f.s.Executions().ExpireFiles(f.ctx, o.ID, cutoff, base, "expired", 20)
					if err != nil {
						errs <- err
						return
					}
					if len(batch) == 0 {
						return
					}
					mu.Lock()
					got = append(got, batch...)
					mu.Unlock()
				}
			}()
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		slices.Sort(want)
		equal(t, "each run marked once", taskIDs(got), want)
		equal(t, "storage released once", storage(f, o.ID), int64(1))
	})

	// A caller that reaches runs another caller's open transaction is marking (a replica's
	// batch in flight) neither marks them again nor releases their bytes again: it passes over
	// them, or waits and finds them marked.
	t.Run("ExpireFilesBesideABatchInFlight", func(t *testing.T) {
		f := setup(t, open)
		o := f.org()
		for i := range 8 {
			finishedRun(f, o.ID, base.Add(-time.Duration(i+1)*time.Minute), 10, nil)
		}
		must(t, f.s.Organizations().AddStorageUsed(f.ctx, o.ID, 8*10+1000))
		var first, second []store.RunFiles
		marked, release, held := make(chan struct{}), make(chan struct{}), make(chan error, 1)
		go func() {
			held <- f.s.InTx(f.ctx, func(tx store.Store) error {
				var err error
				first, err = tx.Executions().ExpireFiles(f.ctx, o.ID, base, base, "expired", 5)
				close(marked)
				<-release
				return err
			})
		}()
		<-marked
		done := make(chan error, 1)
		go func() {
			var err error
			second, err = f.s.Executions().ExpireFiles(f.ctx, o.ID, base, base, "expired", 5)
			done <- err
		}()
		time.Sleep(200 * time.Millisecond) // the second caller reaches the runs the first holds
		close(release)
		must(t, <-held)
		must(t, <-done)
		equal(t, "marked by the first", len(first), 5)
		for _, r := range second {
			if slices.ContainsFunc(first, func(x store.RunFiles) bool { return x.ID == r.ID }) {
				t.Errorf("%s marked by both callers", r.TaskID)
			}
		}
		equal(t, "marked by the second", len(second), 3)
		equal(t, "storage released once", storage(f, o.ID), int64(1000))
	})

	t.Run("DeleteExpired", func(t *testing.T) {
		f := setup(t, open)
		o, other := f.org(), f.org()
		cutoff := base.AddDate(0, 0, -90)
		old := func(end time.Time) *domain.Execution {
			return finishedRun(f, o.ID, end, 0, func(e *domain.Execution) { e.Labels = map[string]string{"branch": "main"} })
		}
		a, b, pinned := old(cutoff.Add(-time.Hour)), old(cutoff.Add(-time.Hour)), old(cutoff.Add(-time.Hour))
		kept := finishedRun(f, o.ID, cutoff.Add(-time.Hour), 10, nil) // its files did not expire yet
		young := old(cutoff.Add(time.Hour))
		theirs := finishedRun(f, other.ID, cutoff.Add(-time.Hour), 0, nil)
		expire(f, cutoff, a, b, pinned, young, theirs)
		pin(f, pinned)
		listed, err := f.s.Executions().ListExpired(f.ctx, o.ID, cutoff, 100)
		must(t, err)
		equal(t, "ListExpired", taskIDs(listed), taskIDs([]store.RunFiles{{TaskID: a.TaskID}, {TaskID: b.TaskID}}))
		limited, err := f.s.Executions().ListExpired(f.ctx, o.ID, cutoff, 1)
		must(t, err)
		equal(t, "ListExpired within its limit", len(limited), 1)

		// Their test results: a deleted run's go with it, the others' stay.
		for _, e := range []*domain.Execution{a, pinned, theirs} {
			must(t, f.s.Tests().Record(f.ctx, store.RunResults{Run: e, Outcomes: []domain.TestOutcome{
				{Suite: "cart", Name: "pays", Status: domain.TestPassed}}}))
		}
		results := func(e *domain.Execution) int {
			t.Helper()
			outs, err := f.s.Tests().ForRun(f.ctx, e.OrganizationID, e.ID)
			must(t, err)
			return len(outs)
		}

		// A run pinned since it was listed stays; another organization's run is not touched.
		n, err := f.s.Executions().DeleteExpired(f.ctx, o.ID, []string{a.ID, b.ID, pinned.ID, kept.ID, young.ID, theirs.ID}, cutoff)
		must(t, err)
		equal(t, "deleted", n, 2)
		for _, e := range []*domain.Execution{a, b} {
			_, err := f.s.Executions().Get(f.ctx, o.ID, e.TaskID)
			wantErr(t, "a deleted run", err, store.ErrNotFound)
		}
		for _, e := range []*domain.Execution{pinned, kept, young} {
			f.getRun(o.ID, e.TaskID)
		}
		f.getRun(other.ID, theirs.TaskID)
		equal(t, "test results of a deleted run, a pinned one, another organization's",
			[3]int{results(a), results(pinned), results(theirs)}, [3]int{0, 1, 1})
		// Its labels went with it: the label filter finds only the runs left.
		page, total, err := f.s.Executions().List(f.ctx, o.ID, store.ExecutionFilter{Labels: []domain.Label{{Key: "branch", Value: "main"}}})
		must(t, err)
		equal(t, "labelled runs left", [2]any{total, len(page)}, [2]any{2, 2})
		// The run ledger still counts them.
		queued, err := f.s.Executions().CountSince(f.ctx, o.ID, cutoff.AddDate(0, 0, -1))
		must(t, err)
		equal(t, "runs counted in the ledger", queued, 5)
		n, err = f.s.Executions().DeleteExpired(f.ctx, o.ID, nil, cutoff)
		must(t, err)
		equal(t, "nothing to delete", n, 0)
	})

	// DeleteChunks deletes the chunks of the runs it is given, at most limit a statement.
	t.Run("DeleteChunks", func(t *testing.T) {
		f := setup(t, open)
		o := f.org()
		logged := func(chunks int) *domain.Execution {
			e := f.runWith(o.ID, base, func(e *domain.Execution) { e.Status, e.RunnerID = domain.ExecRunning, "r" })
			for i := range chunks {
				must(t, f.s.Logs().Append(f.ctx, e.ID, i+1, fmt.Sprintf("line %d of %s\n", i, e.TaskID)))
			}
			return e
		}
		a, b, c := logged(5), logged(3), logged(2)
		n, err := f.s.Logs().DeleteChunks(f.ctx, []string{a.ID, b.ID}, 6)
		must(t, err)
		equal(t, "the first statement", n, 6)
		n, err = f.s.Logs().DeleteChunks(f.ctx, []string{a.ID, b.ID}, 6)
		must(t, err)
		equal(t, "the second statement", n, 2)
		n, err = f.s.Logs().DeleteChunks(f.ctx, []string{a.ID, b.ID}, 6)
		must(t, err)
		equal(t, "nothing left", n, 0)
		for _, e := range []*domain.Execution{a, b} {
			size, err := f.s.Logs().Size(f.ctx, e.ID)
			must(t, err)
			equal(t, "log left of "+e.TaskID, size, int64(0))
		}
		log, err := f.s.Logs().Read(f.ctx, c.ID)
		must(t, err)
		equal(t, "another run's log", log, "line 0 of "+c.TaskID+"\nline 1 of "+c.TaskID+"\n")
		n, err = f.s.Logs().DeleteChunks(f.ctx, nil, 6)
		must(t, err)
		equal(t, "no runs", n, 0)
	})

	t.Run("OrganizationSettings", func(t *testing.T) {
		f := setup(t, open)
		o := f.org()
		equal(t, "a new organization has no setting", o.Retention, domain.RetentionSetting{})
		must(t, f.s.Organizations().SetRetention(f.ctx, o.ID, domain.RetentionSetting{LogsDays: ptr(7)}))
		got, err := f.s.Organizations().Get(f.ctx, o.ID)
		must(t, err)
		equal(t, "logs only", got.Retention, domain.RetentionSetting{LogsDays: ptr(7)})
		must(t, f.s.Organizations().SetRetention(f.ctx, o.ID, domain.RetentionSetting{LogsDays: ptr(3), RunsDays: ptr(30)}))
		got, err = f.s.Organizations().Get(f.ctx, o.ID)
		must(t, err)
		equal(t, "both", got.Retention, domain.RetentionSetting{LogsDays: ptr(3), RunsDays: ptr(30)})
		must(t, f.s.Organizations().SetRetention(f.ctx, o.ID, domain.RetentionSetting{}))
		got, err = f.s.Organizations().Get(f.ctx, o.ID)
		must(t, err)
		equal(t, "reset", got.Retention, domain.RetentionSetting{})
		wantErr(t, "unknown organization", f.s.Organizations().SetRetention(f.ctx, domain.NewID(), domain.RetentionSetting{}), store.ErrNotFound)
	})

	t.Run("ListAfter", func(t *testing.T) {
		f := setup(t, open)
		var want []string
		for range 7 {
			want = append(want, f.org().ID)
		}
		slices.Sort(want)
		var got []string
		after := ""
		for pages := 0; ; pages++ {
			page, err := f.s.Organizations().ListAfter(f.ctx, after, 3)
			must(t, err)
			if len(page) == 0 {
				break
			}
			if pages > 5 || len(page) > 3 {
				t.Fatalf("page %d of %d organizations", pages, len(page))
			}
			for _, o := range page {
				got = append(got, o.ID)
			}
			after = page[len(page)-1].ID
		}
		equal(t, "every organization once, in ID order", got, want)
	})
}
