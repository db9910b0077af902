package run

import (
	"os"
	"testing"

	"verdict/internal/testenv"
)

// Most of this package's parallel tests wait out real timers: they need not queue for a CPU.
func TestMain(m *testing.M) { os.Exit(testenv.RunWaiting(m, 8)) }
