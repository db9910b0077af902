package run

import (
	"strings"
	"testing"

	"verdict/internal/testenv"
)

// The runner reaches the control plane through Peer alone: package run (its code, not its
// tests) imports neither the store, nor billing, nor the secret box, nor the report store, so
// that a runner can live on a host that holds none of them.
func TestRunnerImportsNoControlPlane(t *testing.T) {
	forbidden := []string{"verdict/internal/store", "verdict/internal/billing", "verdict/internal/crypto/secretbox",
		"verdict/internal/report", "verdict/internal/control", "database/sql"}
	for name, imports := range testenv.SourceImports(t, ".") {
		for _, path := range imports {
			for _, bad := range forbidden {
				if path == bad || strings.HasPrefix(path, bad+"/") {
					t.Errorf("%s imports %s: the runner must reach the control plane through Peer", name, path)
				}
			}
		}
	}
}
