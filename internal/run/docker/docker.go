// Package docker is the Docker Engine backend of the run plane: it runs each execution's
// container on one engine through the Engine API (github.com/moby/moby/client), with the API
// version negotiated so that old engines (API 1.40 and up) work.
//
// Every container is locked down by default: unprivileged, all capabilities dropped,
// no-new-privileges, memory, CPU and process limits, no host mounts (but its network files,
// read-only). Its network is Verdict's run network, a bridge on which containers cannot reach
// each other nor, by host firewall rules, the blocked destinations (cloud metadata); the engine
// keeps it away from containers on other networks, and it reaches the host as
// host.docker.internal. A run joins the network through a reused sandbox (sandbox.go). The
// engine keeps at most 200 MB of its output, and with a disk limit its writable layer is bounded (by Wait, which
// measures it, and by the engine's quota where the storage driver has one). Containers are
// never auto-removed, because the reports are copied out after the exit; Remove does it.
package docker

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/netip"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"verdict/internal/run"
)

// Defaults for the zero fields of run.Resources.
const (
	DefaultMemoryBytes = 2 << 30 // 2 GiB
	DefaultNanoCPUs    = 2e9     // 2 CPUs
	DefaultPidsLimit   = 1024
	// DefaultShmBytes is a run container's /dev/shm: browsers keep their renderers' shared
	// memory there, and the engine's own 64 MB makes Chromium slow or crash its tabs on larger
	// pages. It is memory like any other (tmpfs pages count against the container's memory
	// limit), so it is at most the run's memory limit.
	DefaultShmBytes = 1 << 30 // 1 GiB
)

// Options tune a Backend. The zero value is the safe default, but for DiskLimitBytes.
type Options struct {
	// Defaults for a Spec whose Resources fields are zero; zero here means the package defaults.
	DefaultResources run.Resources
	// ShmBytes is the size of a run container's /dev/shm, at most its memory limit; zero means
	// DefaultShmBytes.
	ShmBytes int64
	// Network is the engine network run containers join, created when missing (see
	// EnsureNetwork): "" is DefaultNetwork; "none" cuts them off (then BASE_URL cannot be
	// reached).
	Network string
	// BlockedNets are destinations no run may reach: nil is DefaultBlockedNets, empty is none.
	BlockedNets []netip.Prefix
	// DiskLimitBytes bounds a run container's writable layer, 0 for no bound: Wait stops a
	// container past it with run.ErrDiskLimit.
	DiskLimitBytes int64
	// DiskPoll is how often Wait measures the writable layer [DefaultDiskPoll].
	DiskPoll time.Duration
	// Log receives what the operator must know, such as isolation that could not be set up
	// [slog.Default()].
	Log *slog.Logger
	// DisableInit runs the image's entrypoint as PID 1. By default the engine's init
	// (docker-init) is PID 1, so suites that spawn browsers have their zombies reaped and
	// SIGTERM reaches them on Stop.
	DisableInit bool
	// NetworkPerRun gives each run container a network namespace of its own on the run
	// network, set up by the engine for it, instead of a reused sandbox (sandbox.go): a short
	// run then costs the engine about twice as much. Runs have their own namespace anyway on
	// an engine architecture other than x86_64 and aarch64.
	NetworkPerRun bool
}

// Backend runs containers on one Docker engine. It is safe for concurrent use.
type Backend struct {
	cli  *client.Client
	opts Options

	infoMu    sync.Mutex
	info      engineInfo
	infoKnown bool

	netMu    sync.Mutex
	netReady bool         // EnsureNetwork succeeded
	quota    atomic.Int32 // quotaUnknown, quotaSupported or quotaUnsupported

	exits     exitWatch   // die events, for Wait (exits.go)
	sandboxes sandboxPool // the network namespaces runs join (sandbox.go)
}

// engineInfo is what a Backend needs to know of its engine.
type engineInfo struct {
	ncpu int64  // CPU count
	arch string // as the engine names it: x86_64, aarch64...
}

