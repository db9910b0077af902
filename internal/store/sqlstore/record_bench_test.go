package sqlstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"verdict/internal/domain"
	"verdict/internal/store"
)

// BenchmarkTestsRecord records a finished run of 2,000 tests of one project: "new", tests the
// project has never run (each iteration's names are its own), and "known", the same 2,000
// tests every iteration (their aggregates are updated). One iteration is one Record.
func BenchmarkTestsRecord(b *testing.B) {
	for _, known := range []bool{false, true} {
		name := "new"
		if known {
			name = "known"
		}
		b.Run(name, func(b *testing.B) {
			runStores(b, func(b *testing.B, s *Store) { benchRecord(b, s, known) })
		})
	}
}

func benchRecord(b *testing.B, s *Store, known bool) {
	ctx := context.Background()
	o := &domain.Organization{ID: domain.NewID(), Name: "Org", Slug: "org", Plan: domain.PlanEnterprise}
	if err := s.Organizations().Create(ctx, o); err != nil {
		b.Fatal(err)
	}
	p := &domain.Project{ID: domain.NewID(), OrganizationID: o.ID, Name: "Web", Image: "e2e", CreatedAt: base0, UpdatedAt: base0}
	if err := s.Projects().Create(ctx, p); err != nil {
		b.Fatal(err)
	}
	record := func(i int, prefix string) {
		at := base0.Add(time.Duration(i) * time.Minute)
		e := &domain.Execution{ID: domain.NewID(), OrganizationID: o.ID, TaskID: fmt.Sprintf("run-%d", i), ProjectID: p.ID,
			Image: "e2e", Status: domain.ExecPending, QueuedAt: at}
		if err := s.Executions().Create(ctx, e); err != nil {
			b.Fatal(err)
		}
		e.Status, e.FinishedAt = domain.ExecPassed, &at
		outs := make([]domain.TestOutcome, 2000)
		for j := range outs {
			outs[j] = domain.TestOutcome{Suite: "big", Name: fmt.Sprintf("%s case %d", prefix, j), Status: domain.TestPassed, DurationMs: 120}
		}
		if err := s.Tests().Record(ctx, store.RunResults{Run: e, Outcomes: outs}); err != nil {
			b.Fatal(err)
		}
	}
	record(0, "known") // the known tests exist before the timer starts
	b.ResetTimer()
	for i := range b.N {
		prefix := "known"
		if !known {
			prefix = fmt.Sprint("new", i)
		}
		record(i+1, prefix)
	}
}
