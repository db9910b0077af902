package control

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"verdict/internal/domain"
	"verdict/internal/run"
	"verdict/internal/store/sqlstore/sqlitetest"
)

// recordingBackend is fakeBackend that records what is removed and swept through it.
type recordingBackend struct {
	*fakeBackend
	mu      sync.Mutex
	removed []string
	swept   []string
}

func (b *recordingBackend) Remove(_ context.Context, id string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.removed = append(b.removed, id)
	return nil
}

func (b *recordingBackend) SweepRunner(_ context.Context, id string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.swept = append(b.swept, id)
	return nil
}

// The reaper ends a lost run of the runner in its process and of a remote runner alike, but
// removes a container (and sweeps what its runner kept) only through the backend of the runner
// that ran it: the in-process runner's. The remote runner's container is on its own engine,
// which this process does not touch.
func TestReaperCleansThroughTheOwningRunnersBackend(t *testing.T) {
	ctx := context.Background()
	st := sqlitetest.Open(t)
	org := &domain.Organization{ID: domain.NewID(), Name: "Org", Slug: "org", Plan: domain.PlanEnterprise}
	if err := st.Organizations().Create(ctx, org); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	lost := func(task, runner, container string) {
		t.Helper()
		e := &domain.Execution{ID: domain.NewID(), OrganizationID: org.ID, TaskID: task, Image: "suite:pass",
			Folder: "all", TimeoutSeconds: 60, Status: domain.ExecPending, QueuedAt: now.Add(-time.Hour)}
		if err := st.Executions().Create(ctx, e); err != nil {
			t.Fatal(err)
		}
		c, err := st.Executions().Claim(ctx, runner, "", "", now, now.Add(time.Minute), func(domain.Plan) int { return 10 })
		if err != nil || c == nil || c.ID != e.ID {
			t.Fatalf("claim for %s: %+v, %v", runner, c, err)
		}
		if err := st.Executions().SetContainer(ctx, e.ID, container); err != nil {
			t.Fatal(err)
		}
	}
	lost("here", "embedded-1", "c-here")
	lost("far", "remote:far", "c-far")

	own := &recordingBackend{fakeBackend: newFakeBackend(nil)}
	at := now
	r := &Reaper{Store: st, Backends: map[string]run.Backend{"embedded-1": own},
		Clock: func() time.Time { return at }, Log: slog.New(slog.DiscardHandler)}
	r.Sweep(ctx) // the first sweep extends every lease by the grace
	at = now.Add(2 * time.Minute)
	r.Sweep(ctx)

	for _, task := range []string{"here", "far"} {
		e, err := st.Executions().Get(ctx, org.ID, task)
		if err != nil || e.Status != domain.ExecError {
			t.Fatalf("run %s: %+v %v", task, e, err)
		}
	}
	own.mu.Lock()
	defer own.mu.Unlock()
	if !slices.Equal(own.removed, []string{"c-here"}) || !slices.Equal(own.swept, []string{"embedded-1"}) {
		t.Fatalf("removed %v, swept %v: want only the in-process runner's container and sandboxes", own.removed, own.swept)
	}
}
