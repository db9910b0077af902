// Command loadgen is the load generator behind scripts/bench.sh. It seeds a Verdict database
// directly (organizations, their admins and finished runs, with a session token per admin),
// serves a bare net/http handler to compare Verdict with, waits for a server to answer, drives
// concurrent authenticated GETs for a fixed time and prints throughput and latency percentiles,
// and makes and drops throwaway PostgreSQL databases. It is a tool, not part of the service.
//
//	loadgen seed      -db URL -data DIR -orgs 100 -runs 100 -jwt-secret S -tokens FILE
//	                  [-age 480h -log-chunks 4 -reports]
//	loadgen bare      -addr 127.0.0.1:0 -size N -addr-file FILE
//	loadgen wait      -url URL -since UNIX_NANOS -timeout 30s [-pid PID]
//	loadgen run       -url URL -tokens FILE -clients 32 -duration 10s -warmup 2s
//	                  [-expiry-db URL -expiry-data DIR -expiry-want N -expiry-timeout 300s]
//	loadgen retention -url URL -tokens FILE -logs-days N
//	loadgen queue     -url URL -tokens FILE -per-org 100 [-image IMAGE]
//	loadgen runner    -url URL -secret S -rate 5   (until stopped; prints the runs finished)
//	loadgen pgdb      create SERVER_URL | drop DB_URL
//	loadgen port      (prints a free TCP port on 127.0.0.1)
package main

