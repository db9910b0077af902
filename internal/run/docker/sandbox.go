package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/client"

	"verdict/internal/run"
)

// Sandboxes are the network namespaces runs join.
//
// Setting up a container's network is about half of what a short run costs the engine: a veth
// pair and an address on the bridge and, on a user-defined network such as the run network, the
// engine's DNS resolver, installed by a dozen iptables calls inside the new namespace (engine
// 20.10, 2 cores: a `docker run` of a trivial image on the run network costs about 390 ms of
// host CPU, CLI included; one that joins an existing namespace, about 180 ms). A sandbox is a
// container on the run network that holds a namespace and does nothing else (pause.go); runs
// join it (network mode container:<sandbox>) one after another, so the setup is paid once for
// many runs.
//
// Nothing of a run stays in the namespace: its processes end with its container and their
// sockets with them, and without capabilities it can change no address, route or firewall rule,
// nor write /proc/sys. The engine shares the sandbox's /etc/hosts, /etc/resolv.conf and
// /etc/hostname with the runs that join it, so a run gets them read-only: no run can rename a
// host for the next. A sandbox serves one run at a time and is reused only once that run's
// container is removed; runs side by side each have one, and sandboxes cannot reach each other,
// being on the run network. One idle for sandboxIdle is removed.
const (
	LabelSandbox      = "dev.verdict.sandbox" // "true"; a sandbox belongs to no run (no run.LabelManaged)
	sandboxImage      = "verdict-sandbox:1"
	sandboxIdle       = 10 * time.Minute
	sandboxNamePrefix = "verdict-sandbox-"
)

// sandboxKey is what a run needs of a sandbox. The runner's label lets a restarted runner find
// the sandboxes its earlier life left.
type sandboxKey struct {
	runner      string
	hostGateway bool
}

type sandbox struct {
	id    string
	key   sandboxKey
	binds []string    // the network files, read-only, for a run joining it
	timer *time.Timer // while idle: removes it after sandboxIdle
}

// sandboxPool holds a Backend's sandboxes.
type sandboxPool struct {
	mu     sync.Mutex
	idle   map[sandboxKey][]*sandbox
	used   map[string]*sandbox // by the run container's ID
	closed bool
	drops  sync.WaitGroup // removals under way

	imageMu    sync.Mutex
	imageReady bool

	sweepMu sync.Mutex
	swept   map[string]bool // runners whose earlier sandboxes are removed
}

// sandboxed tells whether runs join sandboxes: on a run network (not "none"), unless
// Options.NetworkPerRun, on an engine architecture pause.go has code for.
func (b *Backend) sandboxed(ctx context.Context) bool {
	if b.opts.NetworkPerRun || b.network() == "none" {
		return false
	}
	_, ok := pauseCode[b.engine(ctx).arch]
	return ok
}

// startInSandbox creates and starts the run container in a sandbox. When the sandbox is found
// gone or stopped (removed behind Verdict's back, or the engine restarted), the run gets a new one
// (not another idle one, which may be as dead). A start that fails for any reason drops its
// sandbox, which a container may have joined.
func (b *Backend) startInSandbox(ctx, cctx context.Context, opts client.ContainerCreateOptions, key sandboxKey, files map[string][]byte) (string, error) {
	sb, err := b.takeSandbox(cctx, key)
	for attempt := 0; ; attempt++ {
		if err != nil {
			return "", fmt.Errorf("network sandbox: %v", err) // not the run image's "not found"
		}
		opts.HostConfig.NetworkMode = container.NetworkMode("container:" + sb.id)
		opts.HostConfig.Binds = sb.binds
		var id string
		if id, err = b.createAndStart(ctx, cctx, opts, files); err == nil {
			b.sandboxes.mu.Lock()
			b.sandboxes.used[id] = sb
			b.sandboxes.mu.Unlock()
			return id, nil
		}
		b.dropSandbox(sb)
		if attempt > 0 || ctx.Err() != nil || !strings.Contains(err.Error(), sb.id) {
			return "", err
		}
		sb, err = b.newSandbox(cctx, key)
	}
}

// takeSandbox returns an idle sandbox for key, or a new one.
func (b *Backend) takeSandbox(ctx context.Context, key sandboxKey) (*sandbox, error) {
	p := &b.sandboxes
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, errors.New("the backend is closed")
	}
	if list := p.idle[key]; len(list) > 0 {
		sb := list[len(list)-1]
		p.idle[key] = list[:len(list)-1]
		sb.timer.Stop() // one that fired finds the sandbox no longer idle
		p.mu.Unlock()
		return sb, nil
	}
	p.mu.Unlock()
	return b.newSandbox(ctx, key)
}

