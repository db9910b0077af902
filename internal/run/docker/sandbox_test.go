package docker_test

import (
	"bufio"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"verdict/internal/domain"
	"verdict/internal/run"
	"verdict/internal/run/docker"
	"verdict/internal/testenv"
	"verdict/internal/testenv/dockerenv"
)

func inspect(t *testing.T, raw *client.Client, id string) container.InspectResponse {
	t.Helper()
	res, err := raw.ContainerInspect(context.Background(), id, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return res.Container
}

// sandboxOf returns the sandbox whose network the run container c joined: a locked-down container
// of Verdict's, not a run's.
func sandboxOf(t *testing.T, raw *client.Client, c container.InspectResponse) container.InspectResponse {
	t.Helper()
	mode := string(c.HostConfig.NetworkMode)
	id, ok := strings.CutPrefix(mode, "container:")
	if !ok {
		t.Fatalf("run container %s has network mode %q, want a sandbox's", c.ID, mode)
	}
	sb := inspect(t, raw, id)
	if sb.Config.Labels[docker.LabelSandbox] != "true" || sb.Config.Labels[run.LabelManaged] != "" || !sb.State.Running {
		t.Fatalf("sandbox %s: labels %v, running %v", id, sb.Config.Labels, sb.State.Running)
	}
	hc := sb.HostConfig
	if hc.Privileged || !slices.Equal(hc.CapDrop, []string{"ALL"}) || !hc.ReadonlyRootfs || hc.Memory == 0 || hc.PidsLimit == nil ||
		len(hc.Binds) != 0 || len(sb.Mounts) != 0 {
		t.Errorf("sandbox %s is not locked down: %+v", id, hc)
	}
	return sb
}

// networkFiles are the binds a run joining sb gets: its network files, read-only.
func networkFiles(sb container.InspectResponse) []string {
	return []string{sb.HostsPath + ":/etc/hosts:ro", sb.ResolvConfPath + ":/etc/resolv.conf:ro", sb.HostnamePath + ":/etc/hostname:ro"}
}

// output waits for the container's exit and returns its exit code and output.
func output(t *testing.T, b *docker.Backend, id string) (int, string) {
	t.Helper()
	ctx := ctxFor(t, time.Minute)
	logs, err := b.Logs(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	out := readAll(t, logs)
	code, err := b.Wait(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return code, out
}

func TestSandboxes(t *testing.T) {
	t.Parallel()
	b := newBackend(t)
	raw := dockerenv.Client(t)
	ctx := ctxFor(t, 2*time.Minute)
	runner := "dockertest-" + domain.RandomHex(4)
	spec := func(hostGateway bool, script string) run.Spec {
		return run.Spec{Image: imagePytest, Entrypoint: []string{"python3", "-c", script}, HostGateway: hostGateway,
			Labels: map[string]string{run.LabelRunner: runner}}
	}
	const listen = `import socket, time
s = socket.socket(); s.bind(("127.0.0.1", 7777)); s.listen(); print("listening", flush=True); time.sleep(60)`

	// Two runs side by side have a sandbox each.
	first := start(t, b, spec(true, listen))
	second := start(t, b, spec(true, listen))
	sbFirst, sbSecond := sandboxOf(t, raw, inspect(t, raw, first)), sandboxOf(t, raw, inspect(t, raw, second))
	if sbFirst.ID == sbSecond.ID {
		t.Fatalf("two runs at once share sandbox %s", sbFirst.ID)
	}
	waitLine(t, b, first, "listening")

	// The next run takes the sandbox a removed run left, and finds nothing of that run in it:
	// no listener on its port, which it can bind itself. The names of the network files are the
	// sandbox's, with the host gateway, and no run can change them.
	if err := b.Remove(ctx, first); err != nil {
		t.Fatal(err)
	}
	third := start(t, b, spec(true, `import socket
c = socket.socket()
try:
    c.connect(("127.0.0.1", 7777)); print("connected to the last run's listener")
except ConnectionRefusedError:
    print("refused")
s = socket.socket(); s.bind(("127.0.0.1", 7777)); s.listen(); print("bound")
print("gateway" if "host.docker.internal" in open("/etc/hosts").read() else "no gateway")
for f in ("/etc/hosts", "/etc/resolv.conf", "/etc/hostname"):
    try:
        open(f, "a").write("6.6.6.6 evil\n"); print("wrote", f)
    except OSError as e:
        print("refused", f, e.strerror)
`))
	if got := sandboxOf(t, raw, inspect(t, raw, third)); got.ID != sbFirst.ID {
		t.Errorf("the next run has sandbox %s, want the removed run's %s", got.ID, sbFirst.ID)
	}
	code, out := output(t, b, third)
	for _, want := range []string{"refused\n", "bound\n", "gateway\n", "refused /etc/hosts Read-only file system",
		"refused /etc/resolv.conf Read-only file system", "refused /etc/hostname Read-only file system"} {
		if !strings.Contains(out, want) {
			t.Errorf("the run in a reused sandbox printed (exit %d):\n%s\nwant %q", code, out, want)
		}
	}

	// A run that needs no host gateway has a sandbox without it.
	plain := start(t, b, spec(false, `print("gateway" if "host.docker.internal" in open("/etc/hosts").read() else "no gateway")`))
	if got := sandboxOf(t, raw, inspect(t, raw, plain)); got.ID == sbFirst.ID || got.ID == sbSecond.ID {
		t.Errorf("a run without host gateway joined sandbox %s of runs with it", got.ID)
	}
	if _, out := output(t, b, plain); out != "no gateway\n" {
		t.Errorf("a run without host gateway printed %q", out)
	}
}

func waitLine(t *testing.T, b *docker.Backend, id, line string) {
	t.Helper()
	logs, err := b.Logs(ctxFor(t, 30*time.Second), id)
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	for sc := bufio.NewScanner(logs); sc.Scan(); {
		if sc.Text() == line {
			return
		}
	}
	t.Fatalf("container %s never printed %q", id, line)
}

// runToEnd waits for run container id to exit, removes it, and returns the sandbox it was in.
func runToEnd(t *testing.T, b *docker.Backend, raw *client.Client, id string) container.InspectResponse {
	t.Helper()
	sb := sandboxOf(t, raw, inspect(t, raw, id))
	ctx := ctxFor(t, time.Minute)
	if _, err := b.Wait(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := b.Remove(ctx, id); err != nil {
		t.Fatal(err)
	}
	return sb
}

// Sandboxes removed or stopped behind Verdict's back (an engine restart stops them all) are
// replaced.
func TestSandboxGoneBehindVerdictsBack(t *testing.T) {
	t.Parallel()
	b := newBackend(t)
	raw := dockerenv.Client(t)
	ctx := ctxFor(t, 2*time.Minute)
	// Two runs at once leave two idle sandboxes: one is removed, the other stopped.
	first, second := start(t, b, run.Spec{Image: imagePass, Args: []string{"api"}}), start(t, b, run.Spec{Image: imagePass, Args: []string{"api"}})
	removed, stopped := runToEnd(t, b, raw, first), runToEnd(t, b, raw, second)
	if _, err := raw.ContainerRemove(ctx, removed.ID, client.ContainerRemoveOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.ContainerKill(ctx, stopped.ID, client.ContainerKillOptions{}); err != nil {
		t.Fatal(err)
	}
	// Two runs at once meet both.
	third, fourth := start(t, b, run.Spec{Image: imagePass, Args: []string{"api"}}), start(t, b, run.Spec{Image: imagePass, Args: []string{"api"}})
	for _, id := range []string{third, fourth} {
		if got := runToEnd(t, b, raw, id); got.ID == removed.ID || got.ID == stopped.ID {
			t.Fatal("the run joined a sandbox that is gone")
		}
	}
}

// A runner's first sandbox removes those its earlier life left (a crash leaves them), a lost
// runner's are swept by another Backend, and Close removes a Backend's own.
func TestSandboxLeftoversAndClose(t *testing.T) {
	t.Parallel()
	raw := dockerenv.Client(t)
	ctx := ctxFor(t, 2*time.Minute)
	runner := "dockertest-" + domain.RandomHex(4)
	mine := map[string]string{docker.LabelSandbox: "true", run.LabelRunner: runner}
	sandboxes := func() []string {
		f := make(client.Filters)
		for k, v := range mine {
			f.Add("label", k+"="+v)
		}
		res, err := raw.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, c := range res.Items {
			ids = append(ids, c.ID)
		}
		return ids
	}
	runOnce := func(b *docker.Backend) string {
		id := start(t, b, run.Spec{Image: imagePass, Args: []string{"api"}, Labels: map[string]string{run.LabelRunner: runner}})
		sb := runToEnd(t, b, raw, id)
		return sb.ID
	}

	earlier, err := docker.New(testenv.DockerHost(t), docker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	left := runOnce(earlier) // earlier is never closed: it crashed
	if got := sandboxes(); !slices.Equal(got, []string{left}) {
		t.Fatalf("sandboxes of the runner: %v, want the idle %s", got, left)
	}

	b := newBackend(t)
	now := runOnce(b)
	if _, err := raw.ContainerInspect(ctx, left, client.ContainerInspectOptions{}); !cerrdefs.IsNotFound(err) {
		t.Errorf("the earlier life's sandbox is still there: %v", err)
	}
	if got := sandboxes(); !slices.Equal(got, []string{now}) {
		t.Errorf("sandboxes of the runner: %v, want %s alone", got, now)
	}

	// SweepRunner spares the sandboxes a Backend holds; another's (a server's reaper, the runner
	// lost) removes them, and the runner, still alive, replaces the one it finds gone.
	if err := b.SweepRunner(ctx, runner); err != nil || !slices.Equal(sandboxes(), []string{now}) {
		t.Errorf("the runner's own sweep: %v, sandboxes %v, want %s kept", err, sandboxes(), now)
	}
	if err := newBackend(t).SweepRunner(ctx, runner); err != nil || len(sandboxes()) != 0 {
		t.Errorf("the reaper's sweep: %v, sandboxes %v, want none", err, sandboxes())
	}
	if again := runOnce(b); again == now {
		t.Errorf("the run joined the swept sandbox %s", now)
	}

	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if got := sandboxes(); len(got) != 0 {
		t.Errorf("sandboxes left after Close: %v", got)
	}
}

// With NetworkPerRun, a run container is on the run network itself, with the host gateway of its
// own, and has no host mount at all.
func TestNetworkPerRun(t *testing.T) {
	t.Parallel()
	b, err := docker.New(testenv.DockerHost(t), docker.Options{NetworkPerRun: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	raw := dockerenv.Client(t)
	c := inspect(t, raw, start(t, b, run.Spec{Image: imageSlow, Args: []string{"sleep"}, HostGateway: true}))
	hc := c.HostConfig
	if _, ok := c.NetworkSettings.Networks[docker.DefaultNetwork]; string(hc.NetworkMode) != docker.DefaultNetwork || !ok || len(c.NetworkSettings.Networks) != 1 {
		t.Errorf("network mode %q: want the run network alone", hc.NetworkMode)
	}
	if !slices.Equal(hc.ExtraHosts, []string{"host.docker.internal:host-gateway"}) {
		t.Errorf("ExtraHosts %v", hc.ExtraHosts)
	}
	if len(hc.Binds) != 0 || len(hc.Mounts) != 0 || len(c.Mounts) != 0 {
		t.Errorf("host mounts: binds %v mounts %v %v", hc.Binds, hc.Mounts, c.Mounts)
	}
}
