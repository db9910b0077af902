// Package dockerenv gives tests a client of the test Docker engine. It is a package of its own
// because the engine's client is large: only the tests that look at the engine link it, which
// keeps every other test binary (and the short tier's build) small.
package dockerenv

import (
	"testing"

	"github.com/moby/moby/client"

	"verdict/internal/testenv"
)

// Client is a client of the test engine, for looking at what Verdict made there independently
// of Verdict's own backend. It is closed when the test ends.
func Client(t testing.TB) *client.Client {
	t.Helper()
	c, err := client.New(client.FromEnv, client.WithHost(testenv.DockerHost(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