// engine returns the engine's info, asking it until it answers (the zero value meanwhile).
func (b *Backend) engine(ctx context.Context) engineInfo {
	b.infoMu.Lock()
	defer b.infoMu.Unlock()
	if !b.infoKnown {
		// Detached from ctx: a cancelled caller must not leave it unknown for the others.
		ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if res, err := b.cli.Info(ictx, client.InfoOptions{}); err == nil {
			b.info, b.infoKnown = engineInfo{ncpu: int64(res.Info.NCPU), arch: res.Info.Architecture}, true
		}
	}
	return b.info
}

func (b *Backend) log() *slog.Logger {
	if b.opts.Log == nil {
		return slog.Default()
	}
	return b.opts.Log
}

// The engine's log of a container's output (json-file) is at most logFiles files of
// logFileSize. Verdict stores at most 32 MiB of a run's log, reading it live: the engine's JSON
// framing (some 70 bytes a line) about doubles short lines, so the first file holds what Verdict
// stores, and a follower that lags less than one file behind loses nothing.
const (
	logFileSize = "100m"
	logFiles    = "2"
)

// startTimeout bounds creating and starting a container, which a cancelled run does not abort.
const startTimeout = 2 * time.Minute

var (
	_ run.Backend      = (*Backend)(nil)
	_ run.ChangeLister = (*Backend)(nil)
)

// New returns a backend for the engine at host ("unix:///var/run/docker.sock",
// "tcp://host:2375"); an empty host means the environment's DOCKER_HOST (and its TLS
// settings) or the local socket. It does not contact the engine: Ping does.
func New(host string, opts Options) (*Backend, error) {
	clientOpts := []client.Opt{client.FromEnv}
	if host != "" {
		clientOpts = append(clientOpts, client.WithHost(host))
	}
	cli, err := client.New(clientOpts...)
	if err != nil {
		return nil, fmt.Errorf("docker client for %q: %w", host, err)
	}
	if opts.DefaultResources.MemoryBytes <= 0 {
		opts.DefaultResources.MemoryBytes = DefaultMemoryBytes
	}
	if opts.DefaultResources.NanoCPUs <= 0 {
		opts.DefaultResources.NanoCPUs = DefaultNanoCPUs
	}
	if opts.DefaultResources.PidsLimit <= 0 {
		opts.DefaultResources.PidsLimit = DefaultPidsLimit
	}
	if opts.ShmBytes <= 0 {
		opts.ShmBytes = DefaultShmBytes
	}
	b := &Backend{cli: cli, opts: opts}
	b.sandboxes.idle, b.sandboxes.used = map[sandboxKey][]*sandbox{}, map[string]*sandbox{}
	return b, nil
}

// Close removes the network sandboxes and releases the client's connections.
func (b *Backend) Close() error {
	b.exits.stop()
	b.closeSandboxes()
	return b.cli.Close()
}

// APIVersion is the Engine API version in use: the negotiated one after the first request
// (Ping negotiates), the client's maximum before.
func (b *Backend) APIVersion() string { return b.cli.ClientVersion() }

// Name is "docker", as VERDICT_BACKEND names it.
func (b *Backend) Name() string { return "docker" }

// Describe names the engine in messages as the API has always worded them.
func (b *Backend) Describe() string { return "the Docker engine" }

// Ping checks that the engine answers and negotiates the API version.
func (b *Backend) Ping(ctx context.Context) error {
	if _, err := b.cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		return fmt.Errorf("docker engine at %s: %w", b.cli.DaemonHost(), err)
	}
	return nil
}

// EnsureImage inspects the image locally and pulls it only when it is absent.
func (b *Backend) EnsureImage(ctx context.Context, image string) error {
	_, err := b.cli.ImageInspect(ctx, image)
	if err == nil {
		return nil
	}
	// An invalid reference is as unobtainable as a missing image; anything else (engine down,
	// timeout) is not the image's fault and must not be reported as "not found".
	if !cerrdefs.IsNotFound(err) && !cerrdefs.IsInvalidArgument(err) {
		return fmt.Errorf("inspect image %s: %w", image, err)
	}
	pull, err := b.cli.ImagePull(ctx, image, client.ImagePullOptions{})
	if err == nil {
		err = pull.Wait(ctx) // the pull's own failure arrives in the progress stream
		_ = pull.Close()
	}
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("pull image %s: %w", image, ctx.Err())
		}
		return fmt.Errorf("%w: %s is not on the engine and could not be pulled: %v", run.ErrImageNotFound, image, err)
	}
	return nil
}

