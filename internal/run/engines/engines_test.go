package engines

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"verdict/internal/config"
)

// Every registered backend opens from its settings (no engine is reached: Open does not ping)
// and answers to the name it is registered under; an unknown name is refused.
func TestOpenByName(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	for name := range backends {
		b, err := Open(config.Engine{Backend: name, DockerHost: "tcp://127.0.0.1:1", Kubeconfig: kubeconfig,
			K8sHelperImage: "verdict:test"}, log)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if b.Name() != name {
			t.Fatalf("the backend registered as %q calls itself %q", name, b.Name())
		}
		Close(b)
	}
	if b, err := Open(config.Engine{DockerHost: "tcp://127.0.0.1:1"}, log); err != nil || b.Name() != "docker" {
		t.Fatalf("no name: %v %v", b, err)
	}
	if _, err := Open(config.Engine{Backend: "podman"}, log); err == nil || !strings.Contains(err.Error(), `unknown backend "podman"`) {
		t.Fatalf("unknown backend: %v", err)
	}
}
