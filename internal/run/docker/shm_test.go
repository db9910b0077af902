package docker_test

import (
	"testing"
	"time"

	"github.com/moby/moby/client"

	"verdict/internal/run"
	"verdict/internal/run/docker"
	"verdict/internal/testenv"
	"verdict/internal/testenv/dockerenv"
)

// A run container's /dev/shm is DefaultShmBytes (not the engine's 64 MB, which slows Chromium
// down and crashes its tabs), at most the run's memory limit, and Options.ShmBytes sets it: a
// suite can really write 200 MB there.
func TestShmSize(t *testing.T) {
	t.Parallel()
	b := newBackend(t)
	raw := dockerenv.Client(t)
	ctx := ctxFor(t, 2*time.Minute)
	// Writes 200 MB into /dev/shm, as a browser's renderers may, and prints its size.
	script := `import os
with open("/dev/shm/fill", "wb") as f:
    for _ in range(200):
        f.write(b"x" * (1 << 20))
s = os.statvfs("/dev/shm")
print("shm", s.f_blocks * s.f_frsize)`
	spec := func(mem int64) run.Spec {
		return run.Spec{Image: imagePytest, Entrypoint: []string{"python3", "-c", script}, Resources: run.Resources{MemoryBytes: mem}}
	}
	for _, tc := range []struct {
		name    string
		b       *docker.Backend
		mem     int64
		want    int64
		success bool
	}{
		{"default", b, 0, docker.DefaultShmBytes, true},
		{"capped by memory", b, 128 << 20, 128 << 20, false},
		{"set", newBackendWith(t, docker.Options{ShmBytes: 300 << 20}), 0, 300 << 20, true},
	} {
		id := start(t, tc.b, spec(tc.mem))
		res, err := raw.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Container.HostConfig.ShmSize; got != tc.want {
			t.Errorf("%s: ShmSize %d, want %d", tc.name, got, tc.want)
		}
		code, err := tc.b.Wait(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		logs, err := tc.b.Logs(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		out := readAll(t, logs)
		if (code == 0) != tc.success {
			t.Errorf("%s: writing 200 MB into /dev/shm exited %d, want success %v:\n%s", tc.name, code, tc.success, out)
		}
	}
}

func newBackendWith(t *testing.T, opts docker.Options) *docker.Backend {
	t.Helper()
	b, err := docker.New(testenv.DockerHost(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}