// resources fills the zero fields of r from the defaults and keeps the CPU quota within the
// engine's CPU count, which the engine would otherwise reject.
func (b *Backend) resources(ctx context.Context, r run.Resources) run.Resources {
	d := b.opts.DefaultResources
	if r.MemoryBytes <= 0 {
		r.MemoryBytes = d.MemoryBytes
	}
	if r.NanoCPUs <= 0 {
		r.NanoCPUs = d.NanoCPUs
	}
	if r.PidsLimit <= 0 {
		r.PidsLimit = d.PidsLimit
	}
	if ncpu := b.engine(ctx).ncpu; ncpu > 0 && r.NanoCPUs > ncpu*1e9 {
		r.NanoCPUs = ncpu * 1e9
	}
	return r
}

// hostConfig is the locked-down host configuration every container gets.
func (b *Backend) hostConfig(r run.Resources) *container.HostConfig {
	pids := r.PidsLimit
	hc := &container.HostConfig{
		Privileged:     false,
		CapDrop:        []string{"ALL"},
		SecurityOpt:    []string{"no-new-privileges"},
		ReadonlyRootfs: false, // suites write their reports under /app
		NetworkMode:    container.NetworkMode(b.network()),
		LogConfig: container.LogConfig{
			Type:   "json-file",
			Config: map[string]string{"max-size": logFileSize, "max-file": logFiles},
		},
		ShmSize: min(b.opts.ShmBytes, r.MemoryBytes),
		Resources: container.Resources{
			Memory:     r.MemoryBytes,
			MemorySwap: r.MemoryBytes, // no swap on top of the memory limit
			NanoCPUs:   r.NanoCPUs,
			PidsLimit:  &pids,
		},
	}
	if !b.opts.DisableInit {
		init := true
		hc.Init = &init
	}
	return hc
}

// Start creates and starts the container with exactly spec.Labels (the runner sets
// run.LabelManaged and the run's labels) on the run network. A container that was created but
// could not start, or whose ctx ended meanwhile, is removed again.
//
// Creating and starting are detached from ctx (and bounded by startTimeout): a create aborted
// by a cancel may still have made the container on the engine, with no ID back to remove it by.
func (b *Backend) Start(ctx context.Context, spec run.Spec) (string, error) {
	if spec.Image == "" {
		return "", errors.New("docker: spec has no image")
	}
	env := make([]string, 0, len(spec.Env))
	for _, k := range slices.Sorted(maps.Keys(spec.Env)) {
		env = append(env, k+"="+spec.Env[k])
	}

	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), startTimeout)
	defer cancel()
	opts := client.ContainerCreateOptions{
		Name: spec.Name,
		Config: &container.Config{
			Image:      spec.Image,
			Entrypoint: spec.Entrypoint,
			Cmd:        spec.Args,
			Env:        env,
			Labels:     spec.Labels, // the runner's; Verdict's reconciler finds its containers by them
		},
		HostConfig: b.hostConfig(b.resources(ctx, spec.Resources)),
	}
	var id string
	var err error
	if b.sandboxed(ctx) {
		id, err = b.startInSandbox(ctx, cctx, opts, sandboxKey{runner: spec.Labels[run.LabelRunner], hostGateway: spec.HostGateway}, spec.Files)
	} else {
		id, err = b.startOnNetwork(ctx, cctx, opts, spec.HostGateway, spec.Files)
	}
	if err != nil {
		if cerrdefs.IsNotFound(err) && strings.Contains(strings.ToLower(err.Error()), "image") {
			return "", fmt.Errorf("%w: create container from %s: %v", run.ErrImageNotFound, spec.Image, err)
		}
		return "", fmt.Errorf("start container %s from %s: %w", spec.Name, spec.Image, err)
	}
	return id, nil
}

