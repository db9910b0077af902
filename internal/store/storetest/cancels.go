package storetest

import (
	"fmt"
	"testing"
	"time"

	"verdict/internal/domain"
)

// testCancelRequested: a remote runner process hears of the cancels asked for among the runs it
// holds (its runner ID and instance), in the order it asked, and of nothing else: not another
// process's runs, not another runner's, not unknown ids. Across more ids than one statement
// takes, the answer is the same.
func testCancelRequested(t *testing.T, open Opener) {
	f := setup(t, open)
	o := f.orgOnPlan(domain.PlanEnterprise)
	base := time.Date(2026, 4, 1, 9, 0, 0, 0, time.UTC)
	held := func(runner, instance string, cancel bool) string {
		return f.runWith(o.ID, base, func(e *domain.Execution) {
			e.Status, e.RunnerID, e.RunnerInstance, e.CancelRequested = domain.ExecRunning, runner, instance, cancel
		}).ID
	}
	a1, a2, a3 := held("remote:a", "i1", true), held("remote:a", "i1", false), held("remote:a", "i1", true)
	otherInstance, otherRunner := held("remote:a", "i2", true), held("remote:b", "i1", true)

	got, err := f.s.Executions().CancelRequested(f.ctx, "remote:a", "i1", []string{a3, a2, "unknown", otherInstance, otherRunner, a1})
	must(t, err)
	equal(t, "the process's cancelled runs, in the order asked", got, []string{a3, a1})
	got, err = f.s.Executions().CancelRequested(f.ctx, "remote:a", "i1", []string{a2})
	must(t, err)
	equal(t, "none cancelled", got, []string(nil))
	got, err = f.s.Executions().CancelRequested(f.ctx, "remote:a", "i1", nil)
	must(t, err)
	equal(t, "no ids", got, []string(nil))

	// 1500 ids, the process's two cancelled runs among them: more than one statement's worth.
	many := make([]string, 0, 1500)
	for i := range 1498 {
		many = append(many, fmt.Sprintf("absent-%d", i))
	}
	many = append(many, a1, a3)
	got, err = f.s.Executions().CancelRequested(f.ctx, "remote:a", "i1", many)
	must(t, err)
	equal(t, "across statements", got, []string{a1, a3})
}
