package executions_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"verdict/internal/domain"
	"verdict/internal/identity"
	"verdict/internal/testenv"
)

// An organization's list of runners is its admin's: another member is refused before the
// runners are even listed. With no runner heard from, no run is read; with some, each
// runner's busy count is the organization's own runs going on it.
func TestRunnersBusy(t *testing.T) {
	f := newFixture(t, domain.PlanEnterprise, nil)
	listed := 0
	heard := func(n int, err error) func(context.Context) (int, error) {
		return func(context.Context) (int, error) { listed++; return n, err }
	}
	for _, member := range []*identity.Principal{f.dev, f.viewer} {
		_, err := f.svc.RunnersBusy(f.ctx, member, heard(1, nil))
		testenv.WantError(t, err, 403, "Forbidden", "needs the admin role")
	}
	if listed != 0 {
		t.Fatalf("the runners were listed %d times for members who may not see them", listed)
	}
	if busy, err := f.svc.RunnersBusy(f.ctx, f.admin, heard(0, nil)); err != nil || busy != nil {
		t.Fatalf("no runner heard from: %v, %v; want nil", busy, err)
	}
	away := errors.New("registry away")
	if _, err := f.svc.RunnersBusy(f.ctx, f.admin, heard(0, away)); !errors.Is(err, away) {
		t.Fatalf("the list's error: %v", err)
	}
	for i, runner := range []string{"remote:a", "remote:a", "remote:b"} {
		e := &domain.Execution{ID: domain.NewID(), OrganizationID: f.org.ID, TaskID: fmt.Sprintf("busy-%d", i), Image: "suite:pass",
			Folder: "all", TimeoutSeconds: 600, Status: domain.ExecRunning, QueuedAt: f.clock.Now(), RunnerID: runner}
		if err := f.st.Executions().Create(f.ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	busy, err := f.svc.RunnersBusy(f.ctx, f.admin, heard(2, nil))
	if err != nil || !reflect.DeepEqual(busy, map[string]int{"remote:a": 2, "remote:b": 1}) {
		t.Fatalf("busy %v, %v", busy, err)
	}
}
