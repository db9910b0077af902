//go:build integration

package app_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"verdict/internal/domain"
	"verdict/internal/run"
	"verdict/internal/run/docker"
	"verdict/internal/testenv"
)

// TestReconcileOnStart plays a server that died with a run in progress: its run is still
// RUNNING under this runner's ID and its container is still on the engine. Starting the
// workers must settle the run as ERROR and remove the container.
func TestReconcileOnStart(t *testing.T) {
	testenv.DockerHost(t)
	h := newHarness(t, harnessOpts{dialect: "sqlite", realClock: true})
	admin := h.signup("restart@example.com", "Restart Co")
	ctx := context.Background()
	runnerID := h.app.Runner().ID
	b, err := docker.New("", docker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()

	st := h.app.Store
	e := &domain.Execution{ID: domain.NewID(), OrganizationID: admin.orgID, TaskID: "before-crash", Image: slowImage,
		Status: domain.ExecPending, QueuedAt: time.Now().UTC(), TriggeredBy: admin.id}
	if err := st.Executions().Create(ctx, e); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	if c, err := st.Executions().Claim(ctx, runnerID, "", "", now, now.Add(time.Hour), func(domain.Plan) int { return 5 }); err != nil || c == nil {
		t.Fatalf("claim: %v %v", c, err)
	}
	labels := map[string]string{run.LabelManaged: "true", run.LabelRunner: runnerID, run.LabelOrg: admin.orgID, run.LabelTask: "before-crash"}
	id, err := b.Start(ctx, run.Spec{Name: "verdict-reconcile-" + e.ID, Image: slowImage, Args: []string{"sleep"}, Labels: labels})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Executions().SetContainer(ctx, e.ID, id); err != nil {
		t.Fatal(err)
	}
	// Another installation's container on the same engine must survive.
	foreign := map[string]string{run.LabelManaged: "true", run.LabelRunner: "someone-else", run.LabelOrg: admin.orgID, run.LabelTask: "not-ours"}
	fid, err := b.Start(ctx, run.Spec{Name: "verdict-foreign-" + e.ID, Image: slowImage, Args: []string{"sleep"}, Labels: foreign})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Remove(ctx, fid)

	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { h.app.Run(wctx); close(done) }()
	defer func() { cancel(); <-done }()

	r := h.waitFor(bearer(admin.token), "before-crash", 30*time.Second, final)
	if r.str("execution", "status") != "ERROR" || !strings.Contains(r.str("execution", "error"), "restarted") {
		t.Fatalf("after restart: %s", r.raw)
	}
	if left, _ := b.List(ctx, labels); len(left) != 0 {
		t.Fatal("the orphaned container is still there")
	}
	if left, _ := b.List(ctx, foreign); len(left) != 1 {
		t.Fatal("another installation's container was removed")
	}
}
