package docker_test

import (
	"bufio"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"maps"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"verdict/internal/domain"
	"verdict/internal/run"
	"verdict/internal/run/docker"
	"verdict/internal/testenv"
	"verdict/internal/testenv/dockerenv"
)

// The sample suite images of examples/suites; scripts/test.sh builds them.
const (
	imagePass   = "verdict-examples/pass:latest"
	imageFail   = "verdict-examples/fail:latest"
	imageSlow   = "verdict-examples/slow:latest"
	imagePytest = "verdict-examples/pytest:latest"
	labelTest   = "dev.verdict.test"
	testPrefix  = "verdict-dockertest-"
)

func newBackend(t *testing.T) *docker.Backend {
	t.Helper()
	b, err := docker.New(testenv.DockerHost(t), docker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	return b
}

func needImage(t *testing.T, b *docker.Backend, image string) {
	t.Helper()
	if err := b.EnsureImage(context.Background(), image); err != nil {
		t.Fatalf("%v: build the sample images with examples/suites/build.sh (scripts/test.sh does)", err)
	}
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// start runs spec with a unique name and test label, removing the container when the test ends.
// Test containers carry no run.LabelManaged: the run reconciler of tests running in parallel
// would take them for orphans.
func start(t *testing.T, b *docker.Backend, spec run.Spec) string {
	t.Helper()
	needImage(t, b, spec.Image)
	if spec.Name == "" {
		spec.Name = testPrefix + domain.RandomHex(6)
	}
	if spec.Labels == nil {
		spec.Labels = map[string]string{}
	}
	spec.Labels[labelTest] = "true"
	spec.Labels[run.LabelTask] = spec.Name
	id, err := b.Start(ctxFor(t, 30*time.Second), spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Remove(context.Background(), id); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	return id
}

func readAll(t *testing.T, rc io.ReadCloser) string {
	t.Helper()
	defer rc.Close()
	out, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// untar reads a tar stream into name → content.
func TestPingNegotiatesAPIVersion(t *testing.T) {
	b := newBackend(t)
	v := b.APIVersion()
	ping, err := dockerenv.Client(t).Ping(context.Background(), client.PingOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The client speaks the engine's version when the engine is older than the client.
	want := ping.APIVersion
	if strings.Compare(want, client.MaxAPIVersion) > 0 {
		want = client.MaxAPIVersion
	}
	if v != want {
		t.Errorf("negotiated API version %s, engine offers %s", v, ping.APIVersion)
	}
	t.Logf("engine API %s, negotiated %s", ping.APIVersion, v)
}

func TestRunPassingSuite(t *testing.T) {
	t.Parallel()
	b := newBackend(t)
	name := testPrefix + domain.RandomHex(6)
	id := start(t, b, run.Spec{
		Name:  name,
		Image: imagePass,
		Args:  []string{"all"},
		Env:   map[string]string{"BASE_URL": "http://target.test:8080", "TASK_ID": "t-pass", "CI": "true", "FRAMEWORK_AGNOSTIC": "true"},
	})
	ctx := ctxFor(t, time.Minute)
	logs, err := b.Logs(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	out := readAll(t, logs) // ends when the container exits
	code, err := b.Wait(ctx, id)
	if err != nil || code != 0 {
		t.Fatalf("Wait = %d, %v; logs:\n%s", code, err, out)
	}
	for _, want := range []string{"BASE_URL=http://target.test:8080 TASK_ID=t-pass CI=true FRAMEWORK_AGNOSTIC=true", "4 tests, 0 failed"} {
		if !strings.Contains(out, want) {
			t.Errorf("logs lack %q:\n%s", want, out)
		}
	}

	rc, err := b.CopyOut(ctx, id, "/app/junit")
	if err != nil {
		t.Fatal(err)
	}
	files := testenv.Untar(t, rc)
	report, ok := files["junit/results.xml"]
	if !ok {
		t.Fatalf("copied junit folder holds %v", slices.Sorted(maps.Keys(files)))
	}
	var suites struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
	}
	if err := xml.Unmarshal([]byte(report), &suites); err != nil || suites.Tests != 4 || suites.Failures != 0 {
		t.Errorf("junit report: %+v, %v", suites, err)
	}

	// After Remove the container is gone for good.
	if err := b.Remove(ctx, id); err != nil {
		t.Fatal(err)
	}
	if got, err := b.List(ctx, map[string]string{run.LabelTask: name}); err != nil || len(got) != 0 {
		t.Errorf("after Remove, List = %v, %v", got, err)
	}
	if _, err := b.CopyOut(ctx, id, "/app/junit"); err == nil || errors.Is(err, run.ErrPathNotFound) {
		t.Errorf("CopyOut of a removed container: %v, want a plain error", err)
	}
}

func TestRunFailingSuite(t *testing.T) {
	t.Parallel()
	b := newBackend(t)
	id := start(t, b, run.Spec{Image: imageFail, Args: []string{"all"}})
	ctx := ctxFor(t, time.Minute)
	logs, err := b.Logs(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	out := readAll(t, logs)
	code, err := b.Wait(ctx, id)
	if err != nil || code != 1 {
		t.Fatalf("Wait = %d, %v, want exit code 1; logs:\n%s", code, err, out)
	}
	// stderr is merged into the same stream as whole lines. Their order relative to stdout lines
	// written in the same instant is the engine's (it copies the two pipes separately).
	for _, line := range []string{"4 tests, 2 failed", "2 test(s) failed"} {
		if !slices.Contains(strings.Split(out, "\n"), line) {
			t.Errorf("logs lack the line %q:\n%s", line, out)
		}
	}

	rc, err := b.CopyOut(ctx, id, "/app/allure-results")
	if err != nil {
		t.Fatal(err)
	}
	failures := 0
	for name, content := range testenv.Untar(t, rc) {
		if !strings.HasSuffix(name, "-result.json") {
			continue
		}
		var r struct {
			Status        string `json:"status"`
			StatusDetails struct {
				Message string `json:"message"`
			} `json:"statusDetails"`
		}
		if err := json.Unmarshal([]byte(content), &r); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if r.Status == "failed" && r.StatusDetails.Message != "" {
			failures++
		}
	}
	if failures != 2 {
		t.Errorf("%d failed allure results with a message, want 2", failures)
	}
}

func TestLogsFollowLive(t *testing.T) {
	t.Parallel()
	b := newBackend(t)
	id := start(t, b, run.Spec{
		Image: imageSlow,
		Args:  []string{"api"},
		Env:   map[string]string{"LINES": "5", "INTERVAL_MS": "300", "SECRET_TOKEN": "hunter2", "BASE_URL": "http://host.docker.internal:3000"},
	})
	ctx := ctxFor(t, time.Minute)
	logs, err := b.Logs(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	sc := bufio.NewScanner(logs)
	var lines []string
	sawLiveLine := false
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if sc.Text() == "line 1 of 5" {
			// The first numbered line arrives while the suite is still printing the others.
			inspect, err := dockerenv.Client(t).ContainerInspect(ctx, id, client.ContainerInspectOptions{})
			sawLiveLine = err == nil && inspect.Container.State.Running
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if !sawLiveLine {
		t.Error("the first line was not delivered while the container was running")
	}
	var numbered []string
	for _, l := range lines {
		if strings.HasPrefix(l, "line ") {
			numbered = append(numbered, l)
		}
	}
	want := []string{"line 1 of 5", "line 2 of 5", "line 3 of 5", "line 4 of 5", "line 5 of 5"}
	if !slices.Equal(numbered, want) {
		t.Errorf("numbered lines %q, want %q", numbered, want)
	}
	all := strings.Join(lines, "\n")
	for _, w := range []string{"using SECRET_TOKEN=hunter2", "BASE_URL=http://host.docker.internal:3000"} {
		if !strings.Contains(all, w) {
			t.Errorf("logs lack %q:\n%s", w, all)
		}
	}
	if code, err := b.Wait(ctx, id); err != nil || code != 0 {
		t.Errorf("Wait = %d, %v", code, err)
	}
}

func TestStopLongRunningContainer(t *testing.T) {
	t.Parallel()
	b := newBackend(t)
	name := testPrefix + domain.RandomHex(6)
	id := start(t, b, run.Spec{Name: name, Image: imageSlow, Args: []string{"sleep"}})
	ctx := ctxFor(t, time.Minute)
	logs, err := b.Logs(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	sc := bufio.NewScanner(logs)
	for sc.Scan() && sc.Text() != "sleeping until stopped" {
	}

	began := time.Now()
	if err := b.Stop(ctx, id, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	// The suite handles SIGTERM, so it ends well before the grace period would force a kill.
	if d := time.Since(began); d > 8*time.Second {
		t.Errorf("Stop took %v", d)
	}
	code, err := b.Wait(ctx, id)
	if err != nil || code != 143 {
		t.Errorf("Wait after Stop = %d, %v; want 143 (SIGTERM)", code, err)
	}
	if err := b.Stop(ctx, id, time.Second); err != nil {
		t.Errorf("stopping a stopped container: %v", err)
	}
	got, err := b.List(ctx, map[string]string{run.LabelTask: name, labelTest: "true"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].ID != id || got[0].State != "exited" {
		t.Errorf("after Stop, List = %+v, want the container, exited", got)
	}
}

func TestCopyOutMissingPath(t *testing.T) {
	t.Parallel()
	b := newBackend(t)
	id := start(t, b, run.Spec{Image: imagePass, Args: []string{"api"}})
	ctx := ctxFor(t, time.Minute)
	if _, err := b.Wait(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := b.CopyOut(ctx, id, "/app/no-such-report"); !errors.Is(err, run.ErrPathNotFound) {
		t.Errorf("CopyOut of a missing folder: %v, want ErrPathNotFound", err)
	}
}

func TestListByLabel(t *testing.T) {
	t.Parallel()
	b := newBackend(t)
	org := "org-" + domain.RandomHex(4)
	a := start(t, b, run.Spec{Image: imageSlow, Args: []string{"sleep"}, Labels: map[string]string{run.LabelOrg: org}})
	c := start(t, b, run.Spec{Image: imagePass, Labels: map[string]string{run.LabelOrg: org}})
	ctx := ctxFor(t, time.Minute)
	if _, err := b.Wait(ctx, c); err != nil {
		t.Fatal(err)
	}

	got, err := b.List(ctx, map[string]string{run.LabelOrg: org, labelTest: "true"})
	if err != nil {
		t.Fatal(err)
	}
	states := map[string]string{}
	for _, x := range got {
		states[x.ID] = x.State
		if x.Labels[run.LabelOrg] != org {
			t.Errorf("listed container %s has labels %v", x.ID, x.Labels)
		}
	}
	if len(got) != 2 || states[a] != "running" || states[c] != "exited" {
		t.Errorf("List by organization = %v, want %s running and %s exited", states, a, c)
	}

	one, err := b.List(ctx, map[string]string{run.LabelOrg: org, run.LabelTask: got[0].Labels[run.LabelTask]})
	if err != nil || len(one) != 1 || one[0].ID != got[0].ID {
		t.Errorf("List by organization and task = %v, %v", one, err)
	}
	none, err := b.List(ctx, map[string]string{run.LabelOrg: "org-nobody"})
	if err != nil || len(none) != 0 {
		t.Errorf("List of an unknown organization = %v, %v", none, err)
	}
}

func TestMissingImage(t *testing.T) {
	t.Parallel()
	b := newBackend(t)
	ctx := ctxFor(t, time.Minute)
	if err := b.EnsureImage(ctx, imagePass); err != nil {
		t.Fatalf("EnsureImage of a local image: %v", err)
	}
	for _, image := range []string{
		"127.0.0.1:1/verdict/missing:latest",    // a registry that refuses connections
		"verdict-examples/no-such-suite:latest", // Docker Hub: unreachable here, denied elsewhere
		"Not A Valid Reference",                 // can never be pulled
	} {
		err := b.EnsureImage(ctx, image)
		if !errors.Is(err, run.ErrImageNotFound) {
			t.Errorf("EnsureImage(%q) = %v, want ErrImageNotFound", image, err)
		} else if !strings.Contains(err.Error(), image) {
			t.Errorf("error %q does not name the image", err)
		}
	}
	_, err := b.Start(ctx, run.Spec{Name: testPrefix + domain.RandomHex(6), Image: "127.0.0.1:1/verdict/missing:latest"})
	if !errors.Is(err, run.ErrImageNotFound) {
		t.Errorf("Start with a missing image = %v, want ErrImageNotFound", err)
	}
}

func TestLockedDownByDefault(t *testing.T) {
	t.Parallel()
	b := newBackend(t)
	raw := dockerenv.Client(t)
	ctx := ctxFor(t, time.Minute)

	limited := start(t, b, run.Spec{
		Image:       imageSlow,
		Args:        []string{"sleep"},
		Resources:   run.Resources{MemoryBytes: 256 << 20, NanoCPUs: 5e8, PidsLimit: 64},
		HostGateway: true,
		Labels:      map[string]string{run.LabelOrg: "org-limits"},
	})
	defaults := start(t, b, run.Spec{Image: imageSlow, Args: []string{"sleep"}})

	for _, tc := range []struct {
		id         string
		mem, cpu   int64
		pids       int64
		hostGate   bool
		extraLabel string
	}{
		{limited, 256 << 20, 5e8, 64, true, "org-limits"},
		{defaults, docker.DefaultMemoryBytes, docker.DefaultNanoCPUs, docker.DefaultPidsLimit, false, ""},
	} {
		res, err := raw.ContainerInspect(ctx, tc.id, client.ContainerInspectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c := res.Container
		hc := c.HostConfig
		if hc.Privileged {
			t.Error("container is privileged")
		}
		if !slices.Equal(hc.CapDrop, []string{"ALL"}) || len(hc.CapAdd) != 0 {
			t.Errorf("CapDrop %v CapAdd %v, want ALL and none", hc.CapDrop, hc.CapAdd)
		}
		if !slices.ContainsFunc(hc.SecurityOpt, func(s string) bool { return strings.HasPrefix(s, "no-new-privileges") }) {
			t.Errorf("SecurityOpt %v lacks no-new-privileges", hc.SecurityOpt)
		}
		if hc.Memory != tc.mem || hc.NanoCPUs != tc.cpu || hc.PidsLimit == nil || *hc.PidsLimit != tc.pids {
			t.Errorf("limits: memory %d cpus %d pids %v, want %d %d %d", hc.Memory, hc.NanoCPUs, hc.PidsLimit, tc.mem, tc.cpu, tc.pids)
		}
		// The run joins a sandbox on the run network: no host mount but the sandbox's network
		// files, read-only.
		sb := sandboxOf(t, raw, c)
		if want := networkFiles(sb); !slices.Equal(hc.Binds, want) || len(hc.Mounts) != 0 || slices.ContainsFunc(c.Mounts, func(m container.MountPoint) bool { return m.RW }) {
			t.Errorf("host mounts: binds %v mounts %v %v, want the sandbox's network files read-only: %v", hc.Binds, hc.Mounts, c.Mounts, want)
		}
		if hc.ReadonlyRootfs {
			t.Error("root filesystem is read-only; suites write to /app")
		}
		if hc.AutoRemove {
			t.Error("AutoRemove is on; reports could not be copied out after the exit")
		}
		// The engine's own log of the output is bounded: two files of 100 MB.
		if lc := hc.LogConfig; lc.Type != "json-file" || lc.Config["max-size"] != "100m" || lc.Config["max-file"] != "2" {
			t.Errorf("log config %+v, want json-file with max-size 100m and max-file 2", lc)
		}
		if _, ok := sb.NetworkSettings.Networks[docker.DefaultNetwork]; string(sb.HostConfig.NetworkMode) != docker.DefaultNetwork || !ok || len(sb.NetworkSettings.Networks) != 1 {
			t.Errorf("sandbox network mode %q, networks %v: want the run network alone", sb.HostConfig.NetworkMode, slices.Collect(maps.Keys(sb.NetworkSettings.Networks)))
		}
		hasGateway := slices.Contains(sb.HostConfig.ExtraHosts, "host.docker.internal:host-gateway")
		if hasGateway != tc.hostGate || len(hc.ExtraHosts) != 0 {
			t.Errorf("ExtraHosts: run %v, sandbox %v, host gateway wanted: %v", hc.ExtraHosts, sb.HostConfig.ExtraHosts, tc.hostGate)
		}
		if c.Config.Labels[labelTest] != "true" || c.Config.Labels[run.LabelOrg] != tc.extraLabel {
			t.Errorf("labels %v", c.Config.Labels)
		}
		if !c.State.Running {
			t.Errorf("container is not running under these limits: %+v", c.State)
		}
	}
}

func TestListDir(t *testing.T) {
	t.Parallel()
	b := newBackend(t)
	ctx := ctxFor(t, time.Minute)
	needImage(t, b, imagePass)
	dirs, err := b.ListDir(ctx, imagePass, "/app/tests", false)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(dirs, []string{"api", "ui"}) {
		t.Errorf("ListDir = %q, want [api ui]", dirs)
	}
	if _, err := b.ListDir(ctx, imagePass, "/app/nothing-here", false); !errors.Is(err, run.ErrPathNotFound) {
		t.Errorf("ListDir of a missing path: %v, want ErrPathNotFound", err)
	}
	if _, err := b.ListDir(ctx, "127.0.0.1:1/verdict/missing:latest", "/app/tests", true); !errors.Is(err, run.ErrImageNotFound) {
		t.Errorf("ListDir of a missing image: %v, want ErrImageNotFound", err)
	}
	// Without pull, an absent image is not found at once: the engine asks no registry (here a
	// listener that fails the test if anything connects).
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	contacted := make(chan struct{}, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
			contacted <- struct{}{}
		}
	}()
	if _, err := b.ListDir(ctx, ln.Addr().String()+"/verdict/missing:latest", "/app/tests", false); !errors.Is(err, run.ErrImageNotFound) {
		t.Errorf("ListDir without pull of a missing image: %v, want ErrImageNotFound", err)
	}
	select {
	case <-contacted:
		t.Error("ListDir without pull contacted the registry")
	case <-time.After(300 * time.Millisecond):
	}
}

// The pytest image runs a real framework: its verdict and report come from pytest itself.
func TestRealPytestSuite(t *testing.T) {
	t.Parallel()
	b := newBackend(t)
	ctx := ctxFor(t, 2*time.Minute)
	if dirs, err := b.ListDir(ctx, imagePytest, "/app/tests", false); err != nil || !slices.Equal(dirs, []string{"api", "ui"}) {
		t.Errorf("ListDir = %q, %v", dirs, err)
	}
	for _, tc := range []struct {
		folder          string
		env             map[string]string
		code            int
		tests, failures int
	}{
		{"api", map[string]string{"CI": "true", "FRAMEWORK_AGNOSTIC": "true", "BASE_URL": "http://host.docker.internal:8080"}, 0, 3, 0},
		{"all", nil, 1, 7, 3}, // the contract checks fail without the contract's variables
	} {
		id := start(t, b, run.Spec{Image: imagePytest, Args: []string{tc.folder}, Env: tc.env})
		code, err := b.Wait(ctx, id)
		if err != nil || code != tc.code {
			out := "(none)"
			if logs, lerr := b.Logs(ctx, id); lerr == nil {
				out = readAll(t, logs)
			}
			t.Fatalf("folder %s: Wait = %d, %v, want %d; logs:\n%s", tc.folder, code, err, tc.code, out)
		}
		rc, err := b.CopyOut(ctx, id, "/app/junit")
		if err != nil {
			t.Fatal(err)
		}
		var suites struct {
			Suites []struct {
				Tests    int `xml:"tests,attr"`
				Failures int `xml:"failures,attr"`
			} `xml:"testsuite"`
		}
		if err := xml.Unmarshal([]byte(testenv.Untar(t, rc)["junit/results.xml"]), &suites); err != nil || len(suites.Suites) != 1 {
			t.Fatalf("folder %s: junit %+v, %v", tc.folder, suites, err)
		}
		if s := suites.Suites[0]; s.Tests != tc.tests || s.Failures != tc.failures {
			t.Errorf("folder %s: %d tests %d failures, want %d and %d", tc.folder, s.Tests, s.Failures, tc.tests, tc.failures)
		}
	}
}
