package docker

import (
	"bytes"
	"debug/elf"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// The sandbox program of each architecture is a valid static executable that waits until a
// signal ends it. The host's own runs natively; the other under qemu's user mode emulator
// (Debian's qemu-user, which scripts/test.sh installs).
func TestPauseELF(t *testing.T) {
	native := map[string]string{"amd64": "x86_64", "arm64": "aarch64"}[runtime.GOARCH]
	for arch, emulator := range map[string]string{"x86_64": "qemu-x86_64", "aarch64": "qemu-aarch64"} {
		t.Run(arch, func(t *testing.T) {
			prog, ok := pauseELF(arch)
			if !ok {
				t.Fatal("no program")
			}
			f, err := elf.NewFile(bytes.NewReader(prog))
			if err != nil {
				t.Fatal(err)
			}
			if f.Machine != pauseCode[arch].machine || f.Type != elf.ET_EXEC || len(f.Progs) != 1 || f.Progs[0].Type != elf.PT_LOAD {
				t.Fatalf("header: machine %v type %v progs %d", f.Machine, f.Type, len(f.Progs))
			}
			path := filepath.Join(t.TempDir(), "pause")
			if err := os.WriteFile(path, prog, 0o755); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(path)
			if arch != native {
				if _, err := exec.LookPath(emulator); err != nil {
					t.Fatalf("%s is needed to run the %s program: apt-get install qemu-user (scripts/test.sh does)", emulator, arch)
				}
				cmd = exec.Command(emulator, path)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			select {
			case err := <-exited:
				t.Fatalf("the program exited on its own: %v", err)
			case <-time.After(300 * time.Millisecond):
			}
			_ = cmd.Process.Signal(syscall.SIGTERM)
			err = <-exited
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGTERM {
				t.Fatalf("after SIGTERM: %v, want death by the signal", err)
			}
		})
	}
	if _, ok := pauseELF("s390x"); ok {
		t.Error("a program for an architecture without code")
	}
}
