// Package engines opens the run backend the configuration names: the Docker engine, or a
// Kubernetes cluster (a Job per run). The server's embedded runner and `verdict runner` open
// theirs alike.
package engines

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"time"

	corev1 "k8s.io/api/core/v1"

	"verdict/internal/config"
	"verdict/internal/run"
	"verdict/internal/run/docker"
	"verdict/internal/run/kubernetes"
)

// Resources are the limits e gives each run's container.
func Resources(e config.Engine) run.Resources {
	return run.Resources{MemoryBytes: int64(e.RunMemoryMB) << 20, NanoCPUs: int64(e.RunCPUs * 1e9), PidsLimit: int64(e.RunPids)}
}

// opener opens a backend from the engine settings.
type opener func(e config.Engine, log *slog.Logger) (run.Backend, error)

// backends are the run backends VERDICT_BACKEND may name, each with its constructor: a new
// backend is one line here (and its name in config's check of VERDICT_BACKEND).
var backends = map[string]opener{
	"docker":     openDocker,
	"kubernetes": openKubernetes,
}

// Open connects the backend e names ("": docker). A Docker engine or cluster that does not
// answer yet is not an error: Ping tells, and runs wait in the queue meanwhile.
func Open(e config.Engine, log *slog.Logger) (run.Backend, error) {
	name := e.Backend
	if name == "" {
		name = "docker"
	}
	open, ok := backends[name]
	if !ok {
		return nil, fmt.Errorf("unknown backend %q", e.Backend)
	}
	b, err := open(e, log)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return b, nil
}

func openDocker(e config.Engine, log *slog.Logger) (run.Backend, error) {
	blocked := e.BlockedNets
	if blocked == nil {
		blocked = []netip.Prefix{} // none; nil would be the backend's default
	}
	b, err := docker.New(e.DockerHost, docker.Options{DefaultResources: Resources(e), Network: e.RunNetwork,
		BlockedNets: blocked, DiskLimitBytes: int64(e.RunDiskMB) << 20, ShmBytes: int64(e.RunShmMB) << 20, Log: log})
	if err != nil {
		return nil, err
	}
	return b, nil
}

func openKubernetes(e config.Engine, log *slog.Logger) (run.Backend, error) {
	b, err := kubernetes.New(e.Kubeconfig, kubernetes.Options{Namespace: e.K8sNamespace,
		HelperImage: e.K8sHelperImage, PullPolicy: corev1.PullPolicy(e.K8sPullPolicy),
		StartTimeout: e.K8sStartTimeout, DefaultResources: Resources(e), DiskLimitBytes: int64(e.RunDiskMB) << 20,
		BlockedNets: e.BlockedNets, Log: log})
	if err != nil {
		return nil, err
	}
	return b, nil
}

// Prepare readies what runs need before the first starts: Docker's run network, Kubernetes'
// NetworkPolicy.
func Prepare(ctx context.Context, b run.Backend) error {
	if p, ok := b.(interface{ EnsureNetwork(context.Context) error }); ok {
		return p.EnsureNetwork(ctx)
	}
	return nil
}

// Close releases the backend's connections.
func Close(b run.Backend) {
	if c, ok := b.(io.Closer); ok {
		_ = c.Close()
	}
}

// RemoveLeftovers removes the containers (Jobs) an earlier life of runner id left, and what else
// it kept on the backend (run.RunnerSweeper: Docker's network sandboxes), at once rather than
// before this life's first run: it holds no run yet. The server's reaper ends those runs once
// their leases lapse, but touches nothing on this runner's backend: cleaning it is the
// runner's own work.
func RemoveLeftovers(ctx context.Context, b run.Backend, id string, log *slog.Logger) {
	lctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cs, err := b.List(lctx, map[string]string{run.LabelManaged: "true", run.LabelRunner: id})
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
	if s, ok := b.(run.RunnerSweeper); ok {
		if err := s.SweepRunner(lctx, id); err != nil {
			log.Warn("removing the network sandboxes an earlier life of this runner left failed", "err", err)
		}
	}
}