// releaseSandbox ends the use of the sandbox of run container id: it is idle again when the
// container is gone for sure (removed), else it is removed.
func (b *Backend) releaseSandbox(id string, containerGone bool) {
	p := &b.sandboxes
	p.mu.Lock()
	sb := p.used[id]
	delete(p.used, id)
	if sb == nil || !containerGone || p.closed {
		p.mu.Unlock()
		if sb != nil {
			b.dropSandbox(sb)
		}
		return
	}
	p.idle[sb.key] = append(p.idle[sb.key], sb)
	sb.timer = time.AfterFunc(sandboxIdle, func() { b.expireSandbox(sb) })
	p.mu.Unlock()
}

// expireSandbox removes sb if it is still idle.
func (b *Backend) expireSandbox(sb *sandbox) {
	p := &b.sandboxes
	p.mu.Lock()
	list := p.idle[sb.key]
	for i, s := range list {
		if s == sb {
			p.idle[sb.key] = append(list[:i:i], list[i+1:]...)
			p.mu.Unlock()
			b.dropSandbox(sb)
			return
		}
	}
	p.mu.Unlock()
}

// dropSandbox removes sb in the background; Close waits for it.
func (b *Backend) dropSandbox(sb *sandbox) {
	b.sandboxes.drops.Add(1)
	go func() {
		defer b.sandboxes.drops.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := b.Remove(ctx, sb.id); err != nil {
			b.log().Warn("removing a network sandbox failed", "container", sb.id, "err", err)
		}
	}()
}

// closeSandboxes removes every sandbox, idle or in use (a run still in one keeps its network),
// and waits for the removals.
func (b *Backend) closeSandboxes() {
	p := &b.sandboxes
	p.mu.Lock()
	p.closed = true
	var all []*sandbox
	for _, list := range p.idle {
		for _, sb := range list {
			sb.timer.Stop()
			all = append(all, sb)
		}
	}
	for _, sb := range p.used {
		all = append(all, sb)
	}
	clear(p.idle)
	clear(p.used)
	p.mu.Unlock()
	for _, sb := range all {
		b.dropSandbox(sb)
	}
	p.drops.Wait()
}

// newSandbox creates and starts a sandbox for key on the run network and learns the paths of its
// network files. A network or image found missing (pruned) is made again, once.
func (b *Backend) newSandbox(ctx context.Context, key sandboxKey) (*sandbox, error) {
	b.sweepSandboxes(ctx, key.runner)
	// A run container's lockdown, tighter: it writes nothing, prints nothing, reaps nothing. The
	// bounds leave room for the runtime's own init, which runs in the container's cgroup while it
	// starts it (a Go program of several threads): tighter ones are not worth a failed start.
	hc := b.hostConfig(run.Resources{MemoryBytes: 64 << 20, NanoCPUs: 1e8, PidsLimit: 32})
	hc.ReadonlyRootfs = true
	hc.LogConfig = container.LogConfig{Type: "none"}
	hc.Init = nil
	if key.hostGateway {
		hc.ExtraHosts = []string{hostGateway}
	}
	opts := client.ContainerCreateOptions{
		Config:     &container.Config{Image: sandboxImage, Labels: map[string]string{LabelSandbox: "true", run.LabelRunner: key.runner}},
		HostConfig: hc,
	}
	var sb *sandbox
	for attempt := 0; ; attempt++ {
		err := b.EnsureNetwork(ctx)
		if err == nil {
			err = b.ensureSandboxImage(ctx)
		}
		var created client.ContainerCreateResult
		if err == nil {
			var name [6]byte
			_, _ = rand.Read(name[:])
			opts.Name = sandboxNamePrefix + hex.EncodeToString(name[:])
			created, err = b.cli.ContainerCreate(ctx, opts)
		}
		if err == nil {
			sb = &sandbox{id: created.ID, key: key}
			if err = b.start(ctx, sb.id); err != nil {
				b.dropSandbox(sb) // the engine joins the network at the start
			}
		}
		if err == nil {
			break
		}
		if attempt > 0 || !cerrdefs.IsNotFound(err) {
			return nil, err
		}
		b.forgetNetwork()
		b.sandboxes.imageMu.Lock()
		b.sandboxes.imageReady = false
		b.sandboxes.imageMu.Unlock()
	}
	res, err := b.cli.ContainerInspect(ctx, sb.id, client.ContainerInspectOptions{})
	if err != nil {
		b.dropSandbox(sb)
		return nil, err
	}
	c := res.Container
	for _, f := range []struct{ src, dst string }{{c.HostsPath, "/etc/hosts"}, {c.ResolvConfPath, "/etc/resolv.conf"}, {c.HostnamePath, "/etc/hostname"}} {
		if f.src != "" {
			sb.binds = append(sb.binds, f.src+":"+f.dst+":ro")
		}
	}
	return sb, nil
}

