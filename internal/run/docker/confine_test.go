package docker_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"verdict/internal/domain"
	"verdict/internal/run"
	"verdict/internal/run/docker"
	"verdict/internal/testenv"
	"verdict/internal/testenv/dockerenv"
)

// dropNetwork removes a test's run network and the firewall rules the backend added for it.
func dropNetwork(t *testing.T, name string) {
	_ = exec.Command("docker", "network", "rm", name).Run()
	for _, chain := range []string{"DOCKER-USER", "INPUT"} {
		out, _ := exec.Command("iptables", "-S", chain).Output()
		for _, line := range strings.Split(string(out), "\n") {
			if strings.HasPrefix(line, "-A ") && strings.Contains(line, " -i "+name+" ") {
				if out, err := exec.Command("iptables", strings.Fields("-D"+strings.TrimPrefix(line, "-A"))...).CombinedOutput(); err != nil {
					t.Errorf("removing %q: %v\n%s", line, err, out)
				}
			}
		}
	}
}

func TestRunNetwork(t *testing.T) {
	t.Parallel()
	host := testenv.DockerHost(t) // first: the cleanup below reaches the engine
	name := "vdt" + domain.RandomHex(4)
	t.Cleanup(func() { dropNetwork(t, name) })
	b, err := docker.New(host, docker.Options{Network: name, BlockedNets: []netip.Prefix{netip.MustParsePrefix("169.254.0.0/16"), netip.MustParsePrefix("fd00::/8")}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	raw := dockerenv.Client(t)
	ctx := ctxFor(t, 2*time.Minute)

	began := time.Now()
	if err := b.EnsureNetwork(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("creating the run network and its firewall rules took %v", time.Since(began).Round(time.Millisecond))
	began = time.Now()
	if err := b.EnsureNetwork(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("a second EnsureNetwork took %v", time.Since(began))
	n, err := raw.NetworkInspect(ctx, name, client.NetworkInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if o := n.Network.Options; n.Network.Driver != "bridge" || o["com.docker.network.bridge.enable_icc"] != "false" || o["com.docker.network.bridge.name"] != name || n.Network.EnableIPv6 {
		t.Fatalf("run network: driver %s, options %v, IPv6 %v", n.Network.Driver, o, n.Network.EnableIPv6)
	}
	if os.Geteuid() == 0 {
		rules, _ := exec.Command("iptables", "-S").Output()
		for _, chain := range []string{"DOCKER-USER", "INPUT"} {
			if want := "-A " + chain + " -d 169.254.0.0/16 -i " + name + " -m comment --comment verdict -j DROP"; strings.Count(string(rules), want) != 1 {
				t.Errorf("want one rule %q:\n%s", want, rules)
			}
		}
	}

	// A network removed behind Verdict's back (with the sandbox on it) is made again by the
	// next start.
	id := start(t, b, run.Spec{Image: imagePass, Args: []string{"api"}})
	sb := runToEnd(t, b, raw, id)
	if out, err := exec.Command("docker", "rm", "-f", sb.ID).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if out, err := exec.Command("docker", "network", "rm", name).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	id = start(t, b, run.Spec{Image: imagePass, Args: []string{"api"}})
	sb = sandboxOf(t, raw, inspect(t, raw, id))
	if _, ok := sb.NetworkSettings.Networks[name]; !ok {
		t.Fatalf("the run's sandbox is on %v", sb.NetworkSettings.Networks)
	}
}

func TestRunNetworkThatLetsRunsMeetIsRefused(t *testing.T) {
	t.Parallel()
	host := testenv.DockerHost(t) // first: the docker CLI below reaches the engine
	name := "vdt" + domain.RandomHex(4)
	t.Cleanup(func() { dropNetwork(t, name) })
	if out, err := exec.Command("docker", "network", "create", name).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	b, err := docker.New(host, docker.Options{Network: name})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	needImage(t, b, imagePass)
	_, err = b.Start(ctxFor(t, time.Minute), run.Spec{Name: testPrefix + domain.RandomHex(6), Image: imagePass, Labels: map[string]string{labelTest: "true"}})
	if err == nil || !strings.Contains(err.Error(), "does not keep runs apart") {
		t.Fatalf("Start on a network with container-to-container traffic: %v", err)
	}
}

// A container writing past the disk limit is killed, and Wait says why.
func TestDiskLimit(t *testing.T) {
	t.Parallel()
	b, err := docker.New(testenv.DockerHost(t), docker.Options{DiskLimitBytes: 10 << 20, DiskPoll: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := ctxFor(t, time.Minute)
	write := func(mb string) string {
		return start(t, b, run.Spec{Image: imagePytest, Entrypoint: []string{"python3", "-c",
			"import time\nopen('/app/fill', 'wb').write(b'x' * (" + mb + " << 20))\ntime.sleep(3)"}})
	}
	small, big := write("2"), write("50")
	if code, err := b.Wait(ctx, small); err != nil || code != 0 {
		t.Errorf("a container within the limit: Wait = %d, %v", code, err)
	}
	began := time.Now()
	_, err = b.Wait(ctx, big)
	if !errors.Is(err, run.ErrDiskLimit) {
		t.Fatalf("a container past the limit: Wait = %v", err)
	}
	res, ierr := dockerenv.Client(t).ContainerInspect(ctx, big, client.ContainerInspectOptions{})
	if ierr != nil || res.Container.State.Running || res.Container.State.ExitCode != 137 {
		t.Fatalf("after Wait: %+v, %v", res.Container.State, ierr)
	}
	t.Logf("%v (%v)", err, time.Since(began).Round(time.Millisecond))
}

// Start under a cancel at any moment leaves either a container it returned or none.
func TestStartCancelledLeavesNothing(t *testing.T) {
	t.Parallel()
	b := newBackend(t)
	needImage(t, b, imageSlow)
	mark := "cancel-" + domain.RandomHex(4)
	rng := rand.New(rand.NewPCG(3, 4))
	started := 0
	for range 20 {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(time.Duration(rng.IntN(400))*time.Millisecond, cancel)
		id, err := b.Start(ctx, run.Spec{Name: testPrefix + domain.RandomHex(6), Image: imageSlow, Args: []string{"sleep"},
			Labels: map[string]string{labelTest: "true", run.LabelTask: mark}})
		cancel()
		if err == nil {
			started++
			if err := b.Remove(context.Background(), id); err != nil {
				t.Fatal(err)
			}
		}
	}
	left, err := b.List(context.Background(), map[string]string{labelTest: "true", run.LabelTask: mark})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range left {
		t.Errorf("container %s left behind, %s", c.ID[:12], c.State)
		_ = b.Remove(context.Background(), c.ID)
	}
	t.Logf("%d of 20 started before their cancel", started)
}

// The first runs of a runner start side by side while the engine's disk quota is still unknown:
// every one of them starts, whether the engine bounds the writable layer or not.
func TestFirstStartsSideBySide(t *testing.T) {
	b, err := docker.New(testenv.DockerHost(t), docker.Options{DiskLimitBytes: 10 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	needImage(t, b, imagePass)
	ctx := ctxFor(t, 2*time.Minute)
	const n = 10
	errs := make(chan error, n)
	ready := make(chan struct{})
	for range n {
		go func() {
			<-ready // all at once, as a runner's slots do when it starts with a queue waiting
			id, err := b.Start(ctx, run.Spec{Image: imagePass, Args: []string{"api"}})
			if err == nil {
				_, err = b.Wait(ctx, id)
				_ = b.Remove(context.Background(), id)
			}
			errs <- err
		}()
	}
	close(ready)
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
