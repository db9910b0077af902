//go:build integration

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"verdict/internal/run/docker"
	"verdict/internal/testenv"
)

// These tests measure the resident memory of the real binary, as an operator would see it: the
// figures of an in-process server would mix in the test's own allocations.

const pytestImage = "verdict-examples/pytest:latest"

// TestMemoryConcurrentLogReaders reads a run's full 32 MiB log with 10 clients at once: each
// request must cost a buffer, not the log (one used to cost over 200 MB).
func TestMemoryConcurrentLogReaders(t *testing.T) {
	v := startVerdict(t)
	tok := v.signup("reader@example.com")
	// ~33 MiB of 100-byte lines: past the stored log's 32 MiB cap, so the log is the largest a
	// run can have.
	task := v.queue(tok, `python3 -c 'import sys; w = sys.stdout.write; [w("%07d %s\n" % (i, "x" * 91)) for i in range(346000)]'`)
	v.waitFinal(tok, task, 45*time.Second)

	base := v.mem()
	s := v.sampleRSS()
	const clients = 10
	var wg sync.WaitGroup
	sizes := make([]int64, clients)
	errs := make([]error, clients)
	start := time.Now()
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sizes[i], errs[i] = v.readLogs(tok, task)
		}()
	}
	wg.Wait()
	peak := s.stop()
	elapsed := time.Since(start)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("client %d: %v", i, err)
		}
		if sizes[i] < 32<<20 {
			t.Fatalf("client %d read a log of %d bytes, want the whole 32 MiB", i, sizes[i])
		}
	}
	t.Logf("10 concurrent readers of a %.1f MiB log: server RSS %.1f MB before, peak %.1f MB (+%.1f MB); its own (anonymous) memory %.1f MB before, peak %.1f MB (+%.1f MB); %d samples, %s",
		float64(sizes[0])/(1<<20), mb(base.rss), mb(peak), mb(peak-base.rss), mb(base.anon), mb(s.anon()), mb(s.anon()-base.anon),
		s.samples(), elapsed.Round(time.Millisecond))
	// The bound is on the process's own memory: the binary's file pages (~90 MB resident here)
	// grow with whatever code the server has run, and are the kernel's to drop. Holding the log
	// per request would cost 10 × 32 MiB.
	if s.anon() >= 80e6 {
		t.Fatalf("the server's own memory peaked at %.1f MB while 10 clients read the log, want under 80 MB", mb(s.anon()))
	}
}

// TestMemoryLongLineWithoutNewline has a run print 400 MB without a newline: the run plane
// must hold a bounded part of it, and the log must still show what was printed.
func TestMemoryLongLineWithoutNewline(t *testing.T) {
	v := startVerdict(t)
	tok := v.signup("line@example.com")
	base := v.mem()
	s := v.sampleRSS()
	start := time.Now()
	task := v.queue(tok, `python3 -c "import sys; [sys.stdout.write('x' * 65536) for _ in range(6400)]"`)
	status := v.waitFinal(tok, task, 50*time.Second)
	peak := s.stop()
	n, err := v.readLogs(tok, task)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("a run printing 400 MB without a newline (%s, %s): server RSS %.1f MB before, peak %.1f MB (+%.1f MB); its own (anonymous) memory %.1f MB before, peak %.1f MB (+%.1f MB); stored log %d bytes",
		status, time.Since(start).Round(time.Millisecond), mb(base.rss), mb(peak), mb(peak-base.rss),
		mb(base.anon), mb(s.anon()), mb(s.anon()-base.anon), n)
	if s.anon() >= 60e6 {
		t.Errorf("the server's own memory peaked at %.1f MB, want under 60 MB", mb(s.anon()))
	}
	if n == 0 {
		t.Errorf("the stored log is empty")
	}
}

func mb(b int64) float64 { return float64(b) / 1e6 }

// verdict is the binary serving on a loopback port.
type verdict struct {
	t    *testing.T
	pid  int
	base string
}

// startVerdict builds cmd/verdict, starts it on a fresh data folder (SQLite, dev secrets) and
// waits until it serves. It fails, never skips, without a Docker engine.
func startVerdict(t *testing.T) *verdict {
	t.Helper()
	dir := t.TempDir()
	return startVerdictIn(t, filepath.Join(dir, "data"), "HOME="+dir, "VERDICT_DEV=true")
}

