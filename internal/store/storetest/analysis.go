package storetest

import (
	"reflect"
	"testing"
	"time"

	"verdict/internal/domain"
	"verdict/internal/store"
)

// testAnalysis covers what failure analysis stores: a run's analysis (written with its final
// status, replaced on request, left out of lists), the failure history, triages, and each
// organization's model settings.
func testAnalysis(t *testing.T, open Opener) {
	t.Run("AnalysisWithFinishAndSetAnalysis", func(t *testing.T) {
		f := setup(t, open)
		o := f.orgOnPlan(domain.PlanEnterprise)
		e := f.run(o.ID, base)
		claimed := f.claim("r1", base, func(domain.Plan) int { return 10 })
		if claimed == nil || claimed.ID != e.ID {
			t.Fatalf("claimed %v, want %s", claimed, e.ID)
		}
		exit := 1
		must(t, f.s.Executions().Finish(f.ctx, e.ID, "r1", store.Finish{Status: domain.ExecAnalyzing, ExitCode: &exit,
			FinishedAt: base}))
		if got := f.getRun(o.ID, e.TaskID); got.Status != domain.ExecAnalyzing || got.Analysis != nil || got.FinishedAt != nil {
			t.Fatalf("after ANALYZING: status %s, analysis %v, finished %v", got.Status, got.Analysis, got.FinishedAt)
		}
		errText := "openai: 429"
		a := &domain.Analysis{Status: domain.AnalysisCompleted, Provider: "builtin", Model: "builtin", Category: "environment",
			Summary: "s", RootCause: "r", SuggestedFix: "f", Confidence: 0.75, Evidence: []string{"e1"}, Error: &errText,
			Failures:  []domain.FailureRef{{Test: "t", Signature: "abc", Occurrences: 2, FirstSeenTaskID: "first"}},
			CreatedAt: base.Add(time.Second), DurationMs: 12}
		must(t, f.s.Executions().Finish(f.ctx, e.ID, "r1", store.Finish{Status: domain.ExecFailed, ExitCode: &exit,
			FinishedAt: base.Add(time.Second), Analysis: a}))
		got := f.getRun(o.ID, e.TaskID)
		if got.Status != domain.ExecFailed || !reflect.DeepEqual(got.Analysis, a) {
			t.Fatalf("after Finish: status %s, analysis %+v, want %+v", got.Status, got.Analysis, a)
		}
		list, _, err := f.s.Executions().List(f.ctx, o.ID, store.ExecutionFilter{Limit: 10})
		must(t, err)
		if len(list) != 1 || list[0].Analysis != nil {
			t.Fatalf("List carries the analysis: %+v", list)
		}
		b := *a
		b.Category, b.Triage = "product_bug", &domain.TriageRef{Category: "product_bug", By: "Ann", At: base}
		must(t, f.s.Executions().SetAnalysis(f.ctx, o.ID, e.ID, &b))
		if got := f.getRun(o.ID, e.TaskID); !reflect.DeepEqual(got.Analysis, &b) {
			t.Fatalf("after SetAnalysis: %+v", got.Analysis)
		}
		other := f.orgOnPlan(domain.PlanEnterprise)
		wantErr(t, "SetAnalysis from another organization", f.s.Executions().SetAnalysis(f.ctx, other.ID, e.ID, a), store.ErrNotFound)
		pending := f.run(o.ID, base.Add(time.Minute))
		wantErr(t, "SetAnalysis on a pending run", f.s.Executions().SetAnalysis(f.ctx, o.ID, pending.ID, a), store.ErrNotFound)
	})

	t.Run("SettleExpired", func(t *testing.T) {
		f := setup(t, open)
		o := f.orgOnPlan(domain.PlanEnterprise)
		ex := f.s.Executions()
		e := f.run(o.ID, base)
		f.claim("r1", base, func(domain.Plan) int { return 10 }) // lease until base+1m
		tests := []domain.TestResult{{Name: "t", Status: domain.TestFailed, Error: "boom"}}
		must(t, ex.Finish(f.ctx, e.ID, "r1", store.Finish{Status: domain.ExecAnalyzing, ExitCode: ptr(1), Tests: tests,
			Summary: domain.Summarize(tests), ReportBytes: 7}))
		msg := "the analysis was interrupted: runner lost"
		a := &domain.Analysis{Status: domain.AnalysisFailed, Provider: "builtin", Model: "builtin", Category: "unknown",
			Failures: []domain.FailureRef{}, Evidence: []string{}, Error: &msg, CreatedAt: base}
		lease := base.Add(time.Minute)
		ok, err := ex.SettleExpired(f.ctx, e.ID, lease, domain.ExecFailed, a)
		must(t, err)
		equal(t, "SettleExpired before the lease ends", ok, false)
		ok, err = ex.SettleExpired(f.ctx, e.ID, lease.Add(time.Second), domain.ExecFailed, a)
		must(t, err)
		equal(t, "SettleExpired", ok, true)
		got := f.getRun(o.ID, e.TaskID)
		if got.Status != domain.ExecFailed || got.FinishedAt == nil || got.LeaseUntil != nil || got.ReportBytes != 7 ||
			len(got.Tests) != 1 || got.ExitCode == nil || *got.ExitCode != 1 || !reflect.DeepEqual(got.Analysis, a) {
			t.Fatalf("settled run: %+v", got)
		}
		ok, err = ex.SettleExpired(f.ctx, e.ID, lease.Add(time.Hour), domain.ExecFailed, a)
		must(t, err)
		equal(t, "SettleExpired twice", ok, false)
		running := f.run(o.ID, base.Add(time.Second))
		f.claim("r2", base, func(domain.Plan) int { return 10 })
		ok, err = ex.SettleExpired(f.ctx, running.ID, lease.Add(time.Hour), domain.ExecFailed, a)
		must(t, err)
		equal(t, "SettleExpired of a RUNNING run", ok, false)
		if _, err := ex.SettleExpired(f.ctx, e.ID, lease.Add(time.Hour), domain.ExecError, a); err == nil {
			t.Error("SettleExpired took ERROR, which is no verdict")
		}
	})

	t.Run("FailureHistory", func(t *testing.T) {
		f := setup(t, open)
		o, other := f.org(), f.org()
		r1 := f.runWith(o.ID, base, func(e *domain.Execution) { e.Status = domain.ExecFailed })
		r2 := f.runWith(o.ID, base.Add(time.Minute), func(e *domain.Execution) { e.Status = domain.ExecFailed })
		r3 := f.runWith(other.ID, base.Add(-time.Hour), func(e *domain.Execution) { e.Status = domain.ExecFailed })
		an := f.s.Analyses()
		must(t, an.RecordFailures(f.ctx, o.ID, r2.ID, r2.TaskID, r2.QueuedAt, []store.FailureOccurrence{
			{Signature: "s1", Test: "a"}, {Signature: "s1", Test: "b"}, {Signature: "s2", Test: "c"}}))
		must(t, an.RecordFailures(f.ctx, o.ID, r1.ID, r1.TaskID, r1.QueuedAt, []store.FailureOccurrence{{Signature: "s1", Test: "a"}}))
		must(t, an.RecordFailures(f.ctx, other.ID, r3.ID, r3.TaskID, r3.QueuedAt, []store.FailureOccurrence{{Signature: "s1", Test: "a"}}))
		h, err := an.History(f.ctx, o.ID, "", []string{"s1", "s2", "s3", "s1"})
		must(t, err)
		want := map[string]store.SignatureHistory{"s1": {Failures: 3, FirstTaskID: r1.TaskID}, "s2": {Failures: 1, FirstTaskID: r2.TaskID}}
		if !reflect.DeepEqual(h, want) {
			t.Fatalf("History = %+v, want %+v (the other organization's run must not count)", h, want)
		}
		h, err = an.History(f.ctx, o.ID, r1.ID, []string{"s1"})
		must(t, err)
		want = map[string]store.SignatureHistory{"s1": {Failures: 2, FirstTaskID: r2.TaskID}}
		if !reflect.DeepEqual(h, want) {
			t.Fatalf("History without run 1 = %+v, want %+v", h, want)
		}
		// Recording a run again replaces its signatures; deleting the run forgets them.
		must(t, an.RecordFailures(f.ctx, o.ID, r2.ID, r2.TaskID, r2.QueuedAt, []store.FailureOccurrence{{Signature: "s3", Test: "d"}}))
		must(t, f.s.Executions().Delete(f.ctx, o.ID, r1.TaskID))
		h, err = an.History(f.ctx, o.ID, "", []string{"s1", "s2", "s3"})
		must(t, err)
		want = map[string]store.SignatureHistory{"s3": {Failures: 1, FirstTaskID: r2.TaskID}}
		if !reflect.DeepEqual(h, want) {
			t.Fatalf("History after re-recording and a delete = %+v, want %+v", h, want)
		}
	})

	t.Run("Triages", func(t *testing.T) {
		f := setup(t, open)
		o, other := f.org(), f.org()
		u := f.user(o.ID, domain.RoleDeveloper)
		var ts []domain.Triage
		for i := range 3 {
			ts = append(ts, domain.Triage{OrganizationID: o.ID, ExecutionID: "e1", TaskID: "t1", Signature: string(rune('a' + i)),
				Normalized: "expected <n> but was <n>", Category: "product_bug", UserID: u.ID, UserName: u.Name,
				CreatedAt: base.Add(time.Duration(i) * time.Minute)})
		}
		must(t, f.s.Analyses().AddTriages(f.ctx, ts))
		must(t, f.s.Analyses().AddTriages(f.ctx, []domain.Triage{{OrganizationID: other.ID, ExecutionID: "x", TaskID: "x",
			Signature: "z", Category: "flaky", UserID: "u", UserName: "U", CreatedAt: base}}))
		got, err := f.s.Analyses().Triages(f.ctx, o.ID, 2)
		must(t, err)
		if len(got) != 2 || got[0].Signature != "c" || got[1].Signature != "b" || got[0].ID == "" {
			t.Fatalf("Triages = %+v, want the newest two (c, b)", got)
		}
		ts[2].ID = got[0].ID
		if !reflect.DeepEqual(got[0], ts[2]) {
			t.Fatalf("Triage read back %+v, want %+v", got[0], ts[2])
		}
	})

	t.Run("AIConfig", func(t *testing.T) {
		f := setup(t, open)
		o := f.org()
		if got, err := f.s.Organizations().Get(f.ctx, o.ID); err != nil || got.AIDefaultModel != "" || got.AIKeys != nil {
			t.Fatalf("a new organization: %+v, %v", got, err)
		}
		keys := map[string]string{"openai": "v1:sealed-a", "anthropic": "v1:sealed-b"}
		must(t, f.s.Organizations().SetAIConfig(f.ctx, o.ID, "openai:gpt-4.1-mini", keys))
		got, err := f.s.Organizations().Get(f.ctx, o.ID)
		must(t, err)
		if got.AIDefaultModel != "openai:gpt-4.1-mini" || !reflect.DeepEqual(got.AIKeys, keys) {
			t.Fatalf("after SetAIConfig: %q %v", got.AIDefaultModel, got.AIKeys)
		}
		must(t, f.s.Organizations().SetAIConfig(f.ctx, o.ID, "builtin", nil))
		if got, _ := f.s.Organizations().Get(f.ctx, o.ID); got.AIDefaultModel != "builtin" || got.AIKeys != nil {
			t.Fatalf("after clearing: %q %v", got.AIDefaultModel, got.AIKeys)
		}
		wantErr(t, "SetAIConfig of a missing organization", f.s.Organizations().SetAIConfig(f.ctx, domain.NewID(), "builtin", nil), store.ErrNotFound)
	})
}
