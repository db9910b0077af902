// Command schedbench measures schedules' fire delay: the time from a schedule's due instant to
// its run being queued, through the real store, executions and schedules services, with two
// schedules workers on the database (two replicas' polls racing for each fire, as in
// production) while other runs are pending and the database is busy (writers queueing runs and
// readers listing them without pause). Target: p99 < 1 s.
//
// Cron fires at whole minutes, so the schedules run on a clock that goes -speed times faster
// than real time; each delay is measured on that clock and divided back into real time. The
// workers poll at their real interval (schedules.DefaultInterval), so the figure holds what a
// replica adds: the poll, the claim and the queueing.
//
// It also prints the cost of an idle poll (no schedule due) with the due index, on a table of
// -idle other schedules.
//
//	schedbench -db postgres://… -for 40s
//	schedbench -data /tmp/dir -for 40s
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"verdict/internal/crypto/secretbox"
	"verdict/internal/domain"
	"verdict/internal/executions"
	"verdict/internal/identity"
	"verdict/internal/report"
	"verdict/internal/schedules"
	"verdict/internal/store"
	"verdict/internal/store/sqlstore"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "schedbench:", err)
		os.Exit(1)
	}
}

func run() error {
	dbURL := flag.String("db", "", "DATABASE_URL (empty: SQLite in -data)")
	dataDir := flag.String("data", "", "data folder for SQLite")
	orgs := flag.Int("orgs", 10, "organizations, each with a project of four schedules (every 1, 2, 3 and 5 minutes)")
	pending := flag.Int("pending", 1000, "runs queued before, left pending (no runner)")
	writers := flag.Int("writers", 4, "goroutines queueing and listing runs throughout")
	idle := flag.Int("idle", 2000, "other schedules in the table, none due, for the idle poll's cost")
	speed := flag.Int("speed", 30, "how much faster the schedules' clock runs than real time")
	dur := flag.Duration("for", 40*time.Second, "how long to measure (real time)")
	flag.Parse()
	ctx := context.Background()
	if *dataDir == "" {
		d, err := os.MkdirTemp("", "schedbench")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		*dataDir = d
	}
	// Two stores on the database: two replicas' pools.
	var sts []*sqlstore.Store
	for range 2 {
		st, err := sqlstore.Open(ctx, *dbURL, *dataDir)
		if err != nil {
			return err
		}
		defer st.Close()
		if err := st.Migrate(ctx); err != nil {
			return err
		}
		sts = append(sts, st)
	}
	box, err := secretbox.New(make([]byte, secretbox.KeySize))
	if err != nil {
		return err
	}
	reports, err := report.NewFSStore(*dataDir + "/reports")
	if err != nil {
		return err
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))

	// The schedules' clock: real time since t0, -speed times faster, starting 5 s before a
	// minute; the executions' clock is the same, so a run's queuedAt is on it.
	t0 := time.Now()
	start := time.Date(2026, 6, 1, 8, 59, 55, 0, time.UTC)
	factor := time.Duration(*speed)
	clock := func() time.Time { return start.Add(time.Since(t0) * factor) }

	var mu sync.Mutex
	var delays []time.Duration
	var svcs []*schedules.Service
	var execs []*executions.Service
	for _, st := range sts {
		ex := executions.New(executions.Deps{Store: st, Box: box, Reports: reports, Events: noEvents{}, Clock: clock, Log: quiet})
		execs = append(execs, ex)
		svcs = append(svcs, schedules.New(schedules.Deps{Store: st, Box: box, Runs: ex, Clock: clock, Log: quiet,
			Fired: func(scheduled, queued time.Time) {
				mu.Lock()
				delays = append(delays, queued.Sub(scheduled)/factor)
				mu.Unlock()
			}}))
	}

	// Seed: organizations on the enterprise plan (no run limit), a project each, its schedules.
	st := sts[0]
	var orgIDs, projectIDs []string
	for i := range *orgs {
		o := &domain.Organization{ID: domain.NewID(), Name: fmt.Sprintf("Bench %d", i), Slug: fmt.Sprintf("bench-%d", i),
			Plan: domain.PlanEnterprise, CreatedAt: start}
		if err := st.Organizations().Create(ctx, o); err != nil {
			return err
		}
		p := &domain.Project{ID: domain.NewID(), OrganizationID: o.ID, Name: "Suite", Image: "registry.example.com/suite:1",
			TargetURLs: map[string]string{}, CreatedAt: start, UpdatedAt: start}
		if err := st.Projects().Create(ctx, p); err != nil {
			return err
		}
		orgIDs, projectIDs = append(orgIDs, o.ID), append(projectIDs, p.ID)
	}
	for i := range *pending {
		if _, err := execs[0].Queue(ctx, identity.Automation(orgIDs[i%len(orgIDs)]),
			executions.QueueInput{ProjectID: projectIDs[i%len(orgIDs)]}); err != nil {
			return err
		}
	}
	// The idle schedules: due far ahead, so they are in the table and the index but never due.
	for i := range *idle {
		s := &domain.Schedule{OrganizationID: orgIDs[i%len(orgIDs)], ProjectID: projectIDs[i%len(orgIDs)], Name: fmt.Sprintf("idle %d", i),
			Cron: "0 0 1 1 *", Timezone: "UTC", Enabled: i%2 == 0, NextFireAt: start.AddDate(1, 0, 0), CreatedAt: start, UpdatedAt: start}
		if err := st.Schedules().Create(ctx, s, *idle+10); err != nil {
			return err
		}
	}
	// The idle poll's cost, measured before the measured schedules exist.
	var polls []time.Duration
	for range 1000 {
		t := time.Now()
		if _, err := st.Schedules().Due(ctx, clock(), 100); err != nil {
			return err
		}
		polls = append(polls, time.Since(t))
	}
	// The measured schedules, written to the store as the service writes them (its bound of 50
	// a project would count the idle ones).
	for i := range *orgs {
		for _, expr := range []string{"* * * * *", "*/2 * * * *", "*/3 * * * *", "*/5 * * * *"} {
			c, err := schedules.ParseCron(expr, "Europe/Paris")
			if err != nil {
				return err
			}
			now := clock()
			s := &domain.Schedule{OrganizationID: orgIDs[i], ProjectID: projectIDs[i], Name: "every " + expr, Cron: expr,
				Timezone: "Europe/Paris", Enabled: true, NextFireAt: c.Next(now), CreatedAt: now, UpdatedAt: now}
			if err := st.Schedules().Create(ctx, s, *idle+10); err != nil {
				return err
			}
		}
	}
	fmt.Printf("seeded %d organizations, %d pending runs, %d schedules (%d idle) on %s; the schedules' clock runs %d× real time\n",
		*orgs, *pending, 4**orgs+*idle, *idle, st.Dialect(), *speed)

	// The database busy: writers queueing runs and listing them, throughout.
	runCtx, stop := context.WithTimeout(ctx, *dur)
	defer stop()
	var busy atomic.Int64
	var wg sync.WaitGroup
	for w := range *writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; runCtx.Err() == nil; i++ {
				o := (w + i) % len(orgIDs)
				p := identity.Automation(orgIDs[o])
				if _, err := execs[w%2].Queue(runCtx, p, executions.QueueInput{ProjectID: projectIDs[o]}); err != nil && runCtx.Err() == nil {
					fmt.Fprintln(os.Stderr, "background queue:", err)
					return
				}
				if _, _, err := sts[w%2].Executions().List(runCtx, orgIDs[o], store.ExecutionFilter{Limit: 25}); err != nil && runCtx.Err() == nil {
					fmt.Fprintln(os.Stderr, "background list:", err)
					return
				}
				busy.Add(1)
			}
		}()
	}
	for _, s := range svcs {
		wg.Add(1)
		go func() { defer wg.Done(); s.Run(runCtx) }()
	}
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	scheduledMinutes := int(time.Duration(*dur) * factor / time.Minute)
	printFigure(fmt.Sprintf("schedule fire delay (%d fires)", len(delays)), delays, time.Second)
	printFigure("idle poll of the due schedules", polls, 0)
	fmt.Printf("  an idle replica polls every %s: %.1f queries a second\n", schedules.DefaultInterval, float64(time.Second)/float64(schedules.DefaultInterval))
	fmt.Printf("background: %d runs queued and lists read meanwhile; %d scheduled minutes\n", busy.Load(), scheduledMinutes)
	return nil
}

type noEvents struct{}

func (noEvents) ExecutionUpdated(*domain.Execution)         {}
func (noEvents) ExecutionLog(string, string, string, int64) {}

func printFigure(what string, d []time.Duration, target time.Duration) {
	if len(d) == 0 {
		fmt.Printf("%-42s no samples\n", what)
		return
	}
	slices.Sort(d)
	p := func(q float64) time.Duration { return d[min(int(q*float64(len(d))), len(d)-1)] }
	line := fmt.Sprintf("%-42s n=%-5d p50 %-9s p99 %-9s max %-9s", what, len(d), p(0.5).Round(10*time.Microsecond),
		p(0.99).Round(10*time.Microsecond), d[len(d)-1].Round(10*time.Microsecond))
	if target > 0 {
		verdict := "meets"
		if p(0.99) > target {
			verdict = "MISSES"
		}
		line += fmt.Sprintf(" (target p99 < %s: %s)", target, verdict)
	}
	fmt.Println(line)
}
