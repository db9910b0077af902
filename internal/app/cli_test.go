//go:build integration

package app_test

import (
	"bytes"
	"encoding/xml"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	cliOnce sync.Once
	cliPath string
	cliErr  error
)

// verdictBinary builds cmd/verdict once per test process.
func verdictBinary(t *testing.T) string {
	t.Helper()
	cliOnce.Do(func() {
		dir, err := os.MkdirTemp("", "verdict-cli")
		if err != nil {
			cliErr = err
			return
		}
		cliPath = filepath.Join(dir, "verdict")
		out, err := exec.Command("go", "build", "-o", cliPath, "verdict/cmd/verdict").CombinedOutput()
		if err != nil {
			cliErr = err
			t.Logf("%s", out)
		}
	})
	if cliErr != nil {
		t.Fatalf("building verdict: %v", cliErr)
	}
	return cliPath
}

type cliResult struct {
	code           int
	stdout, stderr string
}

// verdictRun runs `verdict run` against server with key; started, if set, gets the process once
// it runs.
func verdictRun(t *testing.T, server, key string, started func(*os.Process), args ...string) cliResult {
	t.Helper()
	cmd := exec.Command(verdictBinary(t), append([]string{"run", "--server", server, "--retry-for", "30s"}, args...)...)
	cmd.Env = []string{"VERDICT_API_KEY=" + key, "PATH=" + os.Getenv("PATH")}
	var out, errs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if started != nil {
		started(cmd.Process)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(3 * time.Minute):
		_ = cmd.Process.Kill()
		t.Fatalf("verdict run did not end; stderr:\n%s", errs.String())
	}
	return cliResult{cmd.ProcessState.ExitCode(), out.String(), errs.String()}
}

// cuttingProxy forwards TCP connections to target; the first connection that carries more than
// cutAfter bytes back to the client is cut there.
func cuttingProxy(t *testing.T, target string, cutAfter int64) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var once sync.Once
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				s, err := net.Dial("tcp", target)
				if err != nil {
					return
				}
				defer s.Close()
				go func() { _, _ = io.Copy(s, c) }()
				cut := false
				var n int64
				buf := make([]byte, 4096)
				for {
					k, err := s.Read(buf)
					if k > 0 {
						if !cut && n+int64(k) > cutAfter && bytes.Contains(buf[:k], []byte("event: execution-log")) {
							once.Do(func() { cut = true })
							if cut {
								_, _ = c.Write(buf[:k/2])
								return // the connection breaks in the middle of the stream
							}
						}
						n += int64(k)
						if _, err := c.Write(buf[:k]); err != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

type junitFile struct {
	Tests    int `xml:"tests,attr"`
	Failures int `xml:"failures,attr"`
	Suites   []struct {
		Cases []struct {
			Name    string `xml:"name,attr"`
			Failure *struct {
				Message string `xml:"message,attr"`
			} `xml:"failure"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

// The CLI against the real server and the Docker engine: exit codes, the log printed equals the
// stored log, the JUnit file equals the parsed results, a cut connection resumes, Ctrl-C with
// --cancel-on-interrupt cancels.
func TestCLIEndToEnd(t *testing.T) {
	h := runHarness(t, "sqlite")
	admin := h.signup("ci@example.com", "CI Co")
	key := h.do("POST", "/api/auth/api-keys", bearer(admin.token), map[string]any{"name": "ci"}).str("apiKey")
	storedLog := func(taskID string) string {
		return h.do("GET", "/api/executions/"+taskID+"/logs", apiKey(key), nil).str("logs")
	}

	r := verdictRun(t, h.srv.URL, key, nil, "--image", passImage, "--task-id", "cli-pass")
	if r.code != 0 || r.stdout != storedLog("cli-pass") || !strings.Contains(r.stderr, "report: "+publicURL+"/reports/") {
		t.Fatalf("PASSED: exit %d\nstdout %q\nstored %q\nstderr %s", r.code, r.stdout, storedLog("cli-pass"), r.stderr)
	}

	junit := filepath.Join(t.TempDir(), "results.xml")
	r = verdictRun(t, h.srv.URL, key, nil, "--image", failImage, "--task-id", "cli-fail", "--junit", junit, "--label", "suite=nightly")
	if r.code != 1 || r.stdout != storedLog("cli-fail") {
		t.Fatalf("FAILED: exit %d\n%s", r.code, r.stderr)
	}
	e := h.do("GET", "/api/executions/cli-fail", apiKey(key), nil)
	tests, _ := e.get("execution", "tests").([]any)
	raw, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	var j junitFile
	if err := xml.Unmarshal(raw, &j); err != nil {
		t.Fatal(err)
	}
	failed := 0
	for _, x := range tests {
		if x.(map[string]any)["status"] == "failed" {
			failed++
		}
	}
	if j.Tests != len(tests) || j.Failures != failed || failed == 0 {
		t.Fatalf("junit %d tests %d failures, the run %d tests %d failed:\n%s", j.Tests, j.Failures, len(tests), failed, raw)
	}

	r = verdictRun(t, h.srv.URL, key, nil, "--image", "verdict-examples/does-not-exist:latest")
	if r.code != 2 {
		t.Fatalf("a missing image: exit %d\n%s", r.code, r.stderr)
	}
	r = verdictRun(t, h.srv.URL, "pk_live_not_a_key", nil, "--image", passImage)
	if r.code != 3 || !strings.Contains(r.stderr, "Invalid API key") {
		t.Fatalf("a bad key: exit %d\n%s", r.code, r.stderr)
	}

	// A connection cut in the middle of a chatty run's stream: the command resumes, and prints
	// every byte of the log once.
	proxy := cuttingProxy(t, strings.TrimPrefix(h.srv.URL, "http://"), 2000)
	r = verdictRun(t, proxy, key, nil, "--image", slowImage, "--task-id", "cli-resume", "--env", "LINES=60", "--env", "INTERVAL_MS=30")
	if r.code != 0 || r.stdout != storedLog("cli-resume") || !strings.Contains(r.stderr, "resuming at byte") {
		t.Fatalf("resume: exit %d\nstdout %q\nstored %q\nstderr %s", r.code, r.stdout, storedLog("cli-resume"), r.stderr)
	}

	// Ctrl-C in CI cancels the run.
	r = verdictRun(t, h.srv.URL, key, func(p *os.Process) {
		go func() {
			h.waitFor(apiKey(key), "cli-cancel", time.Minute, func(r resp) bool { return r.str("execution", "status") == "RUNNING" })
			_ = p.Signal(syscall.SIGINT)
		}()
	}, "--image", slowImage, "--task-id", "cli-cancel", "--env", "LINES=600", "--cancel-on-interrupt")
	if r.code != 2 || h.do("GET", "/api/executions/cli-cancel", apiKey(key), nil).str("execution", "status") != "CANCELLED" {
		t.Fatalf("Ctrl-C: exit %d\n%s", r.code, r.stderr)
	}
}
