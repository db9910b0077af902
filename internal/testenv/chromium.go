package testenv

import (
	"os"
	"os/exec"
	"testing"
)

// DefaultChromium is where Debian's chromium package puts the browser (scripts/services.sh
// installs it and exports VERDICT_TEST_CHROMIUM).
const DefaultChromium = "/usr/bin/chromium"

// Chromium returns the path of the Chromium the browser tests drive, failing the test when it
// is missing or not executable.
func Chromium(t testing.TB) string {
	t.Helper()
	SkipShort(t, "Chromium")
	p := env("VERDICT_TEST_CHROMIUM", DefaultChromium)
	if _, err := exec.LookPath(p); err != nil {
		t.Fatalf("Chromium is missing at %s (%v): run the tests with scripts/test.sh, which installs Debian's chromium package", p, err)
	}
	return p
}

// ChromiumNeedsNoSandbox reports whether Chromium must run with --no-sandbox: its sandbox
// refuses to start as root (it relies on dropping privileges it cannot drop then), and the
// test machine and containers often run as root. Anyone else keeps the sandbox.
func ChromiumNeedsNoSandbox() bool { return os.Geteuid() == 0 }
