package main

import (
	"fmt"
	"os"
	"sync"
	"testing"
)

// helperTB lets the driver use the tests' own fakes (testenv's SMTP server, trackertest's
// Linear) outside a test: those take a testing.TB for the few calls below. The embedded
// interface is nil, so a helper calling anything else panics loudly rather than misbehaving.
// Errors a fake reports (a request it did not expect) are kept and printed with the report.
type helperTB struct {
	testing.TB

	mu       sync.Mutex
	errors   []string
	cleanups []func()
}

func (t *helperTB) Helper() {}

func (t *helperTB) Name() string { return "chaos" }

func (t *helperTB) Log(args ...any)                 { logf("%s", fmt.Sprint(args...)) }
func (t *helperTB) Logf(format string, args ...any) { logf(format, args...) }

func (t *helperTB) Error(args ...any) { t.Errorf("%s", fmt.Sprint(args...)) }

func (t *helperTB) Errorf(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.errors = append(t.errors, fmt.Sprintf(format, args...))
}

func (t *helperTB) Fatal(args ...any) { t.Fatalf("%s", fmt.Sprint(args...)) }

func (t *helperTB) Fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "chaos: a test helper failed: "+format+"\n", args...)
	t.cleanup()
	os.Exit(2)
}

func (t *helperTB) Failed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.errors) > 0
}

func (t *helperTB) Cleanup(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, f)
}

// Errors returns what the fakes reported.
func (t *helperTB) Errors() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.errors...)
}

// cleanup runs the registered cleanups, last first.
func (t *helperTB) cleanup() {
	t.mu.Lock()
	fs := t.cleanups
	t.cleanups = nil
	t.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}