// hostGateway names the engine's host in a container's /etc/hosts.
const hostGateway = "host.docker.internal:host-gateway"

// startOnNetwork creates and starts the run container in a network namespace of its own on the
// run network.
func (b *Backend) startOnNetwork(ctx, cctx context.Context, opts client.ContainerCreateOptions, withHost bool, files map[string][]byte) (string, error) {
	if err := b.EnsureNetwork(ctx); err != nil {
		return "", err
	}
	opts.HostConfig.NetworkMode = container.NetworkMode(b.network())
	if withHost {
		opts.HostConfig.ExtraHosts = []string{hostGateway}
	}
	id, err := b.createAndStart(ctx, cctx, opts, files)
	if err != nil && isNetworkMissing(err) {
		// The run network was removed behind Verdict's back (docker network prune removes an
		// unused one): it is made again.
		b.forgetNetwork()
		if err = b.EnsureNetwork(cctx); err == nil {
			id, err = b.createAndStart(ctx, cctx, opts, files)
		}
	}
	return id, err
}

// createAndStart creates the container with cctx, writes files into it, and starts it. A
// container that cannot start, or whose run's ctx has ended, is removed again.
func (b *Backend) createAndStart(ctx, cctx context.Context, opts client.ContainerCreateOptions, files map[string][]byte) (string, error) {
	id, err := b.create(cctx, opts)
	if err != nil {
		return "", err
	}
	if len(files) > 0 && ctx.Err() == nil {
		err = b.copyIn(cctx, id, files)
	}
	if err == nil && ctx.Err() == nil {
		err = b.start(cctx, id)
	}
	if err == nil && ctx.Err() != nil {
		err = context.Cause(ctx)
	}
	if err != nil {
		b.removeDetached(ctx, id)
		return "", err
	}
	return id, nil
}

// start starts container id. Engine 20.10 under load has answered a start with "cannot start an
// already running container" for a container its start did start: one found running is started.
func (b *Backend) start(ctx context.Context, id string) error {
	_, err := b.cli.ContainerStart(ctx, id, client.ContainerStartOptions{})
	if err != nil && strings.Contains(err.Error(), "already running") {
		if res, ierr := b.cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{}); ierr == nil && res.Container.State != nil && res.Container.State.Running {
			return nil
		}
	}
	return err
}

// create creates the container, asking the engine for a disk quota until it is known whether it
// can. A failed create removes the container by its name, in case the engine made it all the
// same (a timed-out request).
func (b *Backend) create(ctx context.Context, opts client.ContainerCreateOptions) (string, error) {
	opts.HostConfig.StorageOpt = b.storageQuota()
	created, err := b.cli.ContainerCreate(ctx, opts)
	if err != nil && opts.HostConfig.StorageOpt != nil && b.quota.Load() != quotaSupported && !cerrdefs.IsConflict(err) {
		// Most storage drivers cannot bound a container's layer (overlay2 only on xfs with
		// pquota): without the quota, Wait alone bounds it. Not only while it is unknown:
		// creates that asked for the quota side by side fail alike, and the first one to hear
		// the engine's refusal has already marked the quota unsupported for the others.
		if opts.Name != "" {
			b.removeDetached(ctx, opts.Name)
		}
		opts.HostConfig.StorageOpt = nil
		if created, err = b.cli.ContainerCreate(ctx, opts); err == nil && b.quota.CompareAndSwap(quotaUnknown, quotaUnsupported) {
			b.log().Info("the engine cannot bound a container's writable layer; Verdict measures it while the run goes on", "limit_bytes", b.opts.DiskLimitBytes)
		}
	}
	if err != nil {
		if !cerrdefs.IsConflict(err) && opts.Name != "" {
			b.removeDetached(ctx, opts.Name)
		}
		return "", err
	}
	if opts.HostConfig.StorageOpt != nil {
		b.quota.CompareAndSwap(quotaUnknown, quotaSupported)
	}
	return created.ID, nil
}