import (
	"archive/tar"
	"bytes"
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"verdict/internal/auth"
	"verdict/internal/domain"
	"verdict/internal/report"
	"verdict/internal/store"
	"verdict/internal/store/sqlstore"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: loadgen seed|bare|wait|run|retention|queue|runner|pgdb|port ...")
		os.Exit(2)
	}
	var err error
	args := os.Args[2:]
	switch os.Args[1] {
	case "seed":
		err = seed(args)
	case "bare":
		err = bare(args)
	case "wait":
		err = wait(args)
	case "run":
		err = run(args)
	case "retention":
		err = setRetention(args)
	case "queue":
		err = queue(args)
	case "runner":
		err = runner(args)
	case "pgdb":
		err = pgdb(args)
	case "port":
		var ln net.Listener
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err == nil {
			fmt.Println(ln.Addr().(*net.TCPAddr).Port)
			ln.Close()
		}
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

// seed writes orgs organizations, each with one admin and runs finished runs, through the
// store itself (so rows are exactly what Verdict writes), and a session token per admin, one a
// line, to the tokens file. Each organization is one transaction: seconds, not minutes.
func seed(args []string) error {
	fs := flag.NewFlagSet("seed", flag.ExitOnError)
	dbURL := fs.String("db", "", "DATABASE_URL as Verdict takes it (empty: SQLite in -data)")
	dataDir := fs.String("data", "", "Verdict's data folder")
	orgs := fs.Int("orgs", 100, "organizations")
	runs := fs.Int("runs", 100, "runs per organization")
	secret := fs.String("jwt-secret", "", "JWT_SECRET of the server")
	tokens := fs.String("tokens", "", "file to write one bearer token per organization to")
	age := fs.Duration("age", 0, "how long before now the runs ended (the newest of each organization)")
	logChunks := fs.Int("log-chunks", 0, "log chunks of 1 KiB per run, written as a runner writes them")
	reports := fs.Bool("reports", false, "a report folder per run in the data folder, counted in the organization's storage")
	_ = fs.Parse(args)
	if *secret == "" || *tokens == "" || *dataDir == "" {
		return errors.New("seed: -jwt-secret, -tokens and -data are required")
	}
	var reportStore *report.FSStore
	if *reports {
		var err error
		if reportStore, err = report.NewFSStore(*dataDir); err != nil {
			return err
		}
	}
	ctx := context.Background()
	st, err := sqlstore.Open(ctx, *dbURL, *dataDir)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		return err
	}
	issuer, err := auth.NewTokens([]byte(*secret), 24*time.Hour, domain.SystemClock)
	if err != nil {
		return err
	}
	var out strings.Builder
	now := time.Now().UTC().Truncate(time.Millisecond)
	for o := range *orgs {
		org := &domain.Organization{ID: domain.NewID(), Name: fmt.Sprintf("Bench Org %03d", o), Slug: fmt.Sprintf("bench-org-%03d", o),
			Plan: domain.PlanTeam, CreatedAt: now}
		batch := make([]*domain.Execution, *runs)
		var stored int64
		for i := range batch {
			batch[i] = benchRun(org.ID, "", i, now.Add(-*age))
			if reportStore != nil {
				n, err := reportStore.Put(ctx, org.ID, batch[i].TaskID, benchReport(batch[i].TaskID), "playwright-report", 1<<20)
				if err != nil {
					return fmt.Errorf("seed reports: %w", err)
				}
				batch[i].ReportDirs, batch[i].ReportBytes = []string{"playwright-report"}, n
				stored += n
			}
		}
		user := &domain.User{Email: fmt.Sprintf("bench%03d@example.com", o), Name: fmt.Sprintf("Bench %03d", o),
			PasswordHash: "$2a$10$benchbenchbenchbenchbeOr5ZkE0C0N9QkqgYlJDtQx4j2f7uJ6W", Role: domain.RoleAdmin,
			Status: domain.UserActive, CreatedAt: now}
		err := st.InTx(ctx, func(tx store.Store) error {
			if err := tx.Organizations().Create(ctx, org); err != nil {
				return err
			}
			user.OrganizationID = org.ID
			if err := tx.Users().Create(ctx, user); err != nil {
				return err
			}
			for _, e := range batch {
				e.TriggeredBy = user.ID
				if err := createRun(ctx, tx, e, *logChunks); err != nil {
					return err
				}
			}
			if stored > 0 {
				return tx.Organizations().AddStorageUsed(ctx, org.ID, stored)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("seed organization %d: %w", o, err)
		}
		tok, err := issuer.Issue(user.ID, org.ID, user.Role)
		if err != nil {
			return err
		}
		out.WriteString(tok + "\n")
	}
	return os.WriteFile(*tokens, []byte(out.String()), 0o600)
}

// benchRun is a finished run as a CI job leaves it: a project-less run of an image with a
// summary, two variables, and the report folders a Playwright suite stores.
func benchRun(orgID, userID string, i int, now time.Time) *domain.Execution {
	queued := now.Add(-time.Duration(10000-i) * time.Minute)
	started, finished := queued.Add(2*time.Second), queued.Add(95*time.Second)
	exit, status := 0, domain.ExecPassed
	if i%7 == 0 {
		exit, status = 1, domain.ExecFailed
	}
	e := &domain.Execution{OrganizationID: orgID, TaskID: fmt.Sprintf("nightly-%05d", i), Image: "ghcr.io/acme/e2e:1.4.2",
		Command: "npx playwright test", Environment: "staging", BaseURL: "https://staging.acme.test", Folder: "",
		TimeoutSeconds: 1800, EnvNames: []string{"API_TOKEN", "LOCALE"}, TriggeredBy: userID, ViaAPIKey: i%2 == 0,
		Status: status, ExitCode: &exit, QueuedAt: queued, StartedAt: &started, FinishedAt: &finished,
		RunnerID: "embedded:bench", ContainerID: "c0ffee", Summary: domain.Summary{Total: 42, Passed: 40, Failed: exit, Skipped: 2 - exit},
		ReportDirs: []string{"playwright-report", "test-results", "junit"}, ReportBytes: 3 << 20}
	markIndexed(e)
	return e
}

// createRun stores the finished run e; with log chunks, as the run plane does: queued
// RUNNING, its log appended, then finished. Either way its (empty) results are recorded, as the
// run plane records a finished run's: a seeded run left unrecorded would have the history
// recorder catch up with every one of them while the benchmark measures, writing all along.
func createRun(ctx context.Context, tx store.Store, e *domain.Execution, logChunks int) error {
	if err := createFinished(ctx, tx, e, logChunks); err != nil {
		return err
	}
	return tx.Tests().Record(ctx, store.RunResults{Run: e})
}

func createFinished(ctx context.Context, tx store.Store, e *domain.Execution, logChunks int) error {
	if logChunks == 0 {
		return tx.Executions().Create(ctx, e)
	}
	done := *e
	e.Status, e.ExitCode, e.FinishedAt, e.ReportDirs, e.ReportBytes, e.ReportIndexes = domain.ExecRunning, nil, nil, nil, 0, nil
	if err := tx.Executions().Create(ctx, e); err != nil {
		return err
	}
	line := strings.Repeat("x", 63) + "\n"
	for c := range logChunks {
		if err := tx.Logs().Append(ctx, e.ID, c+1, strings.Repeat(line, 16)); err != nil {
			return err
		}
	}
	return tx.Executions().Finish(ctx, e.ID, e.RunnerID, store.Finish{Status: done.Status, ExitCode: done.ExitCode,
		FinishedAt: *done.FinishedAt, Summary: done.Summary, ReportDirs: done.ReportDirs, ReportBytes: done.ReportBytes,
		ReportIndexes: done.ReportIndexes})
}

// benchReport is the tar of a run's Playwright report: its page and a trace of 8 KiB.
func benchReport(task string) io.Reader {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range []struct{ name, body string }{
		{"playwright-report/index.html", "<!doctype html><title>" + task + "</title>"},
		{"playwright-report/data/trace.txt", strings.Repeat("trace line\n", 745)},
	} {
		_ = tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.body)), Typeflag: tar.TypeReg})
		_, _ = io.WriteString(tw, f.body)
	}
	_ = tw.Close()
	return &buf
}

