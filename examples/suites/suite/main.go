// Command suite is a stand-in test suite for Verdict's sample images (examples/suites). It honours
// the container contract: the first argument names the test folder under /app/tests (`all` or
// empty runs every folder), BASE_URL, TASK_ID, CI and FRAMEWORK_AGNOSTIC come from the
// environment, and reports are written under /app. It runs no real tests: each mode replays a
// fixed set of outcomes, so the service's parsing, verdicts and log streaming can be tested
// without a browser or a network.
//
// One binary serves every image; the mode is fixed at build time:
//
//	go build -ldflags "-X main.mode=fail" ./examples/suites/suite
package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// mode selects the replayed outcomes: pass, fail, flaky, slow or sharded (sharded.go). Set
// with -ldflags -X.
var mode = "pass"

// attempt is one try of a test; a test with two attempts was retried.
type attempt struct {
	passed   bool
	message  string // failure message, empty when passed
	duration time.Duration
}

// testCase is one replayed test. folder is its folder under /app/tests, file its spec file there.
type testCase struct {
	folder, file, name string
	attempts           []attempt
}

func (t testCase) passed() bool { return t.attempts[len(t.attempts)-1].passed }
func (t testCase) flaky() bool  { return t.passed() && len(t.attempts) > 1 }

func ok(d time.Duration) attempt { return attempt{passed: true, duration: d} }
func failed(d time.Duration, msg string) attempt {
	return attempt{message: msg, duration: d}
}

// cases returns the outcomes a mode replays.
func cases(mode string) ([]testCase, error) {
	ms := time.Millisecond
	base := []testCase{
		{"api", "health.spec.ts", "health endpoint returns 200", []attempt{ok(42 * ms)}},
		{"api", "auth.spec.ts", "login accepts valid credentials", []attempt{ok(118 * ms)}},
		{"ui", "home.spec.ts", "home page renders the title", []attempt{ok(640 * ms)}},
		{"ui", "dashboard.spec.ts", "dashboard lists recent runs", []attempt{ok(905 * ms)}},
	}
	switch mode {
	case "pass", "slow":
		return base, nil
	case "fail":
		base[1].name = "login rejects a wrong password"
		base[1].attempts = []attempt{failed(97*ms, "expected status 401, got 500")}
		base[3].attempts = []attempt{failed(5012*ms, "locator('#runs') not found: timeout 5000ms exceeded")}
		return base, nil
	case "flaky":
		base[2].name = "checkout button opens the cart"
		base[2].attempts = []attempt{
			failed(3021*ms, "timeout 3000ms waiting for selector 'button#checkout'"),
			ok(712 * ms),
		}
		return base, nil
	}
	return nil, fmt.Errorf("unknown mode %q", mode)
}

// env is the part of the environment the suite reads.
type env struct {
	baseURL, taskID, ci, agnostic, secret string
	lines                                 int
	interval                              time.Duration
	fillMB                                int    // MiB written to fillPath first, for disk limit tests
	fillPath                              string // [/app/fill]
	// failTests names tests (by name, comma-separated in FAIL_TESTS) that fail this run
	// whatever the mode says: for tests' histories across runs (a test that flips, a new
	// failure against a baseline).
	failTests []string
}

func readEnv(get func(string) string) env {
	e := env{
		baseURL:  get("BASE_URL"),
		taskID:   get("TASK_ID"),
		ci:       get("CI"),
		agnostic: get("FRAMEWORK_AGNOSTIC"),
		secret:   get("SECRET_TOKEN"),
		lines:    20,
		interval: 100 * time.Millisecond,
	}
	if n, err := strconv.Atoi(get("LINES")); err == nil && n >= 0 {
		e.lines = n
	}
	if n, err := strconv.Atoi(get("INTERVAL_MS")); err == nil && n >= 0 {
		e.interval = time.Duration(n) * time.Millisecond
	}
	if n, err := strconv.Atoi(get("FILL_MB")); err == nil && n > 0 {
		e.fillMB = n
	}
	for _, n := range strings.Split(get("FAIL_TESTS"), ",") {
		if n = strings.TrimSpace(n); n != "" {
			e.failTests = append(e.failTests, n)
		}
	}
	e.fillPath = get("FILL_PATH")
	if e.fillPath == "" {
		e.fillPath = "/app/fill"
	}
	return e
}

