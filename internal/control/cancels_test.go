package control

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"verdict/internal/domain"
	"verdict/internal/store"
)

// countingStore counts the run reads the runner routes' cancels make.
type countingStore struct {
	store.Store
	byID, cancels *int
}

func (c countingStore) Executions() store.ExecutionRepo {
	return countingRuns{c.Store.Executions(), c.byID, c.cancels}
}

type countingRuns struct {
	store.ExecutionRepo
	byID, cancels *int
}

func (r countingRuns) GetByID(ctx context.Context, id string) (*domain.Execution, error) {
	*r.byID++
	return r.ExecutionRepo.GetByID(ctx, id)
}

func (r countingRuns) CancelRequested(ctx context.Context, runnerID, instance string, ids []string) ([]string, error) {
	*r.cancels++
	return r.ExecutionRepo.CancelRequested(ctx, runnerID, instance, ids)
}

// A remote runner's cancels are one read of the store however many runs it holds (its waiting
// cancels call asks again every poll), and name only its own process's cancelled runs.
func TestCancelledIsOneRead(t *testing.T) {
	st, _ := openStores(t)
	ctx := context.Background()
	now := time.Date(2026, 4, 1, 9, 0, 0, 0, time.UTC)
	org := &domain.Organization{ID: domain.NewID(), Name: "Cancels", Plan: domain.PlanEnterprise, CreatedAt: now}
	if err := st.Organizations().Create(ctx, org); err != nil {
		t.Fatal(err)
	}
	var held, want []string
	for i := range 200 {
		e := &domain.Execution{ID: domain.NewID(), OrganizationID: org.ID, TaskID: fmt.Sprintf("task-%d", i), Image: "suite:pass",
			Folder: "all", TimeoutSeconds: 600, Status: domain.ExecRunning, QueuedAt: now, RunnerID: "remote:a",
			RunnerInstance: "i1", CancelRequested: i%50 == 0}
		if i == 7 {
			e.RunnerInstance = "i2" // an earlier life of the runner: not this process's
			e.CancelRequested = true
		}
		if err := st.Executions().Create(ctx, e); err != nil {
			t.Fatal(err)
		}
		held = append(held, e.ID)
		if e.CancelRequested && e.RunnerInstance == "i1" {
			want = append(want, e.ID)
		}
	}
	var byID, cancels int
	p := &Plane{Store: countingStore{st, &byID, &cancels}}
	got, err := p.Cancelled(ctx, "remote:a", "i1", held)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("cancelled %v, want %v", got, want)
	}
	if byID != 0 || cancels != 1 {
		t.Errorf("%d runs read one at a time and %d cancels reads for 200 held runs, want 0 and 1", byID, cancels)
	}
}