// removeDetached removes a container by ID or name, even when ctx has ended.
func (b *Backend) removeDetached(ctx context.Context, idOrName string) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := b.Remove(rctx, idOrName); err != nil {
		b.log().Warn("removing a container that did not start failed", "container", idOrName, "err", err)
	}
}

// Logs follows the container's stdout and stderr from its start until it exits, as one stream of
// whole lines in the order the engine recorded them. Closing the stream stops the following.
func (b *Backend) Logs(ctx context.Context, id string) (io.ReadCloser, error) {
	// Opened as it is reopened: an engine restarting as the container exits answers again
	// within engineReturnWait, with the container's log kept.
	body, err := b.reopenLogs(ctx, id)
	if err != nil {
		return nil, err
	}
	pr, pw := io.Pipe()
	ls := &logStream{PipeReader: pr, body: body}
	go func() {
		lines := &lineSkipper{w: pw}
		for {
			err := demux(lines, body)
			_ = body.Close()
			if err == nil || ctx.Err() != nil || ls.isClosed() {
				pw.CloseWithError(err) // nil gives the reader io.EOF
				return
			}
			// The stream broke (the engine restarting): the engine keeps the container's log, so
			// it is read again once the engine answers, past the lines already passed on.
			if body, err = b.reopenLogs(ctx, id); err != nil {
				pw.CloseWithError(err)
				return
			}
			ls.swap(body)
			lines.restart()
		}
	}()
	return ls, nil
}

func (b *Backend) openLogs(ctx context.Context, id string) (io.ReadCloser, error) {
	body, err := b.cli.ContainerLogs(ctx, id, client.ContainerLogsOptions{
		ShowStdout: true, ShowStderr: true, Follow: true,
	})
	if err != nil {
		return nil, fmt.Errorf("logs of container %s: %w", id, err)
	}
	return body, nil
}

// reopenLogs opens the container's log again once its engine answers, within engineReturnWait.
func (b *Backend) reopenLogs(ctx context.Context, id string) (io.ReadCloser, error) {
	var body io.ReadCloser
	err := untilEngineAnswers(ctx, func(err error) bool { return !cerrdefs.IsNotFound(err) }, func() (err error) {
		body, err = b.openLogs(ctx, id)
		return err
	})
	return body, err
}

// untilEngineAnswers calls try until it succeeds, fails in a way away does not put down to the
// engine being away, ctx ends, or engineReturnWait passes (what a daemon restart takes, with
// room); every half second.
func untilEngineAnswers(ctx context.Context, away func(error) bool, try func() error) error {
	deadline := time.Now().Add(engineReturnWait)
	for {
		err := try()
		if err == nil || !away(err) || ctx.Err() != nil || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// demux copies the engine's multiplexed stdout/stderr stream to dst as whole lines. A writer per
// stream keeps a partial stdout line from being cut by a stderr line. A partial last line is
// passed on at the stream's end, not when the stream broke: read again, it comes whole.
func demux(dst io.Writer, src io.Reader) error {
	out, errOut := run.NewLineWriter(dst), run.NewLineWriter(dst)
	_, err := stdcopy.StdCopy(out, errOut, src)
	if err != nil {
		return err
	}
	for _, w := range []*run.LineWriter{out, errOut} {
		if ferr := w.Flush(); err == nil {
			err = ferr
		}
	}
	return err
}

// lineSkipper passes whole lines on to w, counting them; after restart, as many lines of the
// stream read again from its start are skipped as were passed on before.
type lineSkipper struct {
	w            io.Writer
	passed, skip int
}

func (l *lineSkipper) restart() { l.skip = l.passed }

func (l *lineSkipper) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		end := bytes.IndexByte(p, '\n') + 1
		if end == 0 {
			end = len(p)
		}
		line := p[:end]
		p = p[end:]
		if l.skip > 0 {
			l.skip--
			continue
		}
		if _, err := l.w.Write(line); err != nil {
			return 0, err
		}
		l.passed++
	}
	return n, nil
}

type logStream struct {
	*io.PipeReader
	mu     sync.Mutex
	body   io.Closer
	closed bool
}

func (l *logStream) swap(body io.Closer) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		_ = body.Close()
	}
	l.body = body
}

