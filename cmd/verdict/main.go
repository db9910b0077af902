// Command verdict is the whole service in one binary: `serve` runs the API (and the embedded
// runner), `runner` a runner on another host that reaches a server over HTTP, `migrate`
// applies database migrations, `admin` changes the database as an operator, `version` prints
// the build.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"verdict/internal/run/kubernetes"

	"verdict/internal/admin"
	"verdict/internal/config"
	"verdict/internal/domain"
	"verdict/internal/store/sqlstore"
)

// version is set at build time: `make build` passes -ldflags "-X main.version=<git describe
// --always --dirty>"; a plain `go build` or `go run` reports "dev".
var version = "dev"

const usage = `verdict — run containerised test suites as a multi-tenant service

Usage:
  verdict serve     start the API server (applies pending migrations first)
  verdict migrate   apply pending database migrations and exit
  verdict run       queue a run on a server and follow it to its verdict (verdict run --help)
  verdict runner --server URL
                    run test suites for a server on this host's run backend (Docker or Kubernetes) (verdict runner --help)
  verdict admin set-plan <organization ID or slug> <free|team|enterprise>
                    change an organization's plan in the database (no payment provider)
  verdict backup FILE
                    write a consistent copy of the SQLite database to FILE, while the server runs
  verdict restore FILE
                    replace the SQLite database with the backup FILE (stop the server first)
  verdict version   print the version

Configuration comes from the environment; see docs/configuration.md.`

func main() {
	if len(os.Args) > 1 && os.Args[1] == "run" {
		os.Exit(runCommand(os.Args[2:])) // it handles Ctrl-C and SIGTERM itself
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Exit codes: 0 done, 1 failed, 2 a usage error (an unknown command, missing or bad arguments).
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// run carries out one command and returns its exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) < 1 {
		fmt.Fprintln(stderr, usage)
		return exitUsage
	}
	var err error
	switch args[0] {
	case "serve":
		err = serve(ctx)
	case "migrate":
		err = migrate(ctx, stdout)
	case "admin":
		return adminCommand(ctx, args[1:], stdout, stderr)
	case "backup", "restore":
		if len(args) != 2 || args[1] == "" {
			fmt.Fprintf(stderr, "verdict %s: want one FILE\n\n%s\n", args[0], usage)
			return exitUsage
		}
		err = backupOrRestore(ctx, args[0], args[1], stdout)
	case "runner":
		return runnerCommand(ctx, args[1:], stdout, stderr)
	case "reports-keeper": // inside a run's pod on Kubernetes
		return kubernetes.KeeperMain(args[1:], stdout, stderr)
	case "version", "--version", "-v":
		fmt.Fprintln(stdout, "verdict", version)
	case "help", "--help", "-h":
		fmt.Fprintln(stdout, usage)
	default:
		fmt.Fprintf(stderr, "verdict: unknown command %q\n\n%s\n", args[0], usage)
		return exitUsage
	}
	if err != nil {
		fmt.Fprintln(stderr, "verdict:", err)
		return exitFailure
	}
	return exitOK
}

const adminUsage = `Usage:
  verdict admin set-plan <organization ID or slug> <free|team|enterprise>

Changes the organization's plan in the database that DATABASE_URL (or VERDICT_DATA_DIR's
SQLite) names, without the payment provider, and records it in the organization's audit log.`

// adminCommand runs `verdict admin ...`.
func adminCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "set-plan" {
		if len(args) > 0 && (args[0] == "help" || args[0] == "-h" || args[0] == "--help") {
			fmt.Fprintln(stdout, adminUsage)
			return exitOK
		}
		fmt.Fprintln(stderr, adminUsage)
		return exitUsage
	}
	if len(args) != 3 || args[1] == "" {
		fmt.Fprintf(stderr, "verdict admin set-plan: want an organization and a plan\n\n%s\n", adminUsage)
		return exitUsage
	}
	plan := domain.Plan(args[2])
	if !plan.Valid() {
		fmt.Fprintf(stderr, "verdict admin set-plan: unknown plan %q: want free, team or enterprise\n", args[2])
		return exitUsage
	}
	if err := setPlan(ctx, args[1], plan, stdout); err != nil {
		fmt.Fprintln(stderr, "verdict admin set-plan:", err)
		return exitFailure
	}
	return exitOK
}

// openStore opens the database the environment configures.
func openStore(ctx context.Context) (*sqlstore.Store, error) {
	cfg, err := config.Load()
	if err != nil {
		return nil, err
	}
	return sqlstore.Open(ctx, cfg.Database.URL, cfg.Server.DataDir)
}

func setPlan(ctx context.Context, ref string, plan domain.Plan, stdout io.Writer) error {
	st, err := openStore(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	ch, err := admin.SetPlan(ctx, st, ref, plan, domain.SystemClock)
	if errors.Is(err, admin.ErrUnknownOrganization) {
		return fmt.Errorf("%w: %q", err, ref)
	}
	if err != nil {
		return err
	}
	o := ch.Organization
	if ch.From == ch.To {
		fmt.Fprintf(stdout, "organization %s (%s, %q) is already on the %s plan; nothing changed\n", o.ID, o.Slug, o.Name, ch.To)
		return nil
	}
	fmt.Fprintf(stdout, "organization %s (%s, %q): plan %s -> %s\n", o.ID, o.Slug, o.Name, ch.From, ch.To)
	return nil
}

// backupOrRestore copies the SQLite database the environment names to file ("backup"), or
// replaces it with file and migrates it ("restore").
func backupOrRestore(ctx context.Context, what, file string, stdout io.Writer) error {
	st, err := openStore(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	if what == "backup" {
		if err := st.Backup(ctx, file); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "backup written to %s\n", file)
		return nil
	}
	if err := st.Restore(ctx, file); err != nil {
		return err
	}
	if err := st.Migrate(ctx); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "restored from %s\n", file)
	return nil
}

func migrate(ctx context.Context, stdout io.Writer) error {
	st, err := openStore(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "migrations applied (%s)\n", st.Dialect())
	return nil
}
