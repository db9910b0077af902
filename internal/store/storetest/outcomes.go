package storetest

import (
	"testing"
	"time"

	"verdict/internal/domain"
	"verdict/internal/store"
)

// testOutcomes checks ExecutionRepo.Outcomes: the organization's finished verdicts in the
// window, newest first, bounded, with their tests, and never another organization's runs.
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
	equal(t, "a failed run", got[2], store.RunOutcome{TaskID: second.TaskID, ProjectID: p.ID, Status: domain.ExecFailed,
		QueuedAt: second.QueuedAt, StartedAt: &start, FinishedAt: &end, Tests: []domain.TestResult{failing}})
	equal(t, "an ERROR run's message", got[0].Error, "no container")
	equal(t, "a run without tests", len(got[1].Tests), 0)

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
}
