package storetest

import (
	"testing"
	"time"

	"verdict/internal/domain"
	"verdict/internal/store"
)

// testOutcomes checks ExecutionRepo.Outcomes: the organization's finished verdicts in the
// window, newest first, bounded, with their run's fields (not their tests), and never another
// organization's runs; and ImageOutcomes: an image's finished runs, CANCELLED included.
func testOutcomes(t *testing.T, open Opener) {
	f := setup(t, open)
	o, other := f.org(), f.org()
	p := f.project(o.ID, "Web")
	since := base.Add(-24 * time.Hour)
	finished := func(orgID string, at time.Time, status domain.ExecStatus, project string, tests ...domain.TestResult) *domain.Execution {
		return f.runWith(orgID, at, func(e *domain.Execution) {
			start, end := at.Add(time.Second), at.Add(3*time.Second)
			e.Status, e.ProjectID, e.Tests, e.StartedAt, e.FinishedAt = status, project, tests, &start, &end
			if status == domain.ExecError {
				e.Error = "no container"
			}
		})
	}
	failing := domain.TestResult{Name: "pays", Suite: "cart", Status: domain.TestFailed, Error: "500", Retries: 1, DurationMs: 7}
	old := finished(o.ID, since.Add(-time.Millisecond), domain.ExecPassed, "")
	first := finished(o.ID, since, domain.ExecPassed, p.ID, domain.TestResult{Name: "pays", Suite: "cart", Status: domain.TestPassed})
	second := finished(o.ID, base, domain.ExecFailed, p.ID, failing)
	third := finished(o.ID, base.Add(time.Minute), domain.ExecUnstable, "")
	fourth := finished(o.ID, base.Add(2*time.Minute), domain.ExecError, "")
	finished(o.ID, base.Add(3*time.Minute), domain.ExecCancelled, "")
	f.run(o.ID, base.Add(4*time.Minute)) // PENDING
	finished(other.ID, base.Add(5*time.Minute), domain.ExecFailed, "", failing)
	_ = old

	ex := f.s.Executions()
	got, err := ex.Outcomes(f.ctx, o.ID, since, 10)
	must(t, err)
	want := []string{fourth.TaskID, third.TaskID, second.TaskID, first.TaskID}
	var tasks []string
	for _, r := range got {
		tasks = append(tasks, r.TaskID)
	}
	equal(t, "Outcomes: finished verdicts of the window, newest first", tasks, want)
	if len(got) != 4 {
		return
	}
	start, end := second.QueuedAt.Add(time.Second), second.QueuedAt.Add(3*time.Second)
	equal(t, "a failed run", got[2], store.RunOutcome{ID: second.ID, TaskID: second.TaskID, ProjectID: p.ID, Status: domain.ExecFailed,
		QueuedAt: second.QueuedAt, StartedAt: &start, FinishedAt: &end})
	equal(t, "its duration", got[2].DurationMs(base.Add(time.Hour)), int64(2000))
	equal(t, "an ERROR run's message", got[0].Error, "no container")

	got, err = ex.Outcomes(f.ctx, o.ID, since, 2)
	must(t, err)
	equal(t, "Outcomes bounded", len(got), 2)
	got, err = ex.Outcomes(f.ctx, o.ID, since, 0)
	must(t, err)
	equal(t, "Outcomes with no room", len(got), 0)

	got, err = ex.Outcomes(f.ctx, other.ID, since, 10)
	must(t, err)
	equal(t, "another organization's outcomes", len(got), 1)
	got, err = ex.Outcomes(f.ctx, domain.NewID(), since, 10)
	must(t, err)
	equal(t, "an unknown organization's outcomes", len(got), 0)

	// An image's runs: every final status, CANCELLED included, whenever queued; not another
	// image's, not one still going, not another organization's.
	cancelled := f.runWith(o.ID, base.Add(6*time.Minute), func(e *domain.Execution) {
		e.Status, e.Image = domain.ExecCancelled, "suite:image"
	})
	imaged := f.runWith(o.ID, since.Add(-time.Hour), func(e *domain.Execution) {
		end := since
		e.Status, e.Image, e.FinishedAt = domain.ExecFailed, "suite:image", &end
	})
	f.runWith(o.ID, base.Add(7*time.Minute), func(e *domain.Execution) { e.Status, e.Image = domain.ExecRunning, "suite:image" })
	f.runWith(other.ID, base.Add(8*time.Minute), func(e *domain.Execution) { e.Status, e.Image = domain.ExecPassed, "suite:image" })
	img, err := ex.ImageOutcomes(f.ctx, o.ID, "suite:image", 10)
	must(t, err)
	tasks = nil
	for _, r := range img {
		tasks = append(tasks, r.TaskID)
	}
	equal(t, "ImageOutcomes: the image's finished runs, newest first", tasks, []string{cancelled.TaskID, imaged.TaskID})
	if len(img) == 2 {
		equal(t, "a run never started", img[0].DurationMs(base), int64(0))
		equal(t, "its internal ID", img[1].ID, imaged.ID)
	}
	img, err = ex.ImageOutcomes(f.ctx, o.ID, "suite:image", 1)
	must(t, err)
	equal(t, "ImageOutcomes bounded", len(img), 1)
	img, err = ex.ImageOutcomes(f.ctx, o.ID, "suite:image", 0)
	must(t, err)
	equal(t, "ImageOutcomes with no room", len(img), 0)
}
