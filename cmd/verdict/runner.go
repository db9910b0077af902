package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"verdict/internal/config"
	"verdict/internal/domain"
	"verdict/internal/peerhttp"
	vrun "verdict/internal/run"
	"verdict/internal/run/engines"
)

const runnerUsage = `Usage:
  verdict runner --server URL

Runs test suites for the Verdict server at URL (or VERDICT_SERVER) on this host's Docker
engine, reaching the server over HTTP only: no database. It claims runs with
VERDICT_RUNNER_SECRET (the server's own), runs VERDICT_RUNNER_SLOTS of them at once (2), and
names itself VERDICT_RUNNER_NAME (the host name). The run containers' settings are the
embedded runner's: DOCKER_HOST, VERDICT_RUN_MEMORY_MB, VERDICT_RUN_CPUS, VERDICT_RUN_PIDS,
VERDICT_RUN_SHM_MB, VERDICT_RUN_DISK_MB, VERDICT_RUN_NETWORK, VERDICT_RUN_BLOCKED_CIDRS. With
VERDICT_BACKEND=kubernetes it runs each suite as a Job in a cluster instead (KUBECONFIG, else
the in-cluster configuration; VERDICT_K8S_NAMESPACE, VERDICT_K8S_HELPER_IMAGE,
VERDICT_K8S_PULL_POLICY, VERDICT_K8S_START_TIMEOUT).`

// runnerCommand is `verdict runner`: a runner on this host, serving the server at --server.
func runnerCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("verdict runner", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	server := fs.String("server", "", "the Verdict server's URL")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stdout, runnerUsage)
			return exitOK
		}
		fmt.Fprintf(stderr, "verdict runner: %v\n\n%s\n", err, runnerUsage)
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "verdict runner: unexpected argument %q\n\n%s\n", fs.Arg(0), runnerUsage)
		return exitUsage
	}
	cfg, err := config.LoadRunner(nil)
	if err != nil {
		fmt.Fprintln(stderr, "verdict runner:", err)
		return exitUsage
	}
	if *server != "" {
		cfg.Server = *server
	}
	if cfg.Server == "" {
		fmt.Fprintf(stderr, "verdict runner: want --server URL (or VERDICT_SERVER)\n\n%s\n", runnerUsage)
		return exitUsage
	}
	if err := runRunner(ctx, cfg, stderr); err != nil {
		fmt.Fprintln(stderr, "verdict runner:", err)
		return exitFailure
	}
	return exitOK
}

func runRunner(ctx context.Context, cfg *config.RunnerConfig, stderr io.Writer) error {
	log := config.NewLogger(stderr, cfg.LogLevel, cfg.LogFormat)
	client, err := peerhttp.NewClient(peerhttp.ClientDeps{URL: cfg.Server, Secret: cfg.Secret, Name: cfg.Name,
		Slots: cfg.Slots, Backend: cfg.Backend, Log: log})
	if err != nil {
		return err
	}
	res := engines.Resources(cfg.Engine)
	backend, err := engines.Open(cfg.Engine, log)
	if err != nil {
		return err
	}
	defer engines.Close(backend)
	if err := backend.Ping(ctx); err != nil {
		return fmt.Errorf("the %s backend does not answer: %w", cfg.Backend, err)
	}
	if err := engines.Prepare(ctx, backend); err != nil {
		return fmt.Errorf("the run network is not ready: %w", err)
	}
	// The name first: what an earlier life of this runner left is removed by the name, so it must
	// not be another live process's.
	if err := claimName(ctx, client, log); err != nil {
		return err
	}
	id := peerhttp.RunnerID(cfg.Name)
	engines.RemoveLeftovers(ctx, backend, id, log)
	r := &vrun.Runner{ID: id, Peer: client, Backend: backend, Clock: domain.SystemClock, Log: log, Slots: cfg.Slots, Resources: res, Lease: cfg.Lease}
	// Cancels come through a long-poll of their own, within a second; heartbeats bring them too.
	go client.WatchCancels(ctx, r.Cancel)
	log.Info("verdict runner started", "server", cfg.Server, "name", cfg.Name, "slots", cfg.Slots, "version", version)
	r.Run(ctx)
	log.Info("stopped")
	return nil
}

// claimName waits until the server gives the runner its name (another process of that name
// went silent) or answers at all (a restart), saying once why it waits.
func claimName(ctx context.Context, c *peerhttp.Client, log *slog.Logger) error {
	warned := false
	for {
		err := c.Hello(ctx)
		if err == nil {
			return nil
		}
		if !warned {
			log.Warn("waiting for the server to give this runner its name", "err", err)
			warned = true
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
}