// setRetention sets every organization's logs days through the API (PATCH
// /api/organization/retention, as each organization's admin).
func setRetention(args []string) error {
	fs := flag.NewFlagSet("retention", flag.ExitOnError)
	u := fs.String("url", "", "the server's base URL")
	tokensFile := fs.String("tokens", "", "bearer tokens of the organizations' admins, one a line")
	days := fs.Int("logs-days", 10, "logs days to set")
	_ = fs.Parse(args)
	raw, err := os.ReadFile(*tokensFile)
	if err != nil {
		return err
	}
	c := &http.Client{Timeout: 10 * time.Second}
	for _, tok := range strings.Fields(string(raw)) {
		req, _ := http.NewRequest("PATCH", *u+"/api/organization/retention", strings.NewReader(fmt.Sprintf(`{"logsDays":%d}`, *days)))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		res, err := c.Do(req)
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			return fmt.Errorf("retention: %d %s", res.StatusCode, body)
		}
	}
	return nil
}

// expiredRuns counts the runs whose files retention deleted, straight from the database.
func expiredRuns(ctx context.Context, db *sql.DB) (int, error) {
	var n int
	err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM executions WHERE files_expired_at IS NOT NULL`).Scan(&n)
	return n, err
}

// openCounter opens the database read-only for expiredRuns: PostgreSQL by its URL, else the
// SQLite file of the data folder.
func openCounter(dbURL, dataDir string) (*sql.DB, error) {
	if dbURL != "" {
		return sql.Open("pgx", dbURL)
	}
	return sql.Open("sqlite", filepath.Join(dataDir, "verdict.db")+"?_pragma=query_only(1)&_pragma=busy_timeout(5000)")
}

// bare serves what Verdict's route does at its cheapest: it checks for a bearer header and
// writes a JSON body of the given size. It prints its address to -addr-file once listening.
func bare(args []string) error {
	fs := flag.NewFlagSet("bare", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	size := fs.Int("size", 10000, "response body bytes")
	addrFile := fs.String("addr-file", "", "file to write the listening address to")
	_ = fs.Parse(args)
	body := []byte(`{"success":true,"pad":"` + strings.Repeat("x", max(*size-25, 0)) + `"}` + "\n")
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	if *addrFile != "" {
		if err := os.WriteFile(*addrFile, []byte(ln.Addr().String()), 0o600); err != nil {
			return err
		}
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); !ok || tok == "" {
			http.Error(w, `{"success":false}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Write(body)
	})
	return (&http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}).Serve(ln)
}

