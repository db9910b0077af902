package api

import (
	"strings"
	"testing"

	"verdict/internal/domain"
	"verdict/internal/identity"
	"verdict/internal/store"
)

// A finished run's list item is kept (finishedItems) only once its tests are recorded: its
// gate is judged in that transaction, after its final status, and the list shows it then.
func TestListShowsGateSetAfterTheRunEnded(t *testing.T) {
	run := finishedRun()
	s := newHandlerServer(nil, stubExecutions{list: func(*identity.Principal, store.ExecutionFilter) ([]domain.Execution, int, error) {
		return []domain.Execution{run}, 1, nil
	}}, nil)
	list := func() string {
		rec := call(s, "GET", "/api/executions", "viewer-1", "")
		if rec.Code != 200 {
			t.Fatalf("list: %d %s", rec.Code, rec.Body)
		}
		return rec.Body.String()
	}
	if body := list(); !strings.Contains(body, `"gate":null`) {
		t.Fatalf("a run just ended: %s", body)
	}
	run.TestsRecorded = true
	run.Gate = &domain.Gate{Status: domain.GateFailed, BaselineTaskID: "main-1",
		Rules: []domain.GateRule{{Rule: domain.RuleMinTests, Actual: 2, Threshold: 4, Message: "incomplete run: 2 tests, fewer than the 4 required"}}}
	want := `"gate":{"status":"failed","rules":[{"rule":"minTests","passed":false,"actual":2,"threshold":4,` +
		`"message":"incomplete run: 2 tests, fewer than the 4 required"}],"baselineTaskId":"main-1"}`
	for i := range 2 { // read, then from finishedItems
		if body := list(); !strings.Contains(body, want) {
			t.Fatalf("read %d: the run's gate is not listed: %s", i, body)
		}
	}
}