func (l *logStream) isClosed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closed
}

func (l *logStream) Close() error {
	l.mu.Lock()
	l.closed = true
	body := l.body
	l.mu.Unlock()
	err := body.Close()
	_ = l.PipeReader.Close()
	return err
}

// Wait blocks until the container is not running and returns its exit code. With a disk limit,
// it measures the container's writable layer meanwhile and kills a container past the limit:
// then the error is run.ErrDiskLimit.
func (b *Backend) Wait(ctx context.Context, id string) (int, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	exited, stopExit := b.exitOf(id)
	defer stopExit()
	res := b.cli.ContainerWait(ctx, id, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	var (
		exceeded atomic.Bool
		over     <-chan int64
	)
	if b.opts.DiskLimitBytes > 0 {
		over = b.watchDisk(ctx, id, &exceeded)
	}
	diskErr := func(size int64) error {
		return fmt.Errorf("%w: container %s wrote %d MiB to its writable layer, the limit is %d MiB",
			run.ErrDiskLimit, id, size>>20, b.opts.DiskLimitBytes>>20)
	}
	select {
	case r := <-res.Result:
		if exceeded.Load() {
			return int(r.StatusCode), diskErr(<-over)
		}
		if r.Error != nil && r.Error.Message != "" {
			return int(r.StatusCode), fmt.Errorf("wait for container %s: %s", id, r.Error.Message)
		}
		if b.stoppedByEngine(ctx, id, int(r.StatusCode)) {
			return b.waitAfterEngineLoss(ctx, id, fmt.Errorf("container %s stopped with exit code %d as the engine went away", id, r.StatusCode))
		}
		return int(r.StatusCode), nil
	case code := <-exited:
		// The engine still cleans up after the container; the wait would answer after that.
		if exceeded.Load() {
			return code, diskErr(<-over)
		}
		if b.stoppedByEngine(ctx, id, code) {
			return b.waitAfterEngineLoss(ctx, id, fmt.Errorf("container %s stopped with exit code %d as the engine went away", id, code))
		}
		return code, nil
	case err := <-res.Error:
		if ctx.Err() != nil {
			return -1, fmt.Errorf("wait for container %s: %w", id, err)
		}
		return b.waitAfterEngineLoss(ctx, id, err)
	case size := <-over:
		return -1, diskErr(size)
	}
}

// engineStopWait is how long a container stopped by SIGTERM or SIGKILL is checked for an engine
// going away: an engine shutting down stops its containers (SIGTERM, then SIGKILL after their
// stop timeout, 10 s by default) before its API goes.
const engineStopWait = 15 * time.Second

// stoppedByEngine reports whether a container that exited with code was stopped by its engine
// shutting down rather than by the suite: the code is SIGTERM's or SIGKILL's (143, 137), not
// an out-of-memory kill, and the engine stops answering within engineStopWait. A suite that
// ends so by itself is settled that much later; any other exit at once.
func (b *Backend) stoppedByEngine(ctx context.Context, id string, code int) bool {
	if code != 128+15 && code != 128+9 {
		return false
	}
	ictx, cancel := context.WithTimeout(ctx, 5*time.Second)
	got, err := b.cli.ContainerInspect(ictx, id, client.ContainerInspectOptions{})
	cancel()
	if err == nil && got.Container.State != nil && got.Container.State.OOMKilled {
		return false
	}
	for deadline := time.Now().Add(engineStopWait); time.Now().Before(deadline); {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		_, err := b.cli.Ping(pctx, client.PingOptions{})
		cancel()
		if err != nil {
			return ctx.Err() == nil
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(500 * time.Millisecond):
		}
	}
	return false
}

// engineReturnWait bounds how long a run waits for its engine to answer again after the wait
// broke (the engine restarting): about what a daemon restart takes, with room.
const engineReturnWait = 2 * time.Minute

// waitAfterEngineLoss follows a container whose wait broke (werr): the engine stopped
// answering, most often because it restarted. Once it answers again, a container still running
// (an engine with live-restore keeps them) is waited for again; one that exited 0 keeps its
// outcome; one that stopped otherwise, or is gone, is the engine's restart, said plainly.
func (b *Backend) waitAfterEngineLoss(ctx context.Context, id string, werr error) (int, error) {
	deadline := time.Now().Add(engineReturnWait)
	for {
		ictx, cancel := context.WithTimeout(ctx, 5*time.Second)
		got, err := b.cli.ContainerInspect(ictx, id, client.ContainerInspectOptions{})
		cancel()
		switch {
		case err == nil && got.Container.State != nil && got.Container.State.Running:
			select { // a wait that keeps breaking at once must not spin
			case <-ctx.Done():
				return -1, fmt.Errorf("wait for container %s: %w", id, werr)
			case <-time.After(time.Second):
			}
			return b.Wait(ctx, id)
		case err == nil && got.Container.State != nil:
			if code := got.Container.State.ExitCode; code != 0 {
				return code, fmt.Errorf("the Docker engine restarted while the run was in progress: its container stopped with exit code %d", code)
			}
			return 0, nil
		case err != nil && cerrdefs.IsNotFound(err):
			return -1, errors.New("the Docker engine restarted while the run was in progress: its container is gone")
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return -1, fmt.Errorf("wait for container %s: %w (the Docker engine did not answer again within %s)", id, werr, engineReturnWait)
		}
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// CopyOut returns the folder at p as a tar stream whose entries start with the folder's base
// name (copying /app/junit gives junit/, junit/results.xml...). The caller closes it.
func (b *Backend) CopyOut(ctx context.Context, id, p string) (io.ReadCloser, error) {
	// An engine that does not answer (restarting as the run ended) is waited for: the container
	// and its files outlive the restart.
	var res client.CopyFromContainerResult
	err := untilEngineAnswers(ctx, client.IsErrConnectionFailed, func() (err error) {
		res, err = b.cli.CopyFromContainer(ctx, id, client.CopyFromContainerOptions{SourcePath: p})
		return err
	})
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			// The engine says "not found" both for the path and for the container.
			if _, ierr := b.cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{}); ierr == nil {
				return nil, fmt.Errorf("%w: %s in container %s", run.ErrPathNotFound, p, id)
			}
		}
		return nil, fmt.Errorf("copy %s out of container %s: %w", p, id, err)
	}
	return res.Content, nil
}