// sweepSandboxes removes, once per runner, the sandboxes an earlier life of the runner left,
// before the runner's first sandbox is made. An unnamed runner (no run.LabelRunner) has no
// earlier life to tell apart.
func (b *Backend) sweepSandboxes(ctx context.Context, runner string) {
	if runner == "" {
		return
	}
	p := &b.sandboxes
	p.sweepMu.Lock()
	defer p.sweepMu.Unlock()
	if p.swept[runner] {
		return
	}
	if p.swept == nil {
		p.swept = map[string]bool{}
	}
	p.swept[runner] = true
	if err := b.SweepRunner(ctx, runner); err != nil {
		b.log().Warn("removing the network sandboxes an earlier life of this runner left failed", "err", err)
	}
}

var _ run.RunnerSweeper = (*Backend)(nil)

// SweepRunner removes the sandboxes of runner id on the engine that this Backend does not hold:
// those of the reaper's own process's runner that lost a run (the reaper calls it), or of an
// earlier life of this one. A run still in one keeps its network, and a runner still alive
// replaces a sandbox it finds gone.
func (b *Backend) SweepRunner(ctx context.Context, id string) error {
	found, err := b.List(ctx, map[string]string{LabelSandbox: "true", run.LabelRunner: id})
	if err != nil {
		return err
	}
	held := b.heldSandboxes()
	var errs []error
	for _, c := range found {
		if !held[c.ID] {
			errs = append(errs, b.Remove(ctx, c.ID))
		}
	}
	return errors.Join(errs...)
}

// heldSandboxes are the IDs of this Backend's sandboxes, idle or in use.
func (b *Backend) heldSandboxes() map[string]bool {
	p := &b.sandboxes
	p.mu.Lock()
	defer p.mu.Unlock()
	held := map[string]bool{}
	for _, list := range p.idle {
		for _, sb := range list {
			held[sb.id] = true
		}
	}
	for _, sb := range p.used {
		held[sb.id] = true
	}
	return held
}

// ensureSandboxImage imports the sandbox image into the engine when it lacks it: a file system
// of one file, pause.go's program for the engine's architecture.
func (b *Backend) ensureSandboxImage(ctx context.Context) error {
	p := &b.sandboxes
	p.imageMu.Lock()
	defer p.imageMu.Unlock()
	if p.imageReady {
		return nil
	}
	if _, err := b.cli.ImageInspect(ctx, sandboxImage); err == nil {
		p.imageReady = true
		return nil
	} else if !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("inspect image %s: %w", sandboxImage, err)
	}
	arch := b.engine(ctx).arch
	prog, ok := pauseELF(arch)
	if !ok {
		return fmt.Errorf("no sandbox program for engine architecture %q", arch)
	}
	var fs bytes.Buffer
	tw := tar.NewWriter(&fs)
	_ = tw.WriteHeader(&tar.Header{Name: "pause", Mode: 0o555, Size: int64(len(prog)), Typeflag: tar.TypeReg})
	_, _ = tw.Write(prog)
	_ = tw.Close()
	res, err := b.cli.ImageImport(ctx, client.ImageImportSource{Source: &fs, SourceName: "-"}, sandboxImage,
		client.ImageImportOptions{Changes: []string{`CMD ["/pause"]`}, Message: "Verdict's network sandbox"})
	if err == nil {
		err = readJSONStream(res)
		_ = res.Close()
	}
	if err != nil {
		return fmt.Errorf("import image %s: %w", sandboxImage, err)
	}
	p.imageReady = true
	return nil
}

// readJSONStream reads an engine's progress stream to its end and returns the error it reports.
func readJSONStream(r io.Reader) error {
	dec := json.NewDecoder(r)
	for {
		var m jsonstream.Message
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
		if m.Error != nil {
			return errors.New(m.Error.Message)
		}
	}
}
