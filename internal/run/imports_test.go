package run

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The runner reaches the control plane through Peer alone: package run (its code, not its
// tests) imports neither the store, nor billing, nor the secret box, nor the report store, so
// that a runner can live on a host that holds none of them.
func TestRunnerImportsNoControlPlane(t *testing.T) {
	forbidden := []string{"verdict/internal/store", "verdict/internal/billing", "verdict/internal/crypto/secretbox",
		"verdict/internal/report", "verdict/internal/control", "database/sql"}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		seen++
		for _, imp := range f.Imports {
			path, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				t.Fatal(err)
			}
			for _, bad := range forbidden {
				if path == bad || strings.HasPrefix(path, bad+"/") {
					t.Errorf("%s imports %s: the runner must reach the control plane through Peer", name, path)
				}
			}
		}
	}
	if seen == 0 {
		t.Fatal("no Go files found in package run")
	}
}