// Changed lists the paths the container added or changed (the engine's diff of its writable
// layer against its image: it reads that layer alone, however big the image).
func (b *Backend) Changed(ctx context.Context, id string) ([]string, error) {
	res, err := b.cli.ContainerDiff(ctx, id, client.ContainerDiffOptions{})
	if err != nil {
		return nil, fmt.Errorf("list the changes of container %s: %w", id, err)
	}
	var paths []string
	for _, c := range res.Changes {
		if c.Kind == container.ChangeAdd || c.Kind == container.ChangeModify {
			paths = append(paths, c.Path)
		}
	}
	return paths, nil
}

// Stop sends SIGTERM and kills the container after grace (rounded up to whole seconds, the
// engine's unit). A container that is already stopped or gone is not an error.
func (b *Backend) Stop(ctx context.Context, id string, grace time.Duration) error {
	secs := int((grace + time.Second - 1) / time.Second)
	_, err := b.cli.ContainerStop(ctx, id, client.ContainerStopOptions{Timeout: &secs})
	if err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("stop container %s: %w", id, err)
	}
	return nil
}

// Remove removes the container and its anonymous volumes, killing it if it runs. A container
// that is already gone, or being removed, is not an error. A run container's sandbox is free for
// the next run once the container is gone.
func (b *Backend) Remove(ctx context.Context, id string) error {
	_, err := b.cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	gone := err == nil || cerrdefs.IsNotFound(err)
	b.releaseSandbox(id, gone)
	switch {
	case gone:
		return nil
	case cerrdefs.IsConflict(err) && strings.Contains(err.Error(), "already in progress"):
		return nil
	}
	return fmt.Errorf("remove container %s: %w", id, err)
}

