// Package run is the run plane: the runner loop, the Backend interface that a container engine
// implements, and Peer, the one interface through which a runner reaches the control plane
// (claims, leases, logs, reports, final results). It knows nothing of the store, billing,
// secrets at rest or report storage: package control implements Peer over them.
package run

import (
	"context"
	"errors"
	"io"
	"time"
)

// ErrImageNotFound: the image is not on the engine and could not be pulled.
var ErrImageNotFound = errors.New("image not found")

// ErrNotStarted: Wait found that the container will not start (its image cannot be pulled, it
// cannot be scheduled); the error wrapping it says why, in the engine's words.
var ErrNotStarted = errors.New("the container could not start")

// ErrDiskLimit: Wait stopped the container because its writable layer passed the backend's
// disk bound.
var ErrDiskLimit = errors.New("disk limit exceeded")

// MaxRawLineBytes bounds a log line as a Backend passes it on: of a longer line, the first
// MaxRawLineBytes bytes come as a line and the rest of it is dropped. It exceeds the stored line
// (16 KiB) by more than the longest variable value (32 KiB), so a secret is masked whole before
// the line is cut.
const MaxRawLineBytes = 64 << 10

// Labels put on every container Verdict starts, so orphans can be found after a crash.
const (
	LabelManaged = "dev.verdict.managed" // "true"
	LabelOrg     = "dev.verdict.organization"
	LabelTask    = "dev.verdict.task"
	// LabelRunner names the runner that started the container: reconciling after a restart
	// touches only its own, so installations sharing an engine never remove each other's runs.
	LabelRunner = "dev.verdict.runner"
)

// Resources bound a container. Zero means the backend's default.
type Resources struct {
	MemoryBytes int64
	NanoCPUs    int64 // 1e9 = one CPU
	PidsLimit   int64
}

// Spec describes one run's container.
type Spec struct {
	Name       string // unique container name
	Image      string
	Entrypoint []string          // nil keeps the image's entrypoint
	Args       []string          // the entrypoint's arguments (the folder first)
	Env        map[string]string // the contract variables plus project and request variables
	Labels     map[string]string
	Resources  Resources
	// HostGateway makes host.docker.internal (and a loopback baseUrl) reach the host.
	HostGateway bool
	// Timeout is the run's time limit; the runner enforces it, a backend may bound the
	// container by it too (Kubernetes: the Job's deadline).
	Timeout time.Duration
	// ReportDirs are the run's report folders under /app (junit, playwright-report): a backend
	// that cannot copy out of an exited container keeps them on volumes of their own.
	ReportDirs []string
	// Files are written into the container before it starts, by absolute path (a sharded
	// run's lists of tests, run.TestsFile); nil: none.
	Files map[string][]byte
}

// Container is a container found by label.
type Container struct {
	ID     string
	Labels map[string]string
	State  string // running, exited, created...
}

// Backend runs containers. Woodpecker's backend interface is the model: one interface, a real
// engine behind it, and nothing in the scheduler that knows which.
type Backend interface {
	// Name is how the backend is called in settings (VERDICT_BACKEND), messages, the readiness
	// check and the runners' list: "docker", "kubernetes".
	Name() string
	// Ping reports whether the engine answers.
	Ping(ctx context.Context) error
	// EnsureImage makes the image available locally, pulling only when absent;
	// ErrImageNotFound when it cannot be had.
	EnsureImage(ctx context.Context, image string) error
	// Start creates and starts the container and returns its ID. When it fails, or ctx ends
	// meanwhile, it leaves no container behind.
	Start(ctx context.Context, spec Spec) (id string, err error)
	// Logs streams the container's combined stdout and stderr from its start until it exits,
	// as whole lines of at most MaxRawLineBytes; closing the stream stops following.
	Logs(ctx context.Context, id string) (io.ReadCloser, error)
	// Wait blocks until the container exits and returns its exit code; ErrDiskLimit when it
	// stopped the container for passing the disk bound.
	Wait(ctx context.Context, id string) (exitCode int, err error)
	// CopyOut copies the folder at path in the container (running or exited) as a tar stream
	// whose entries start with the folder's base name (/app/junit gives junit/...); the caller
	// closes it. errors.Is(err, ErrPathNotFound) when the folder does not exist.
	CopyOut(ctx context.Context, id, path string) (io.ReadCloser, error)
	// Stop stops the container (SIGTERM), killing it after grace; an already stopped or
	// removed container is not an error.
	Stop(ctx context.Context, id string, grace time.Duration) error
	// Remove removes the container and its anonymous volumes, forcibly; a container already
	// gone is not an error.
	Remove(ctx context.Context, id string) error
	// List returns the containers carrying all of the given labels.
	List(ctx context.Context, labels map[string]string) ([]Container, error)
	// ListDir lists the directories directly under path inside an image without running it
	// (used by tests-structure). With pull false an image the engine lacks is ErrImageNotFound
	// and no registry is asked.
	ListDir(ctx context.Context, image, path string, pull bool) ([]string, error)
}

// Describe is how messages name where b runs containers: the backend's own words when it has
// them (Describe() string: the Docker backend's "the Docker engine"), else "the <name> backend".
func Describe(b Backend) string {
	if d, ok := b.(interface{ Describe() string }); ok {
		return d.Describe()
	}
	return "the " + b.Name() + " backend"
}

// RunnerSweeper is a Backend that keeps things for a runner besides its run containers (the Docker
// backend's network sandboxes). SweepRunner removes those of runner id that this Backend does not
// hold itself: the runner is lost, or this is a later life of it.
type RunnerSweeper interface {
	SweepRunner(ctx context.Context, id string) error
}

// ChangeLister is a Backend that lists what a container wrote: the paths of the files it added
// or changed since it started, whatever their folder. Collection looks there for result files
// outside the report folders when /app is too big to copy whole.
type ChangeLister interface {
	Changed(ctx context.Context, id string) ([]string, error)
}

// ErrPathNotFound: CopyOut's path does not exist in the container.
var ErrPathNotFound = errors.New("path not found in container")