func main() {
	os.Exit(run("/app", os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// fill writes mb MiB of data (not a sparse file: every block is used) to path.
func fill(path string, mb int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	chunk := bytes.Repeat([]byte("verdict "), 1<<17) // 1 MiB
	for range mb {
		if _, err := f.Write(chunk); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

// sleep runs until a signal arrives, for cancel and timeout tests. As PID 1 the process only gets
// the signals it handles, so it handles SIGTERM and exits like a shell would (128+15).
func sleep(out io.Writer) int {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	fmt.Fprintln(out, "sleeping until stopped")
	s := <-sig
	fmt.Fprintf(out, "received %v, stopping\n", s)
	return 128 + int(s.(syscall.Signal))
}

// run replays the mode's tests under root (/app in the image) and returns the exit code:
// 0 when every selected test finally passed, 1 when one failed, 2 on a usage error.
func run(root string, args []string, get func(string) string, stdout, stderr io.Writer) int {
	folder := ""
	if len(args) > 0 {
		folder = args[0]
	}
	if mode == "sharded" {
		return runSharded(root, get, stdout, stderr)
	}
	e := readEnv(get)
	all, err := cases(mode)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	for i := range all {
		if slices.Contains(e.failTests, all[i].name) {
			all[i].attempts = []attempt{failed(50*time.Millisecond, "failed on request (FAIL_TESTS)")}
		}
	}
	sleeping := mode == "slow" && folder == "sleep"
	var selected []testCase
	if !sleeping {
		if selected, err = selectFolder(root, folder, all); err != nil {
			fmt.Fprintln(stderr, err)
			return 2
		}
	}

	fmt.Fprintf(stdout, "verdict example suite (mode %s), folder %q\n", mode, folder)
	fmt.Fprintf(stdout, "BASE_URL=%s TASK_ID=%s CI=%s FRAMEWORK_AGNOSTIC=%s\n", e.baseURL, e.taskID, e.ci, e.agnostic)
	if e.secret != "" {
		// On purpose: the service must mask project secrets in the logs it keeps.
		fmt.Fprintf(stdout, "using SECRET_TOKEN=%s\n", e.secret)
	}
	if e.fillMB > 0 {
		if err := fill(e.fillPath, e.fillMB); err != nil {
			fmt.Fprintln(stderr, err)
			return 2
		}
		fmt.Fprintf(stdout, "wrote %d MiB to %s\n", e.fillMB, e.fillPath)
	}
	if sleeping {
		return sleep(stdout)
	}
	if mode == "slow" {
		for i := 1; i <= e.lines; i++ {
			fmt.Fprintf(stdout, "line %d of %d\n", i, e.lines)
			time.Sleep(e.interval)
		}
	}

	start := time.Now()
	failures := 0
	for _, t := range selected {
		for i, a := range t.attempts {
			status := "ok"
			if !a.passed {
				status = "FAILED: " + a.message
			}
			retry := ""
			if i > 0 {
				retry = fmt.Sprintf(" (retry #%d)", i)
			}
			fmt.Fprintf(stdout, "  %s/%s > %s%s: %s\n", t.folder, t.file, t.name, retry, status)
		}
		if !t.passed() {
			failures++
		}
	}
	if err := writeReports(root, start, selected); err != nil {
		fmt.Fprintf(stderr, "writing reports: %v\n", err)
		return 2
	}
	fmt.Fprintf(stdout, "%d tests, %d failed\n", len(selected), failures)
	if failures > 0 {
		fmt.Fprintf(stderr, "%d test(s) failed\n", failures)
		return 1
	}
	return 0
}

// selectFolder keeps the tests of one folder; the folder must exist under root/tests, as it
// would for a real runner given a path.
func selectFolder(root, folder string, all []testCase) ([]testCase, error) {
	if folder == "" || folder == "all" {
		return all, nil
	}
	// Cleaning under "/" keeps the folder inside root/tests whatever it says.
	name := strings.TrimPrefix(filepath.Clean("/"+folder), "/")
	if fi, err := os.Stat(filepath.Join(root, "tests", name)); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("no test folder %q under %s", folder, filepath.Join(root, "tests"))
	}
	sel := slices.DeleteFunc(slices.Clone(all), func(t testCase) bool { return t.folder != name })
	if len(sel) == 0 {
		return nil, fmt.Errorf("no tests in folder %q", folder)
	}
	return sel, nil
}
