// Command verdict is the whole service in one binary: `serve` runs the API (and the embedded
// runner), `migrate` applies database migrations, `version` prints the build.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"verdict/internal/config"
	"verdict/internal/store/sqlstore"
)

// version is set at build time: `make build` passes -ldflags "-X main.version=<git describe
// --always --dirty>"; a plain `go build` or `go run` reports "dev".
var version = "dev"

const usage = `verdict — run containerised test suites as a multi-tenant service

Usage:
  verdict serve     start the API server (applies pending migrations first)
  verdict migrate   apply pending database migrations and exit
  verdict run       queue a run on a server and follow it (verdict run --help)
  verdict version   print the version

Configuration comes from the environment; see the README.`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	var err error
	switch os.Args[1] {
	case "run":
		stop() // the run command handles its interrupts itself
		os.Exit(runCommand(os.Args[2:]))
	case "serve":
		err = serve(ctx)
	case "migrate":
		err = migrate(ctx)
	case "version", "--version", "-v":
		fmt.Println("verdict", version)
	case "help", "--help", "-h":
		fmt.Println(usage)
	default:
		fmt.Fprintf(os.Stderr, "verdict: unknown command %q\n\n%s\n", os.Args[1], usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "verdict:", err)
		os.Exit(1)
	}
}

func newLogger(level string) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(strings.ToUpper(level)))
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: l}))
}

func migrate(ctx context.Context) error {
	cfg, err := config.Load()
	if err != nil {
		return err
	}
	st, err := sqlstore.Open(ctx, cfg.DatabaseURL, cfg.DataDir)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		return err
	}
	fmt.Printf("migrations applied (%s)\n", st.Dialect())
	return nil
}