// wait polls url every millisecond until it answers 200 and prints the milliseconds since
// -since (the caller's clock just before it started the server). It gives up at once when the
// server's process (-pid) has exited.
func wait(args []string) error {
	fs := flag.NewFlagSet("wait", flag.ExitOnError)
	u := fs.String("url", "", "URL that answers 200 once the server is up")
	since := fs.Int64("since", 0, "start time, unix nanoseconds (default: now)")
	timeout := fs.Duration("timeout", 30*time.Second, "give up after")
	pid := fs.Int("pid", 0, "the server's process ID (Linux)")
	_ = fs.Parse(args)
	start := time.Now()
	if *since > 0 {
		start = time.Unix(0, *since)
	}
	c := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	deadline := time.Now().Add(*timeout)
	for time.Now().Before(deadline) {
		if res, err := c.Get(*u); err == nil {
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				fmt.Printf("%.1f\n", float64(time.Since(start).Microseconds())/1000)
				return nil
			}
		}
		if *pid > 0 && exited(*pid) {
			return fmt.Errorf("the server (process %d) exited before %s answered", *pid, *u)
		}
		time.Sleep(time.Millisecond)
	}
	return fmt.Errorf("%s did not answer 200 within %s", *u, *timeout)
}

// exited tells whether process pid is gone or a zombie (exited, not yet waited for).
func exited(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// The state follows the command name, which is in parentheses and may hold spaces.
	i := strings.LastIndexByte(string(stat), ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] == 'Z'
}

// run drives clients concurrent keep-alive clients for the duration after a warm-up and
// prints one line of key=value figures. Client c sends its requests with the tokens c,
// c+clients, c+2*clients, … in turn, so every organization reads its own page and all of them
// are read. Any answer but 200 counts as an error.
func run(args []string) error {
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	u := fs.String("url", "", "URL to GET")
	tokensFile := fs.String("tokens", "", "bearer tokens, one a line")
	clients := fs.Int("clients", 32, "concurrent clients")
	duration := fs.Duration("duration", 10*time.Second, "measured time")
	warmup := fs.Duration("warmup", 2*time.Second, "unmeasured time first")
	expiryDB := fs.String("expiry-db", "", "with -expiry-want: the database (DATABASE_URL; empty: SQLite in -expiry-data)")
	expiryData := fs.String("expiry-data", "", "with -expiry-want: Verdict's data folder")
	expiryWant := fs.Int("expiry-want", 0, "measure while retention expires runs: from the first run expired until this many are")
	expiryTimeout := fs.Duration("expiry-timeout", 300*time.Second, "with -expiry-want: give up after")
	_ = fs.Parse(args)
	raw, err := os.ReadFile(*tokensFile)
	if err != nil {
		return err
	}
	tokens := strings.Fields(string(raw))
	if len(tokens) == 0 {
		return errors.New("run: no tokens")
	}
	if _, err := url.Parse(*u); err != nil {
		return err
	}
	tr := &http.Transport{MaxIdleConns: *clients, MaxIdleConnsPerHost: *clients, MaxConnsPerHost: *clients,
		IdleConnTimeout: time.Minute, DisableCompression: true}
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}

	var measuring, stop atomic.Bool
	var errorsN, bytesN atomic.Int64
	lat := make([][]time.Duration, *clients)
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for c := range *clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine := lat[c][:0]
			for n := 0; !stop.Load(); n++ {
				tok := tokens[(c+n**clients)%len(tokens)]
				req, _ := http.NewRequest("GET", *u, nil)
				req.Header.Set("Authorization", "Bearer "+tok)
				t0 := time.Now()
				res, err := client.Do(req)
				var nb int64
				if err == nil {
					nb, err = io.Copy(io.Discard, res.Body)
					res.Body.Close()
					if err == nil && res.StatusCode != http.StatusOK {
						err = fmt.Errorf("status %d", res.StatusCode)
					}
				}
				d := time.Since(t0)
				if !measuring.Load() {
					continue
				}
				if err != nil {
					errorsN.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				bytesN.Add(nb)
				mine = append(mine, d)
			}
			lat[c] = mine
		}()
	}
	time.Sleep(*warmup)
	var elapsed time.Duration
	expired := -1
	if *expiryWant > 0 {
		if elapsed, expired, err = measureExpiry(&measuring, *expiryDB, *expiryData, *expiryWant, *expiryTimeout); err != nil {
			stop.Store(true)
			wg.Wait()
			return err
		}
	} else {
		measuring.Store(true)
		t0 := time.Now()
		time.Sleep(*duration)
		measuring.Store(false)
		elapsed = time.Since(t0)
	}
	stop.Store(true)
	wg.Wait()

	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	slices.Sort(all)
	pct := func(p float64) float64 {
		if len(all) == 0 {
			return 0
		}
		i := min(int(p*float64(len(all))), len(all)-1)
		return float64(all[i].Microseconds()) / 1000
	}
	ok := len(all)
	avgBytes := int64(0)
	if ok > 0 {
		avgBytes = bytesN.Load() / int64(ok)
	}
	fmt.Printf("rps=%.0f ok=%d errors=%d p50_ms=%.2f p90_ms=%.2f p99_ms=%.2f max_ms=%.2f body_bytes=%d",
		float64(ok)/elapsed.Seconds(), ok, errorsN.Load(), pct(0.50), pct(0.90), pct(0.99), pct(1), avgBytes)
	if expired >= 0 {
		fmt.Printf(" expired=%d expiry_s=%.1f", expired, elapsed.Seconds())
	}
	fmt.Println()
	if e, _ := firstErr.Load().(string); e != "" {
		fmt.Fprintln(os.Stderr, "loadgen: first error:", e)
	}
	return nil
}

