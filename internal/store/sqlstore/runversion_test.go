package sqlstore

import (
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"verdict/internal/domain"
	"verdict/internal/store"
	"verdict/internal/testenv"
)

// TestEveryRunUpdateMovesItsVersion: the run list serves a kept row at the version its page's
// query read (runRows), which holds only if every statement that updates a run's row adds one
// to its version. Each UPDATE of executions in the store's code is checked here, so a new one
// that does not fails.
func TestEveryRunUpdateMovesItsVersion(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	updates := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			text, err := strconv.Unquote(lit.Value)
			if err != nil {
				return true
			}
			for _, stmt := range strings.Split(strings.ToUpper(text), "UPDATE EXECUTIONS")[1:] {
				updates++
				if set, _, _ := strings.Cut(strings.Join(strings.Fields(stmt), " "), " WHERE "); !strings.Contains(set, "VERSION = VERSION + 1") {
					t.Errorf("%s: an UPDATE of executions that does not move the run's version: %.120q", fset.Position(lit.Pos()), text)
				}
			}
			return true
		})
	}
	if updates < 15 {
		t.Fatalf("found %d UPDATEs of executions; the scan is broken", updates)
	}
}

// TestReplicasSeeEachOthersRunWrites: two stores on one PostgreSQL database, as two replicas.
// Each keeps the list rows it read (runRows); a write by the other, to a run still going or to a
// finished one, is seen on the next read of the list.
func TestReplicasSeeEachOthersRunWrites(t *testing.T) {
	url := testenv.PostgresDB(t)
	one, two := openMigrated(t, url, ""), openMigrated(t, url, "")
	ctx := context.Background()
	org := &domain.Organization{ID: domain.NewID(), Name: "Org", Slug: "org", Plan: domain.PlanEnterprise}
	if err := one.Organizations().Create(ctx, org); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	for i := range 3 {
		e := &domain.Execution{ID: domain.NewID(), OrganizationID: org.ID, TaskID: fmt.Sprint("t", i), Image: "suite:1",
			Folder: "all", TimeoutSeconds: 60, Status: domain.ExecPending, QueuedAt: at.Add(time.Duration(i) * time.Second)}
		if err := one.Executions().Create(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	f := store.ExecutionFilter{Limit: 25}
	statusOn := func(s *Store, taskID string) domain.ExecStatus {
		t.Helper()
		page, _, err := s.Executions().List(ctx, org.ID, f)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page {
			if e.TaskID == taskID {
				return e.Status
			}
		}
		t.Fatalf("%s not listed", taskID)
		return ""
	}
	for range 2 { // read twice: the second read is served from the kept rows
		if got := statusOn(one, "t1"); got != domain.ExecPending {
			t.Fatalf("t1 = %s", got)
		}
	}
	if n := len(one.runRows.m); n != 3 {
		t.Fatalf("replica one keeps %d rows, want the page's 3", n)
	}
	// Replica two claims the oldest run and ends it; replica one's next read sees each step.
	claimed, err := two.Executions().Claim(ctx, "runner-2", "", "", at, at.Add(time.Minute), func(domain.Plan) int { return 10 })
	if err != nil || claimed == nil || claimed.TaskID != "t0" {
		t.Fatalf("Claim = %+v, %v", claimed, err)
	}
	if got := statusOn(one, "t0"); got != domain.ExecRunning {
		t.Fatalf("replica one lists t0 %s after replica two claimed it, want RUNNING", got)
	}
	if err := two.Executions().Finish(ctx, claimed.ID, "runner-2", store.Finish{Status: domain.ExecPassed, FinishedAt: at}); err != nil {
		t.Fatal(err)
	}
	if got := statusOn(one, "t0"); got != domain.ExecPassed {
		t.Fatalf("replica one lists t0 %s after replica two finished it, want PASSED", got)
	}
	if _, err := two.Executions().RequestCancel(ctx, org.ID, "t2", at); err != nil {
		t.Fatal(err)
	}
	if got := statusOn(one, "t2"); got != domain.ExecCancelled {
		t.Fatalf("replica one lists t2 %s after replica two cancelled it, want CANCELLED", got)
	}
	// A finished run pinned on two.
	if err := two.Executions().SetPinned(ctx, org.ID, "t0", true); err != nil {
		t.Fatal(err)
	}
	page, _, err := one.Executions().List(ctx, org.ID, f)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range page {
		if e.TaskID == "t0" && !e.Pinned {
			t.Fatal("replica one lists t0 unpinned after replica two pinned it")
		}
	}
}