// startVerdictIn is startVerdict on the data folder dataDir with the extra environment env.
func startVerdictIn(t *testing.T, dataDir string, env ...string) *verdict {
	t.Helper()
	dockerHost := testenv.DockerHost(t)
	b, err := docker.New("", docker.Options{})
	if err != nil {
		t.Fatalf("Docker engine: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	err = b.Ping(ctx)
	cancel()
	b.Close()
	if err != nil {
		t.Fatalf("the Docker engine does not answer: %v", err)
	}

	bin := binary(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, "serve")
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "DOCKER_HOST=" + dockerHost,
		"VERDICT_DATA_DIR=" + dataDir, "VERDICT_ADDR=" + addr,
		"VERDICT_PUBLIC_URL=http://" + addr, "VERDICT_LOG_LEVEL=warn"}, env...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &lockedWriter{w: &stderr}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("verdict's log:\n%s", stderr.String())
		}
	})
	v := &verdict{t: t, pid: cmd.Process.Pid, base: "http://" + addr}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if res, err := http.Get(v.base + "/healthz"); err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return v
			}
		}
		select {
		case <-exited:
			t.Fatalf("verdict exited at start:\n%s", stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("verdict did not serve within 30s:\n%s", stderr.String())
		}
	}
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// call sends a JSON request and decodes the JSON answer, failing on an unexpected status.
func (v *verdict) call(method, path, token string, body any, want int) map[string]any {
	v.t.Helper()
	var rd io.Reader
	if body != nil {
		j, _ := json.Marshal(body)
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, v.base+path, rd)
	if err != nil {
		v.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		v.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode != want {
		v.t.Fatalf("%s %s: status %d, want %d: %s", method, path, res.StatusCode, want, raw)
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		v.t.Fatalf("%s %s: %v: %s", method, path, err, raw)
	}
	return out
}

func (v *verdict) signup(email string) string {
	v.t.Helper()
	r := v.call("POST", "/api/auth/signup", "", map[string]any{"email": email, "password": "Str0ng!pass",
		"name": "Memory", "organizationName": "Memory Co"}, 201)
	return r["token"].(string)
}

func (v *verdict) queue(token, command string) string {
	v.t.Helper()
	r := v.call("POST", "/api/executions", token, map[string]any{"image": pytestImage, "command": command}, 201)
	return r["taskId"].(string)
}

// waitFinal polls the run until it has ended and returns its status.
func (v *verdict) waitFinal(token, task string, timeout time.Duration) string {
	v.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		e := v.call("GET", "/api/executions/"+task, token, nil, 200)["execution"].(map[string]any)
		switch st := e["status"].(string); st {
		case "PENDING", "RUNNING", "ANALYZING":
		default:
			return st
		}
		if time.Now().After(deadline) {
			v.t.Fatalf("run %s did not end within %s: %v", task, timeout, e)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// readLogs reads the run's whole log as GET …/logs answers it and returns its length in bytes
// after decoding.
func (v *verdict) readLogs(token, task string) (int64, error) {
	req, _ := http.NewRequest("GET", v.base+"/api/executions/"+task+"/logs", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		b, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
		return 0, fmt.Errorf("status %d: %s", res.StatusCode, b)
	}
	var body struct {
		Success bool   `json:"success"`
		Logs    string `json:"logs"`
	}
	if err := json.NewDecoder(bufio.NewReader(res.Body)).Decode(&body); err != nil {
		return 0, err
	}
	if !body.Success {
		return 0, fmt.Errorf("success is false")
	}
	return int64(len(body.Logs)), nil
}

// rss is the server's resident set in bytes, from /proc.
func (v *verdict) rss() int64 { return v.mem().rss }

// mem is the server's resident set and the part of it that is its own (anonymous) memory: the
// rest is the binary's file pages, which grow with the code a test happens to touch.
func (v *verdict) mem() resident {
	v.t.Helper()
	m, err := readResident(v.pid)
	if err != nil {
		v.t.Fatal(err)
	}
	return m
}

type resident struct{ rss, anon int64 }

func readResident(pid int) (resident, error) {
	var m resident
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return m, err
	}
	found := 0
	for _, line := range strings.Split(string(b), "\n") {
		name, rest, ok := strings.Cut(line, ":")
		if !ok || (name != "VmRSS" && name != "RssAnon") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
		if err != nil {
			return m, err
		}
		if name == "VmRSS" {
			m.rss = kb << 10
		} else {
			m.anon = kb << 10
		}
		found++
	}
	if found != 2 {
		return m, fmt.Errorf("no VmRSS or RssAnon in /proc/%d/status", pid)
	}
	return m, nil
}

// sampler records the peak resident set and the peak anonymous memory, sampled every 50 ms
// until stop.
type sampler struct {
	peak, peakAnon, n atomic.Int64
	done              chan struct{}
	stopped           chan struct{}
}

func (v *verdict) sampleRSS() *sampler {
	s := &sampler{done: make(chan struct{}), stopped: make(chan struct{})}
	sample := func() {
		if m, err := readResident(v.pid); err == nil {
			s.n.Add(1)
			if m.rss > s.peak.Load() {
				s.peak.Store(m.rss)
			}
			if m.anon > s.peakAnon.Load() {
				s.peakAnon.Store(m.anon)
			}
		}
	}
	sample()
	go func() {
		defer close(s.stopped)
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-s.done:
				sample()
				return
			case <-t.C:
				sample()
			}
		}
	}()
	return s
}

// stop ends the sampling and returns the peak resident set.
func (s *sampler) stop() int64 {
	close(s.done)
	<-s.stopped
	return s.peak.Load()
}

// anon is the peak anonymous memory, once stopped.
func (s *sampler) anon() int64 { return s.peakAnon.Load() }

func (s *sampler) samples() int64 { return s.n.Load() }
