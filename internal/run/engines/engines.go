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

// Open connects the backend e names. A Docker engine or cluster that does not answer yet is not
// an error: Ping tells, and runs wait in the queue meanwhile.
func Open(e config.Engine, log *slog.Logger) (run.Backend, error) {
	switch e.Backend {
	case "kubernetes":
		b, err := kubernetes.New(e.Kubeconfig, kubernetes.Options{Namespace: e.K8sNamespace,
			HelperImage: e.K8sHelperImage, PullPolicy: corev1.PullPolicy(e.K8sPullPolicy),
			StartTimeout: e.K8sStartTimeout, DefaultResources: Resources(e), DiskLimitBytes: int64(e.RunDiskMB) << 20,
			BlockedNets: e.BlockedNets, Log: log})
		if err != nil {
			return nil, fmt.Errorf("kubernetes: %w", err)
		}
		return b, nil
	case "docker", "":
		blocked := e.BlockedNets
		if blocked == nil {
			blocked = []netip.Prefix{} // none; nil would be the backend's default
		}
		b, err := docker.New(e.DockerHost, docker.Options{DefaultResources: Resources(e), Network: e.RunNetwork,
			BlockedNets: blocked, DiskLimitBytes: int64(e.RunDiskMB) << 20, Log: log})
		if err != nil {
			return nil, fmt.Errorf("docker: %w", err)
		}
		return b, nil
	}
	return nil, fmt.Errorf("unknown backend %q", e.Backend)
}

// Name is how the backend is called in messages and in the runners' list.
func Name(b run.Backend) string {
	if _, ok := b.(*kubernetes.Backend); ok {
		return "kubernetes"
	}
	return "docker"
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

// RemoveLeftovers removes the containers (Jobs) an earlier life of runner id left: it holds no
// run yet, and the server's reaper ends those runs once their leases lapse.
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
}
