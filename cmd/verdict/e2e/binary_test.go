//go:build integration

package e2e

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"verdict/internal/testenv"
)

// The exit codes of verdict's commands.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

var built struct {
	once sync.Once
	dir  string
	path string
	err  error
	out  []byte
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// binary builds cmd/verdict once per test process and returns its path. Short mode skips the
// test before building.
func binary(t testing.TB) string {
	t.Helper()
	testenv.SkipShort(t, "the built verdict binary")
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "verdict-e2e-"); built.err != nil {
			return
		}
		built.path = filepath.Join(built.dir, "verdict")
		// "go" is the toolchain running the test: `go test` puts its bin folder first on PATH.
		built.out, built.err = exec.Command("go", "build", "-o", built.path, "verdict/cmd/verdict").CombinedOutput()
	})
	if built.err != nil {
		t.Fatalf("go build verdict/cmd/verdict: %v\n%s", built.err, built.out)
	}
	return built.path
}

// command runs the built verdict with args, in the test's environment, and returns its exit
// code and output.
func command(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := exec.Command(binary(t), args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("verdict %v: %v", args, err)
	}
	return code, out.String(), errb.String()
}