// List returns the containers, running or not, that carry all the given labels.
func (b *Backend) List(ctx context.Context, labels map[string]string) ([]run.Container, error) {
	f := make(client.Filters)
	for k, v := range labels {
		f.Add("label", k+"="+v)
	}
	res, err := b.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	out := make([]run.Container, 0, len(res.Items))
	for _, c := range res.Items {
		out = append(out, run.Container{ID: c.ID, Labels: c.Labels, State: string(c.State)})
	}
	return out, nil
}

// labelListDir marks ListDir's short-lived containers. They carry no run.LabelManaged: they belong
// to no run, and a reconciler removing run containers must not remove one mid-listing.
const labelListDir = "dev.verdict.listdir"

// listDirEntrypoint replaces the image's entrypoint in ListDir's container: it is never started,
// and an image without an entrypoint or command could not even be created otherwise.
const listDirEntrypoint = "/verdict-listdir-never-started"

// ListDir lists the directories directly under p inside the image, sorted, without running the
// image: it creates a container (pulling the image if absent and pull is set), copies p out and
// removes it.
func (b *Backend) ListDir(ctx context.Context, image, p string, pull bool) ([]string, error) {
	if pull {
		if err := b.EnsureImage(ctx, image); err != nil {
			return nil, err
		}
	} else if _, err := b.cli.ImageInspect(ctx, image); err != nil {
		if cerrdefs.IsNotFound(err) || cerrdefs.IsInvalidArgument(err) {
			return nil, fmt.Errorf("%w: %s is not on the engine", run.ErrImageNotFound, image)
		}
		return nil, fmt.Errorf("inspect image %s: %w", image, err)
	}
	hc := b.hostConfig(b.resources(ctx, run.Resources{}))
	hc.NetworkMode = "none"
	created, err := b.cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config: &container.Config{
			Image:      image,
			Entrypoint: []string{listDirEntrypoint},
			Labels:     map[string]string{labelListDir: "true"},
		},
		HostConfig: hc,
	})
	if err != nil {
		return nil, fmt.Errorf("create container from %s to list %s: %w", image, p, err)
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_ = b.Remove(rctx, created.ID)
	}()

	rc, err := b.CopyOut(ctx, created.ID, p)
	if err != nil {
		if errors.Is(err, run.ErrPathNotFound) {
			return nil, fmt.Errorf("%w: %s in image %s", run.ErrPathNotFound, p, image)
		}
		return nil, err
	}
	defer rc.Close()
	return topDirs(rc)
}

// topDirs returns the directories one level below the archive's root entry. The engine's archive
// is rooted at the copied folder's base name; directories are also inferred from deeper entries,
// since an archive need not list every directory header.
func topDirs(r io.Reader) ([]string, error) {
	seen := map[string]bool{}
	tr := tar.NewReader(bufio.NewReader(r))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read archive: %w", err)
		}
		name := strings.Trim(path.Clean("/"+h.Name), "/")
		parts := strings.Split(name, "/")
		switch {
		case len(parts) == 2 && h.Typeflag == tar.TypeDir:
			seen[parts[1]] = true
		case len(parts) > 2:
			seen[parts[1]] = true
		}
	}
	return slices.Sorted(maps.Keys(seen)), nil
}

// copyIn writes files (by absolute path, readable by any user) into the created container
// before it starts, as one tar stream extracted at its root.
func (b *Backend) copyIn(ctx context.Context, id string, files map[string][]byte) error {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		rel := strings.TrimPrefix(path.Clean(name), "/")
		for d := path.Dir(rel); d != "." && !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
			if err := tw.WriteHeader(&tar.Header{Name: d + "/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: time.Unix(0, 0)}); err != nil {
				return err
			}
		}
		if err := tw.WriteHeader(&tar.Header{Name: rel, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(files[name])),
			ModTime: time.Unix(0, 0)}); err != nil {
			return err
		}
		if _, err := tw.Write(files[name]); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	_, err := b.cli.CopyToContainer(ctx, id, client.CopyToContainerOptions{DestinationPath: "/", Content: &buf})
	if err != nil {
		return fmt.Errorf("write the run's files into the container: %w", err)
	}
	return nil
}
