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
	"verdict/internal/run/docker"
)

const runnerUsage = `Usage:
  verdict runner --server URL

Runs test suites for the Verdict server at URL (or VERDICT_SERVER) on this host's Docker
engine, reaching the server over HTTP only: no database. It claims runs with
VERDICT_RUNNER_SECRET (the server's own), runs VERDICT_RUNNER_SLOTS of them at once (2), and
names itself VERDICT_RUNNER_NAME (the host name). The run containers' settings are the
embedded runner's: DOCKER_HOST, VERDICT_RUN_MEMORY_MB, VERDICT_RUN_CPUS, VERDICT_RUN_PIDS,
VERDICT_RUN_DISK_MB, VERDICT_RUN_NETWORK, VERDICT_RUN_BLOCKED_CIDRS.`

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
	log := newLogger(stderr, cfg.LogLevel, cfg.LogFormat)
	client, err := peerhttp.NewClient(peerhttp.ClientDeps{URL: cfg.Server, Secret: cfg.Secret, Name: cfg.Name,
		Slots: cfg.Slots, Backend: "docker", Log: log})
	if err != nil {
		return err
	}
	res := vrun.Resources{MemoryBytes: int64(cfg.RunMemoryMB) << 20, NanoCPUs: int64(cfg.RunCPUs * 1e9), PidsLimit: int64(cfg.RunPids)}
	backend, err := docker.New(cfg.DockerHost, docker.Options{DefaultResources: res, Network: cfg.RunNetwork,
		BlockedNets: cfg.BlockedNets, DiskLimitBytes: int64(cfg.RunDiskMB) << 20, Log: log})
	if err != nil {
		return fmt.Errorf("docker: %w", err)
	}
	defer backend.Close()
	if err := backend.Ping(ctx); err != nil {
		return fmt.Errorf("the Docker engine does not answer: %w", err)
	}
	if err := backend.EnsureNetwork(ctx); err != nil {
		return fmt.Errorf("the run network is not ready: %w", err)
	}
	id := peerhttp.RunnerID(cfg.Name)
	removeLeftovers(ctx, backend, id, log)
	r := &vrun.Runner{ID: id, Peer: client, Backend: backend, Clock: domain.SystemClock, Log: log, Slots: cfg.Slots, Resources: res}
	log.Info("verdict runner started", "server", cfg.Server, "name", cfg.Name, "slots", cfg.Slots, "version", version)
	r.Run(ctx)
	log.Info("stopped")
	return nil
}

// removeLeftovers removes the containers an earlier life of this runner left: it holds no run
// yet, and the server's reaper ends those runs once their leases lapse.
func removeLeftovers(ctx context.Context, b *docker.Backend, id string, log *slog.Logger) {
	lctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cs, err := b.List(lctx, map[string]string{vrun.LabelManaged: "true", vrun.LabelRunner: id})
	if err != nil {
		log.Warn("listing this runner's leftover containers failed", "err", err)
		return
	}
	for _, c := range cs {
		log.Info("removing a container an earlier life of this runner left", "container", c.ID)
		if err := b.Remove(lctx, c.ID); err != nil {
			log.Warn("removing a leftover container failed", "container", c.ID, "err", err)
		}
	}
}
