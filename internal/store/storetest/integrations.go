package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"verdict/internal/domain"
	"verdict/internal/store"
)

// testIntegrations covers organizations' integrations (settings and sealed keys, one per
// provider) and the tickets created from runs: recorded each in a row of their own, shown with a
// single run and never in the run list, kept when recorded at the same time, gone with their run.
func testIntegrations(t *testing.T, open Opener) {
	t.Run("PutGetDelete", func(t *testing.T) {
		f := setup(t, open)
		o, other := f.org(), f.org()
		repo := f.s.Integrations()
		_, err := repo.Get(f.ctx, o.ID, "linear")
		wantErr(t, "Get before Put", err, store.ErrNotFound)

		lin := &domain.Integration{OrganizationID: o.ID, Provider: "linear", KeyCipher: "sealed-1",
			Settings: domain.IntegrationSettings{"teamId": "team-1"}, Enabled: true, CreatedAt: base, UpdatedAt: base}
		must(t, repo.Put(f.ctx, lin))
		got, err := repo.Get(f.ctx, o.ID, "linear")
		must(t, err)
		equal(t, "Get", got, lin)
		_, err = repo.Get(f.ctx, other.ID, "linear")
		wantErr(t, "Get from another organization", err, store.ErrNotFound)
		_, err = repo.Get(f.ctx, o.ID, "monday")
		wantErr(t, "Get another provider", err, store.ErrNotFound)

		mon := &domain.Integration{OrganizationID: o.ID, Provider: "monday", KeyCipher: "sealed-m",
			Settings:  domain.IntegrationSettings{"boardId": "123", "groupId": "topics", "accountSlug": "acme"},
			CreatedAt: base, UpdatedAt: base}
		must(t, repo.Put(f.ctx, mon))
		got, err = repo.Get(f.ctx, o.ID, "monday")
		must(t, err)
		equal(t, "Get a disabled integration", got, mon)

		// Put replaces everything but the creation time.
		later := base.Add(time.Hour)
		lin2 := &domain.Integration{OrganizationID: o.ID, Provider: "linear", KeyCipher: "sealed-2",
			Settings: domain.IntegrationSettings{"teamId": "team-2"}, Enabled: false, CreatedAt: later, UpdatedAt: later}
		must(t, repo.Put(f.ctx, lin2))
		got, err = repo.Get(f.ctx, o.ID, "linear")
		must(t, err)
		want := *lin2
		want.CreatedAt = base
		equal(t, "Get after a second Put", got, &want)

		gone, err := repo.Delete(f.ctx, other.ID, "linear")
		must(t, err)
		equal(t, "Delete from another organization", gone, false)
		gone, err = repo.Delete(f.ctx, o.ID, "linear")
		must(t, err)
		equal(t, "Delete", gone, true)
		_, err = repo.Get(f.ctx, o.ID, "linear")
		wantErr(t, "Get after Delete", err, store.ErrNotFound)
		gone, err = repo.Delete(f.ctx, o.ID, "linear")
		must(t, err)
		equal(t, "Delete twice", gone, false)
		if _, err := repo.Get(f.ctx, o.ID, "monday"); err != nil {
			t.Fatalf("Delete of one provider removed another: %v", err)
		}
	})

	t.Run("Tickets", func(t *testing.T) {
		f := setup(t, open)
		o, other := f.orgOnPlan(domain.PlanEnterprise), f.org()
		repo := f.s.Integrations()
		e := f.run(o.ID, base)
		f.claim("r1", base, func(domain.Plan) int { return 10 })
		must(t, f.s.Executions().Finish(f.ctx, e.ID, "r1", passed(base.Add(time.Second))))
		if got := f.getRun(o.ID, e.TaskID); got.Tickets != nil {
			t.Fatalf("a run without tickets shows %v", got.Tickets)
		}
		// The list is read (and its finished rows kept) before the tickets come.
		list, _, err := f.s.Executions().List(f.ctx, o.ID, store.ExecutionFilter{Limit: 10})
		must(t, err)
		equal(t, "listed runs", len(list), 1)

		a := &domain.Ticket{OrganizationID: o.ID, ExecutionID: e.ID, Provider: "linear", ExternalID: "uuid-1",
			Identifier: "ENG-1", URL: "https://linear.app/acme/issue/ENG-1", Title: "Run failed", CreatedBy: "u1",
			CreatedAt: base.Add(time.Minute)}
		must(t, repo.AddTicket(f.ctx, a))
		if a.ID == "" {
			t.Fatal("AddTicket gave the ticket no ID")
		}
		b := &domain.Ticket{OrganizationID: o.ID, ExecutionID: e.ID, Provider: "monday", ExternalID: "42",
			URL: "https://acme.monday.com/boards/1/pulses/42", Title: "Run failed", CreatedBy: "u2", CreatedAt: base.Add(2 * time.Minute)}
		must(t, repo.AddTicket(f.ctx, b))

		got, err := repo.Tickets(f.ctx, o.ID, e.ID)
		must(t, err)
		equal(t, "Tickets, oldest first", got, []domain.Ticket{*a, *b})
		equal(t, "Get shows the tickets", f.getRun(o.ID, e.TaskID).Tickets, []domain.Ticket{*a, *b})
		byID, err := f.s.Executions().GetByID(f.ctx, e.ID)
		must(t, err)
		equal(t, "GetByID shows the tickets", byID.Tickets, []domain.Ticket{*a, *b})
		list, _, err = f.s.Executions().List(f.ctx, o.ID, store.ExecutionFilter{Limit: 10})
		must(t, err)
		if len(list) != 1 || list[0].Tickets != nil {
			t.Fatalf("List carries tickets: %+v", list)
		}
		got, err = repo.Tickets(f.ctx, other.ID, e.ID)
		must(t, err)
		equal(t, "Tickets from another organization", len(got), 0)

		wrongOrg := *a
		wrongOrg.ID, wrongOrg.OrganizationID = "", other.ID
		wantErr(t, "AddTicket on another organization's run", repo.AddTicket(f.ctx, &wrongOrg), store.ErrNotFound)
		missing := *a
		missing.ID, missing.ExecutionID = "", domain.NewID()
		wantErr(t, "AddTicket on no run", repo.AddTicket(f.ctx, &missing), store.ErrNotFound)

		// Deleting the integration keeps the tickets; deleting the run takes them.
		must(t, repo.Put(f.ctx, &domain.Integration{OrganizationID: o.ID, Provider: "linear", KeyCipher: "k",
			Enabled: true, CreatedAt: base, UpdatedAt: base}))
		_, err = repo.Delete(f.ctx, o.ID, "linear")
		must(t, err)
		equal(t, "tickets after the integration is removed", len(f.getRun(o.ID, e.TaskID).Tickets), 2)
		must(t, f.s.Executions().Delete(f.ctx, o.ID, e.TaskID))
		got, err = repo.Tickets(f.ctx, o.ID, e.ID)
		must(t, err)
		equal(t, "tickets of a deleted run", len(got), 0)
		late := *a
		late.ID = ""
		wantErr(t, "AddTicket on a deleted run", repo.AddTicket(f.ctx, &late), store.ErrNotFound)
	})

	t.Run("ConcurrentTicketsAllKept", func(t *testing.T) {
		// Tickets created at the same moment for one run (two people, or a retrying client) are
		// all recorded: none overwrites another.
		f := setup(t, open)
		o := f.orgOnPlan(domain.PlanEnterprise)
		e := f.run(o.ID, base)
		const n = 16
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				provider := "linear"
				if i%2 == 1 {
					provider = "monday"
				}
				if err := f.s.Integrations().AddTicket(f.ctx, &domain.Ticket{OrganizationID: o.ID, ExecutionID: e.ID,
					Provider: provider, ExternalID: fmt.Sprintf("ext-%d", i), URL: fmt.Sprintf("https://t.example/%d", i),
					CreatedAt: base}); err != nil {
					t.Errorf("AddTicket %d: %v", i, err)
				}
			})
		}
		close(start)
		wg.Wait()
		got := f.getRun(o.ID, e.TaskID).Tickets
		seen := map[string]bool{}
		for _, tk := range got {
			seen[tk.ExternalID] = true
		}
		if len(got) != n || len(seen) != n {
			t.Fatalf("%d tickets recorded (%d distinct), want %d: %+v", len(got), len(seen), n, got)
		}
	})
}
