package docker_test

import (
	"testing"
	"time"

	"verdict/internal/domain"
	"verdict/internal/run"
)

// A run container's exit reaches Wait from the engine's die event (with the exit code it
// carries), and Wait answers the same as without it; several Waits share the one events stream.
func TestWaitOnRunContainers(t *testing.T) {
	t.Parallel()
	b := newBackend(t)
	// A runner label of its own: no runner's sweep takes these for its orphans.
	labels := func() map[string]string {
		return map[string]string{run.LabelManaged: "true", run.LabelRunner: "dockertest-" + domain.RandomHex(4)}
	}
	for range 2 {
		pass := start(t, b, run.Spec{Image: imagePass, Args: []string{"all"}, Labels: labels()})
		fail := start(t, b, run.Spec{Image: imageFail, Args: []string{"all"}, Labels: labels()})
		ctx := ctxFor(t, time.Minute)
		for id, want := range map[string]int{pass: 0, fail: 1} {
			if code, err := b.Wait(ctx, id); err != nil || code != want {
				t.Fatalf("Wait = %d, %v, want %d", code, err, want)
			}
		}
	}
}