// measureExpiry turns measuring on once the first run's files have expired and off once want
// of them have (or after timeout), polling the database every 100 ms. It returns how long it
// measured and how many runs had expired at its end.
func measureExpiry(measuring *atomic.Bool, dbURL, dataDir string, want int, timeout time.Duration) (time.Duration, int, error) {
	db, err := openCounter(dbURL, dataDir)
	if err != nil {
		return 0, 0, err
	}
	defer db.Close()
	ctx := context.Background()
	deadline := time.Now().Add(timeout)
	var t0 time.Time
	for {
		n, err := expiredRuns(ctx, db)
		if err != nil {
			return 0, 0, err
		}
		if n > 0 && t0.IsZero() {
			measuring.Store(true)
			t0 = time.Now()
		}
		if n >= want || time.Now().After(deadline) {
			measuring.Store(false)
			if t0.IsZero() {
				return 0, n, fmt.Errorf("no run expired within %s", timeout)
			}
			return time.Since(t0), n, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// pgdb creates a throwaway database on a PostgreSQL server (printing its URL) or drops one.
func pgdb(args []string) error {
	if len(args) != 2 || (args[0] != "create" && args[0] != "drop") {
		return errors.New("usage: loadgen pgdb create SERVER_URL | drop DB_URL")
	}
	u, err := url.Parse(args[1])
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	name := strings.TrimPrefix(u.Path, "/")
	if args[0] == "create" {
		name = "verdict_bench_" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	} else if !strings.HasPrefix(name, "verdict_bench_") {
		return fmt.Errorf("pgdb: refusing to drop %q, which this tool did not create", name)
	}
	admin := *u
	admin.Path = "/postgres"
	db, err := sql.Open("pgx", admin.String())
	if err != nil {
		return err
	}
	defer db.Close()
	if args[0] == "drop" {
		_, err = db.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		return err
	}
	if _, err := db.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		return err
	}
	u.Path = "/" + name
	fmt.Println(u.String())
	return nil
}
