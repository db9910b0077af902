//go:build integration

package app_test

// Run-plane benchmarks: what Verdict adds on top of `docker run --rm` of the same image, on the
// real service (HTTP API, database, embedded runner, Docker engine, Socket.IO).
//
//	go test -p 1 -run '^$' -bench 'BenchmarkRun' -benchtime 1x ./internal/app
//
// Each benchmark does a fixed workload once per iteration (b.Loop); with -benchtime 1x, once.
// Figures are wall-clock times on a shared machine: compare Verdict with the docker CLI measured
// in the same benchmark, side by side, rather than with figures from another time.
//
// Knobs (environment): VERDICT_BENCH_DB=sqlite|postgres (default sqlite),
// VERDICT_BENCH_SAMPLES (runs per side in BenchmarkRunFirstLog, default 8),
// VERDICT_BENCH_DRAIN_RUNS (runs per side in BenchmarkRunDrain, default 100),
// VERDICT_BENCH_DRAIN_CONFINED=1 (BenchmarkRunDrain also drains `docker run --rm` with the
// limits of a run's container, each on the run network with a namespace of its own: what
// confinement costs the engine without Verdict's reused network sandboxes).
//
// Benchmarks: BenchmarkRunFirstLog (POST → first log line at a Socket.IO client),
// BenchmarkRunLogLatency (a printed line → the client), BenchmarkRunDrain (100 queued runs, 4
// slots), BenchmarkRunReportCollect (the engine calls between a container's exit and its removal).
//
// Besides the client-side stamps, a Docker events subscription records when the engine created,
// started, saw exit and destroyed each container (and set up each report copy), and a second log
// follower (with the engine's own timestamps) records when each line left the container. All
// clocks are the same host's wall clock (the engine is local), so the stamps can be subtracted
// from each other; that is what the breakdowns in the logs are made of. Without -v the testing
// package keeps 10 lines of a benchmark's log, so each breakdown fits in 9;
// scripts/bench-runs.sh runs them with -v.
//
// Verdict's containers are not a plain `docker run --rm`: they get docker-init, all capabilities
// dropped, no-new-privileges, memory/CPU/PID limits and a host-gateway entry. The created and
// started phases of the breakdowns show what that costs next to the CLI's containers.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/client"
	sio "github.com/zishang520/socket.io/clients/socket/v3"
	"github.com/zishang520/socket.io/v3/pkg/types"

	"verdict/internal/domain"
	"verdict/internal/run"
	"verdict/internal/run/docker"
	"verdict/internal/testenv"
)

const dockerCLI = "/usr/local/bin/docker"

// confinedRunFlags give a `docker run` container what the docker backend gives a run's container
// by default (its hostConfig, with the CPU quota cut to the engine's CPUs) on the run network,
// but in a network namespace of its own where a run joins a reused sandbox.
func confinedRunFlags(b *testing.B) []string {
	b.Helper()
	out, err := exec.Command(dockerCLI, "info", "--format", "{{.NCPU}}").Output()
	ncpu, _ := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil || ncpu < 1 {
		b.Fatalf("docker info: %v %s", err, out)
	}
	return []string{"--network", docker.DefaultNetwork, "--init", "--memory", "2g", "--memory-swap", "2g",
		"--cpus", strconv.Itoa(min(2, ncpu)), "--pids-limit", "1024", "--cap-drop", "ALL",
		"--security-opt", "no-new-privileges", "--add-host", "host.docker.internal:host-gateway",
		"--log-opt", "max-size=100m", "--log-opt", "max-file=2"}
}

// ---------------------------------------------------------------------------------------------
// (a) POST /api/executions → first log line at a Socket.IO client, against docker run --rm.

// BenchmarkRunFirstLog measures, run after run (never two at once, so nothing queues), the time
// from sending POST /api/executions to the arrival of the run's first `execution-log` event at a
// Socket.IO client, and the time from exec'ing `docker run --rm` of the same image to the first
// line on the CLI's stdout. The two alternate, so load from elsewhere hits both alike.
func BenchmarkRunFirstLog(b *testing.B) {
	rb := newRunBench(b, 2, true)
	samples := envInt(b, "VERDICT_BENCH_SAMPLES", 8)
	// The slow image's first line is printed at once; three short lines keep the container
	// alive long enough (~300 ms) for the timestamp follower to attach, and the run short.
	vars := map[string]string{"LINES": "3", "INTERVAL_MS": "100"}

	var vTotal, dTotal, vPost, vTrip, dTrip []float64
	var vPhases, dPhases phaseSet
	iter := 0
	for b.Loop() {
		iter++
		for i := range samples {
			task := fmt.Sprintf("first-%d-%d", iter, i)
			t0 := time.Now()
			rb.h.queue(rb.auth, map[string]any{"image": slowImage, "taskId": task, "envVars": anyMap(vars)})
			posted := time.Now()
			lr := rb.live.waitFinal(b, rb.h, rb.auth, task, 2*time.Minute)
			if lr.status != string(domain.ExecPassed) {
				b.Fatalf("run %s ended %s, want PASSED", task, lr.status)
			}
			if lr.firstLog.IsZero() || !strings.Contains(lr.firstChunk, "verdict example suite") {
				b.Fatalf("run %s: first execution-log event %q, want the suite's first line", task, lr.firstChunk)
			}
			vTotal = append(vTotal, ms(t0, lr.firstLog))
			ct := rb.eng.wait(b, task)
			vPost = append(vPost, ms(t0, posted))
			vPhases.add(phClaimed, ms(t0, lr.running))
			vPhases.add(phCreated, ms(t0, ct.create))
			vPhases.add(phStarted, ms(t0, ct.start))
			vPhases.add(phPrinted, ms(t0, ct.firstStamp()))
			vPhases.add(phDelivered, ms(t0, lr.firstLog))
			vPhases.add(phExited, ms(t0, ct.die))
			vPhases.add(phDestroyed, ms(t0, ct.destroy))
			vPhases.add(phEnd, ms(t0, lr.final))
			vTrip = append(vTrip, ms(ct.firstStamp(), lr.firstLog))

			name := rb.cliName(fmt.Sprintf("first-%d-%d", iter, i))
			c := startCLI(b, name, slowImage, vars)
			first := c.next(b)
			if !strings.Contains(first.text, "verdict example suite") {
				b.Fatalf("docker run: first line %q", first.text)
			}
			c.finish(b, "4 tests, 0 failed")
			dTotal = append(dTotal, ms(c.t0, first.at))
			ct = rb.eng.wait(b, name)
			dPhases.add(phCreated, ms(c.t0, ct.create))
			dPhases.add(phStarted, ms(c.t0, ct.start))
			dPhases.add(phPrinted, ms(c.t0, ct.firstStamp()))
			dPhases.add(phDelivered, ms(c.t0, first.at))
			dPhases.add(phExited, ms(c.t0, ct.die))
			dPhases.add(phDestroyed, ms(c.t0, ct.destroy))
			dPhases.add(phEnd, ms(c.t0, c.done))
			dTrip = append(dTrip, ms(ct.firstStamp(), first.at))
		}
	}
	vm, dm := pct(vTotal, 50), pct(dTotal, 50)
	b.ReportMetric(vm, "verdict-median-ms")
	b.ReportMetric(pct(vTotal, 99), "verdict-p99-ms")
	b.ReportMetric(dm, "docker-median-ms")
	b.ReportMetric(pct(dTotal, 99), "docker-p99-ms")
	b.ReportMetric(vm-dm, "overhead-median-ms")
	b.ReportMetric(pct(vPhases.vals[phClaimed], 50), "verdict-claimed-ms")
	b.ReportMetric(pct(vPhases.vals[phCreated], 50), "verdict-created-ms")
	b.ReportMetric(pct(dPhases.vals[phCreated], 50), "docker-created-ms")
	b.ReportMetric(pct(vTrip, 50), "verdict-printed-to-client-ms")
	b.ReportMetric(pct(dTrip, 50), "docker-printed-to-stdout-ms")
	// At most 9 lines: without -v the testing package cuts a benchmark's log at 10.
	b.Logf("%d runs per side; POST answered in %.1f ms (median)\n%s", len(vTotal), pct(vPost, 50),
		table("ms after POST / exec, median (p99)", []string{"Verdict", "docker run --rm"}, vPhases, dPhases))
}

// Phases of a run as seen by the client (Socket.IO events, CLI stdout) and the engine (events,
// log timestamps).
const (
	phClaimed   = "RUNNING event (run claimed)"
	phCreated   = "container created"
	phStarted   = "container started"
	phPrinted   = "first line printed (engine stamp)"
	phDelivered = "first line at the client / stdout"
	phExited    = "container exited"
	phDestroyed = "container destroyed"
	phEnd       = "final event / CLI exited"
)

// ---------------------------------------------------------------------------------------------
// (b) a line printed in the container → the Socket.IO client.

// BenchmarkRunLogLatency follows one run of the slow image, which prints `line i of N` every
// INTERVAL_MS, and the same image under `docker run --rm` as the reference.
//
// The container cannot stamp its lines, so two figures are computed:
//
//   - relative lag (the image needs no change): with a_i the arrival of line i at the client,
//     lag_i = a_i - a_1 - (i-1)*interval for i >= 2. It is the extra delay of line i compared
//     with line 1. A constant delay (the same for every line) cancels out, and so does the 50 ms
//     batch window when every line is alone in its batch (interval > 50 ms); with a shorter
//     interval the window groups lines, and the lag spreads between about -50 ms (a line at the
//     end of a batch waited less than line 1, the batch's first) and 0. It also contains the
//     container's own drift: `time.Sleep(interval)` plus the print overshoots the interval, so
//     lag grows by that error with i (reported as the drift figure below).
//   - absolute latency: the Docker engine stamps every line as it reads it from the container's
//     stdout (the json-file log, read back with timestamps by a separate follower); the engine
//     runs on this host, so a_i - engine_stamp_i is the whole trip from the container's pipe to
//     the client: for Verdict the engine's log follow, the runner's demux and batching (up to
//     50 ms), the Socket.IO emit and the WebSocket; for the CLI the attach stream. This is the
//     figure where the batch window shows as a floor.
//
// The drift figure is engine_stamp_i - engine_stamp_1 - (i-1)*interval: the container's own
// cadence error, which the relative lag includes and the absolute latency does not.
func BenchmarkRunLogLatency(b *testing.B) {
	for _, c := range []struct {
		interval, lines int
	}{{100, 30}, {20, 100}} {
		b.Run(fmt.Sprintf("interval=%dms", c.interval), func(b *testing.B) {
			rb := newRunBench(b, 2, true)
			vars := map[string]string{"LINES": strconv.Itoa(c.lines), "INTERVAL_MS": strconv.Itoa(c.interval)}
			iv := time.Duration(c.interval) * time.Millisecond
			var vRel, vAbs, dRel, dAbs, drift, perEvent []float64
			var runP50, runP99 []float64 // Verdict's engine→client latency, per run
			iter := 0
			for b.Loop() {
				iter++
				task := fmt.Sprintf("lag-%d", iter)
				rb.h.queue(rb.auth, map[string]any{"image": slowImage, "taskId": task, "envVars": anyMap(vars)})
				lr := rb.live.waitFinal(b, rb.h, rb.auth, task, 2*time.Minute)
				if lr.status != string(domain.ExecPassed) {
					b.Fatalf("run %s ended %s, want PASSED", task, lr.status)
				}
				arr := numberedLines(b, "Verdict", lr.lines, c.lines)
				ct := rb.eng.wait(b, task)
				stamps := engineStamps(b, ct, c.lines)
				vRel = append(vRel, relLag(arr, iv)...)
				lat := absLat(arr, stamps)
				vAbs = append(vAbs, lat...)
				runP50, runP99 = append(runP50, pct(lat, 50)), append(runP99, pct(lat, 99))
				drift = append(drift, relLag(stamps, iv)...)
				perEvent = append(perEvent, float64(c.lines)/float64(distinct(arr)))

				name := rb.cliName(fmt.Sprintf("lag-%d", iter))
				cl := startCLI(b, name, slowImage, vars)
				var got []stampedLine
				for {
					l := cl.next(b)
					got = append(got, l)
					if l.text == fmt.Sprintf("line %d of %d", c.lines, c.lines) {
						break
					}
				}
				cl.finish(b, "4 tests, 0 failed")
				arr = numberedLines(b, "docker run", got, c.lines)
				ct = rb.eng.wait(b, name)
				stamps = engineStamps(b, ct, c.lines)
				dRel = append(dRel, relLag(arr, iv)...)
				dAbs = append(dAbs, absLat(arr, stamps)...)
				drift = append(drift, relLag(stamps, iv)...)
			}
			b.ReportMetric(pct(vRel, 50), "verdict-rel-median-ms")
			b.ReportMetric(pct(vRel, 99), "verdict-rel-p99-ms")
			b.ReportMetric(pct(vAbs, 50), "verdict-abs-median-ms")
			b.ReportMetric(pct(vAbs, 99), "verdict-abs-p99-ms")
			b.ReportMetric(pct(dRel, 50), "docker-rel-median-ms")
			b.ReportMetric(pct(dRel, 99), "docker-rel-p99-ms")
			b.ReportMetric(pct(dAbs, 50), "docker-abs-median-ms")
			b.ReportMetric(pct(dAbs, 99), "docker-abs-p99-ms")
			b.ReportMetric(mean(perEvent), "lines/event")
			// The targets hold for every run, not only pooled over them.
			b.ReportMetric(pct(runP50, 100), "verdict-abs-median-worst-run-ms")
			b.ReportMetric(pct(runP99, 100), "verdict-abs-p99-worst-run-ms")
			b.Logf("%d lines every %s per run; ms, median / p99 / min / max", c.lines, iv)
			b.Logf("Verdict   relative lag  %s", summary(vRel))
			b.Logf("Verdict   engine→client %s", summary(vAbs))
			b.Logf("docker    relative lag  %s", summary(dRel))
			b.Logf("docker    engine→client %s", summary(dAbs))
			b.Logf("container cadence drift %s", summary(drift))
			b.Logf("Verdict: %.2f numbered lines per execution-log event that carried any", mean(perEvent))
			b.Logf("Verdict   engine→client per run: median %s, p99 %s ms", fmtList(runP50), fmtList(runP99))
		})
	}
}

// numberedLines picks the arrival of `line i of n` for i = 1..n, in order, or fails.
func numberedLines(b *testing.B, who string, lines []stampedLine, n int) []time.Time {
	b.Helper()
	out := make([]time.Time, 0, n)
	for _, l := range lines {
		if m := lineOf.FindStringSubmatch(l.text); m != nil {
			if i, _ := strconv.Atoi(m[1]); i != len(out)+1 {
				b.Fatalf("%s: %q arrived after line %d", who, l.text, len(out))
			}
			out = append(out, l.at)
		}
	}
	if len(out) != n {
		b.Fatalf("%s: %d of %d numbered lines arrived", who, len(out), n)
	}
	return out
}

var lineOf = regexp.MustCompile(`^line (\d+) of \d+$`)

// engineStamps returns the engine's timestamps of `line i of n`, i = 1..n.
func engineStamps(b *testing.B, ct ctrTimes, n int) []time.Time {
	b.Helper()
	out := make([]time.Time, n)
	for i := range n {
		t, ok := ct.stamps[fmt.Sprintf("line %d of %d", i+1, n)]
		if !ok {
			b.Fatalf("container %s: no engine timestamp for line %d of %d (follower: %v)", ct.name, i+1, n, ct.followErr)
		}
		out[i] = t
	}
	return out
}

// distinct counts the different arrival times: the execution-log events that carried the lines.
func distinct(at []time.Time) int {
	n := 0
	for i := range at {
		if i == 0 || !at[i].Equal(at[i-1]) {
			n++
		}
	}
	return n
}

func relLag(at []time.Time, iv time.Duration) []float64 {
	out := make([]float64, 0, len(at))
	for i := 1; i < len(at); i++ {
		out = append(out, float64(at[i].Sub(at[0])-time.Duration(i)*iv)/float64(time.Millisecond))
	}
	return out
}

func absLat(at, stamps []time.Time) []float64 {
	out := make([]float64, len(at))
	for i := range at {
		out[i] = ms(stamps[i], at[i])
	}
	return out
}

// ---------------------------------------------------------------------------------------------
// (c) 100 queued runs drained with every slot busy.

// BenchmarkRunDrain queues VERDICT_BENCH_DRAIN_RUNS (100) runs of the pass image at once for an
// enterprise organization (limit 20 concurrent runs) on a runner with 4 slots, and measures
// the wall time from the first POST to the arrival of the last final status at a Socket.IO
// client; then the same number of `docker run --rm` through a pool of 4 workers, from the first
// exec to the last exit. Each iteration is one round of both sides, which take turns going
// first; throughput-ratio is docker's mean time over Verdict's. The host CPU figures (engine
// daemons, this process, the docker CLIs) are steadier than wall times on a shared machine.
func BenchmarkRunDrain(b *testing.B) {
	const slots = 4
	rb := newRunBench(b, slots, false)
	n := envInt(b, "VERDICT_BENCH_DRAIN_RUNS", 100)
	var vTotals, dTotals, postSecs []float64
	var vPhases, dPhases phaseSet
	// busy: the sum over runs of the time each one's suite had a slot (claim → container exit
	// for Verdict, whose runner then collects the reports in the same slot; exec → exit for the
	// CLI); divided by slots × wall time it tells how much of the slots the suites used.
	var vBusy, dBusy time.Duration
	var copies []float64
	var vCPU, dCPU hostCPU
	iter := 0
	verdictSide := func() {
		c0 := readHostCPU()
		tasks := make([]string, n)
		t0 := time.Now()
		for i := range n {
			tasks[i] = fmt.Sprintf("drain-%d-%d", iter, i)
			rb.h.queue(rb.auth, map[string]any{"image": passImage, "taskId": tasks[i]})
		}
		posted := time.Now()
		var last time.Time
		for _, task := range tasks {
			lr := rb.live.waitFinal(b, rb.h, rb.auth, task, 10*time.Minute)
			if lr.status != string(domain.ExecPassed) {
				b.Fatalf("run %s ended %s (%s), want PASSED", task, lr.status, lr.errText)
			}
			if lr.final.After(last) {
				last = lr.final
			}
			ct := rb.eng.wait(b, task)
			vPhases.add(dpCreate, ms(lr.startedAt, ct.create))
			vPhases.add(dpStart, ms(ct.create, ct.start))
			vPhases.add(dpRun, ms(ct.start, ct.die))
			vPhases.add(dpAfter, ms(ct.die, ct.destroy))
			if len(ct.copies) == 0 {
				b.Fatalf("run %s: no report was copied out of its container", task)
			}
			vPhases.add(dpToCopy, ms(ct.die, ct.copies[0]))
			vPhases.add(dpFinal, ms(ct.die, lr.final))
			vPhases.add(dpSlot, ms(lr.startedAt, ct.die))
			vBusy += ct.die.Sub(lr.startedAt)
			copies = append(copies, float64(len(ct.copies)))
		}
		vTotals = append(vTotals, last.Sub(t0).Seconds())
		postSecs = append(postSecs, posted.Sub(t0).Seconds())
		vCPU.add(readHostCPU().sub(c0))
	}
	// pool runs `docker run --rm [extra] pass` for each name through `slots` workers and returns
	// when each started and ended.
	pool := func(names []string, extra ...string) (cliStart, cliEnd map[string]time.Time) {
		work := make(chan string)
		errs := make(chan error, len(names))
		var wg sync.WaitGroup
		var mu sync.Mutex
		cliStart, cliEnd = map[string]time.Time{}, map[string]time.Time{}
		for range slots {
			wg.Go(func() {
				for name := range work {
					args := append(append([]string{"run", "--rm", "--name", name}, extra...), passImage)
					start := time.Now()
					out, err := exec.Command(dockerCLI, args...).CombinedOutput()
					end := time.Now()
					if err != nil || !bytes.Contains(out, []byte("4 tests, 0 failed")) {
						errs <- fmt.Errorf("docker run %s: %v\n%s", name, err, out)
						continue
					}
					mu.Lock()
					cliStart[name], cliEnd[name] = start, end
					mu.Unlock()
				}
			})
		}
		for _, name := range names {
			work <- name
		}
		close(work)
		wg.Wait()
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
		return cliStart, cliEnd
	}
	dockerSide := func() {
		c0 := readHostCPU()
		cliNames := make([]string, n)
		for i := range n {
			cliNames[i] = rb.cliName(fmt.Sprintf("drain-%d-%d", iter, i))
		}
		d0 := time.Now()
		cliStart, cliEnd := pool(cliNames)
		dTotals = append(dTotals, time.Since(d0).Seconds())
		for _, name := range cliNames {
			ct := rb.eng.wait(b, name)
			dPhases.add(dpCreate, ms(cliStart[name], ct.create))
			dPhases.add(dpStart, ms(ct.create, ct.start))
			dPhases.add(dpRun, ms(ct.start, ct.die))
			dPhases.add(dpAfter, ms(ct.die, ct.destroy))
			dPhases.add(dpFinal, ms(ct.die, cliEnd[name]))
			dPhases.add(dpSlot, ms(cliStart[name], cliEnd[name]))
			dBusy += cliEnd[name].Sub(cliStart[name])
		}
		dCPU.add(readHostCPU().sub(c0))
	}
	// The confined side (VERDICT_BENCH_DRAIN_CONFINED=1) is the same pool with the settings the
	// docker backend gives a run's container (hostConfig in internal/run/docker; keep in step),
	// each container in a namespace of its own on the run network: what confinement costs the
	// engine without the backend's network sandboxes.
	var cTotals []float64
	var cPhases phaseSet
	sides := []func(){verdictSide, dockerSide}
	if os.Getenv("VERDICT_BENCH_DRAIN_CONFINED") == "1" {
		confined := confinedRunFlags(b)
		sides = append(sides, func() {
			names := make([]string, n)
			for i := range n {
				names[i] = rb.cliName(fmt.Sprintf("drainc-%d-%d", iter, i))
			}
			c0 := time.Now()
			cliStart, cliEnd := pool(names, confined...)
			cTotals = append(cTotals, time.Since(c0).Seconds())
			for _, name := range names {
				ct := rb.eng.wait(b, name)
				cPhases.add(dpCreate, ms(cliStart[name], ct.create))
				cPhases.add(dpStart, ms(ct.create, ct.start))
				cPhases.add(dpRun, ms(ct.start, ct.die))
				cPhases.add(dpAfter, ms(ct.die, ct.destroy))
				cPhases.add(dpFinal, ms(ct.die, cliEnd[name]))
				cPhases.add(dpSlot, ms(cliStart[name], cliEnd[name]))
			}
		})
	}
	for b.Loop() {
		iter++
		// Load from elsewhere drifts: the sides take turns going first.
		for k := range sides {
			sides[(iter-1+k)%len(sides)]()
		}
	}
	if len(cTotals) > 0 {
		ct := mean(cTotals)
		b.ReportMetric(float64(n)/ct, "confined-runs/s")
		b.ReportMetric(ct/mean(vTotals), "throughput-ratio-vs-confined")
		b.ReportMetric(mean(dTotals)/ct, "confined-ratio") // confined runs/s over plain docker's
	}
	vt, dt := mean(vTotals), mean(dTotals)
	b.ReportMetric(vt, "verdict-total-s")
	b.ReportMetric(dt, "docker-total-s")
	b.ReportMetric(float64(n)/vt, "verdict-runs/s")
	b.ReportMetric(float64(n)/dt, "docker-runs/s")
	b.ReportMetric(dt/vt, "throughput-ratio")
	b.ReportMetric(mean(copies), "verdict-copies/run")
	if vCPU.ok && dCPU.ok {
		runs := float64(n * iter)
		b.ReportMetric(vCPU.engine.Seconds()*1000/runs, "verdict-engine-cpu-ms/run")
		b.ReportMetric(dCPU.engine.Seconds()*1000/runs, "docker-engine-cpu-ms/run")
		b.ReportMetric(vCPU.total().Seconds()*1000/runs, "verdict-host-cpu-ms/run")
		b.ReportMetric(dCPU.total().Seconds()*1000/runs, "docker-host-cpu-ms/run")
	}
	b.ReportMetric(pct(vPhases.vals[dpAfter], 50), "verdict-exit-to-destroy-ms")
	b.ReportMetric(pct(dPhases.vals[dpAfter], 50), "docker-exit-to-destroy-ms")
	vUse := 100 * vBusy.Seconds() / (slots * sum(vTotals))
	dUse := 100 * dBusy.Seconds() / (slots * sum(dTotals))
	b.ReportMetric(vUse, "verdict-slots-busy-%")
	b.ReportMetric(dUse, "docker-slots-busy-%")
	// At most 9 lines: without -v the testing package cuts a benchmark's log at 10.
	heads, sets := []string{"Verdict", "docker run --rm"}, []phaseSet{vPhases, dPhases}
	if len(cTotals) > 0 {
		heads, sets = append(heads, "confined docker run"), append(sets, cPhases)
	}
	cpu := "host CPU not measured (the engine's daemons are not on this host)"
	if vCPU.ok && dCPU.ok {
		runs := float64(n * iter)
		perRun := func(d time.Duration) float64 { return d.Seconds() * 1000 / runs }
		cpu = fmt.Sprintf("host CPU per run %.0f / %.0f ms, of it dockerd+containerd %.0f / %.0f ms",
			perRun(vCPU.total()), perRun(dCPU.total()), perRun(vCPU.engine), perRun(dCPU.engine))
	}
	b.Logf("%d runs per side (%d rounds), %d at a time; throughput %.2f× docker's; POSTs took %.1f s; slots busy %.0f%% / %.0f%%; %.1f report copies per run; %s\n%s",
		n, iter, slots, dt/vt, mean(postSecs), vUse, dUse, mean(copies), cpu,
		table("per run, ms, median (p99)", heads, sets...))
}

// Phases of one drained run.
const (
	dpCreate = "claimed / exec'd → container created"
	dpStart  = "created → started"
	dpRun    = "started → exited"
	dpAfter  = "exited → destroyed"
	// The engine logs archive-path once a copy is set up (container mounted, tar started),
	// before the archive streams.
	dpToCopy = "  exited → report copy (archive event)"
	dpFinal  = "exited → final event / CLI exit"
	// Verdict's runner frees the slot when the container exits; the CLI's when it exits.
	dpSlot = "claimed / exec'd → exited / CLI exit (slot)"
)

// ---------------------------------------------------------------------------------------------
// What the runner does between a container's exit and its removal.

// BenchmarkRunReportCollect times, on exited containers of the pass image, the engine calls the
// runner makes after the exit, through the same docker backend: one CopyOut of the whole /app
// (what the runner does), then Remove. For comparison, one CopyOut per default report folder
// (domain.DefaultReportFolders, read to the end; a missing folder costs an extra inspect to tell
// "no such path" from "no such container"), which is what the runner falls back to for an image
// whose /app is big. It explains most of "exited → destroyed" in BenchmarkRunDrain.
func BenchmarkRunReportCollect(b *testing.B) {
	testenv.DockerHost(b)
	be, err := docker.New("", docker.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close()
	ctx := context.Background()
	if err := be.Ping(ctx); err != nil {
		b.Fatal(err)
	}
	prefix := "vbench-" + domain.RandomHex(4) + "-collect-"
	var logsEnd, present, missing, folders, whole, remove []float64
	n := 0
	for b.Loop() {
		for range 4 {
			n++
			id, err := be.Start(ctx, run.Spec{Name: fmt.Sprintf("%s%d", prefix, n), Image: passImage, Args: []string{"all"},
				Labels: map[string]string{"dev.verdict.bench": "true"}})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = be.Remove(context.Background(), id) })
			// Follow the logs as the runner does (right after Start), to see when the stream
			// ends after the exit: the runner waits for that before it copies reports.
			logs, err := be.Logs(ctx, id)
			if err != nil {
				b.Fatal(err)
			}
			eof := make(chan time.Time, 1)
			go func() { _, _ = io.Copy(io.Discard, logs); eof <- time.Now(); logs.Close() }()
			if code, err := be.Wait(ctx, id); err != nil || code != 0 {
				b.Fatalf("pass container: exit %d, %v", code, err)
			}
			exited := time.Now()
			select {
			case at := <-eof:
				logsEnd = append(logsEnd, ms(exited, at))
			case <-time.After(15 * time.Second):
				b.Fatal("the log stream did not end 15 s after the container exited")
			}
			t0 := time.Now()
			for _, f := range domain.DefaultReportFolders {
				t := time.Now()
				rc, err := be.CopyOut(ctx, id, "/app/"+f)
				if errors.Is(err, run.ErrPathNotFound) {
					missing = append(missing, ms(t, time.Now()))
					continue
				}
				if err != nil {
					b.Fatal(err)
				}
				if _, err := io.Copy(io.Discard, rc); err != nil {
					b.Fatal(err)
				}
				rc.Close()
				present = append(present, ms(t, time.Now()))
			}
			folders = append(folders, ms(t0, time.Now()))
			t0 = time.Now()
			rc, err := be.CopyOut(ctx, id, "/app")
			if err != nil {
				b.Fatal(err)
			}
			if _, err := io.Copy(io.Discard, rc); err != nil {
				b.Fatal(err)
			}
			rc.Close()
			whole = append(whole, ms(t0, time.Now()))
			t0 = time.Now()
			if err := be.Remove(ctx, id); err != nil {
				b.Fatal(err)
			}
			remove = append(remove, ms(t0, time.Now()))
		}
	}
	b.ReportMetric(pct(folders, 50), "copy-6-folders-ms")
	b.ReportMetric(pct(whole, 50), "copy-app-once-ms")
	b.ReportMetric(pct(remove, 50), "remove-ms")
	b.Logf("ms, median / p99 / min / max\n  log stream end - Wait return   %s\n"+
		"  CopyOut of a present folder   %s\n  CopyOut of a missing folder   %s\n"+
		"  all %d default folders         %s\n  one CopyOut of /app           %s\n  Remove                        %s",
		summary(logsEnd), summary(present), summary(missing), len(domain.DefaultReportFolders), summary(folders), summary(whole), summary(remove))
}

// ---------------------------------------------------------------------------------------------
// Shared fixtures.

// runBench is one Verdict with its embedded runner, an enterprise organization, a Socket.IO
// client of it, and a Docker events recorder.
type runBench struct {
	h      *harness
	auth   auth
	live   *liveWatch
	eng    *engineTracker
	prefix string // of the CLI containers' names
}

func newRunBench(b *testing.B, slots int, followLogs bool) *runBench {
	b.Helper()
	testenv.DockerHost(b)
	if _, err := os.Stat(dockerCLI); err != nil {
		b.Fatalf("the docker CLI: %v", err)
	}
	for _, img := range []string{passImage, slowImage} {
		if out, err := exec.Command(dockerCLI, "image", "inspect", "--format", "{{.Id}}", img).CombinedOutput(); err != nil {
			b.Fatalf("image %s is missing (examples/suites/build.sh builds it): %v %s", img, err, out)
		}
	}
	dialect := os.Getenv("VERDICT_BENCH_DB")
	if dialect == "" {
		dialect = "sqlite"
	}
	// The default lease (30 s), as in production: a loaded machine must not expire leases.
	h := newHarness(b, harnessOpts{dialect: dialect, realClock: true, workers: true,
		env: map[string]string{"VERDICT_RUNNER_SLOTS": strconv.Itoa(slots)}})
	acc := h.signup("bench@example.com", "Bench Co")
	if err := h.app.Store.Organizations().UpdatePlan(context.Background(), acc.orgID, domain.PlanEnterprise, domain.Billing{}); err != nil {
		b.Fatal(err)
	}
	rb := &runBench{h: h, auth: bearer(acc.token), prefix: "vbench-" + domain.RandomHex(4) + "-"}
	rb.eng = newEngineTracker(b, acc.orgID, rb.prefix, followLogs)
	rb.live = dialLive(b, h.srv.URL, acc.token)
	return rb
}

func (rb *runBench) cliName(s string) string { return rb.prefix + s }

func envInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		b.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

func anyMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// --- Socket.IO client side ---

type stampedLine struct {
	text string
	at   time.Time
}

// liveRun is what the Socket.IO client saw of one run; every time is the arrival at the client.
type liveRun struct {
	running, firstLog, final time.Time
	firstChunk               string
	lines                    []stampedLine
	status, errText          string
	startedAt                time.Time // the run's record: when it was claimed (server clock)
	done                     chan struct{}
}

// liveWatch records the events of one organization's Socket.IO room, stamping each on arrival
// in the client's callback (not when a consumer gets round to it).
type liveWatch struct {
	mu   sync.Mutex
	runs map[string]*liveRun
}

func (w *liveWatch) get(task string) *liveRun {
	r := w.runs[task]
	if r == nil {
		r = &liveRun{done: make(chan struct{})}
		w.runs[task] = r
	}
	return r
}

func dialLive(b *testing.B, url, token string) *liveWatch {
	b.Helper()
	w := &liveWatch{runs: map[string]*liveRun{}}
	opts := sio.DefaultOptions()
	opts.SetForceNew(true)
	opts.SetReconnection(false)
	opts.SetTransports(types.NewSet(sio.WebSocket))
	opts.SetAuth(map[string]any{"token": token})
	// Connect only once the listener is in place: with auto-connect, auth-success can arrive
	// before OnAny is registered, and is then lost.
	opts.SetAutoConnect(false)
	sock, err := sio.Connect(url, opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { sock.Disconnect() })
	authed := make(chan string, 1)
	sock.OnAny(func(args ...any) {
		at := time.Now()
		name, _ := args[0].(string)
		var data map[string]any
		if len(args) > 1 {
			data, _ = args[1].(map[string]any)
		}
		switch name {
		case "auth-success", "auth-error":
			select {
			case authed <- name:
			default:
			}
			return
		}
		task, _ := data["taskId"].(string)
		if task == "" {
			return
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		r := w.get(task)
		switch name {
		case "execution-log":
			chunk, _ := data["log"].(string)
			if r.firstLog.IsZero() {
				r.firstLog, r.firstChunk = at, chunk
			}
			for l := range strings.SplitSeq(strings.TrimSuffix(chunk, "\n"), "\n") {
				r.lines = append(r.lines, stampedLine{l, at})
			}
		case "execution-updated":
			st, _ := data["status"].(string)
			if st == string(domain.ExecRunning) && r.running.IsZero() {
				r.running = at
			}
			if domain.ExecStatus(st).Final() && r.final.IsZero() {
				r.final, r.status = at, st
				r.errText, _ = data["error"].(string)
				if s, _ := data["startedAt"].(string); s != "" {
					r.startedAt, _ = time.Parse(time.RFC3339Nano, s)
				}
				close(r.done)
			}
		}
	})
	sock.Connect()
	select {
	case a := <-authed:
		if a != "auth-success" {
			b.Fatalf("Socket.IO: %s", a)
		}
	case <-time.After(30 * time.Second):
		b.Fatal("Socket.IO: no auth answer within 30s")
	}
	return w
}

// waitFinal waits for the run's final execution-updated event and returns what was seen of it.
// A run that the API says is final but whose event never came is a failure too.
func (w *liveWatch) waitFinal(b *testing.B, h *harness, a auth, task string, timeout time.Duration) liveRun {
	b.Helper()
	w.mu.Lock()
	r := w.get(task)
	w.mu.Unlock()
	select {
	case <-r.done:
	case <-time.After(timeout):
		got := h.do("GET", "/api/executions/"+task, a, nil)
		b.Fatalf("run %s: no final execution-updated event within %s; the API says %s", task, timeout, got.raw)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	cp := *r
	cp.lines = slices.Clone(r.lines)
	return cp
}

// --- Docker engine side ---

// ctrTimes is what the engine said about one container: its event times, and (when followed)
// the engine's timestamp of each log line, by the line's text.
type ctrTimes struct {
	name, id                    string
	create, start, die, destroy time.Time
	copies                      []time.Time // archive-path events: a CopyOut started
	stamps                      map[string]time.Time
	first                       time.Time // stamp of the first line
	followErr                   error
	followed                    chan struct{}
}

func (c ctrTimes) firstStamp() time.Time { return c.first }

// engineTracker records the container events of the benchmark's own containers: Verdict's (by
// the organization and task labels) and the CLI's (by name prefix).
type engineTracker struct {
	cli    *client.Client
	orgID  string
	prefix string
	follow bool
	mu     sync.Mutex
	byKey  map[string]*ctrTimes
	seen   chan struct{} // pulsed on every recorded event
}

func newEngineTracker(b *testing.B, orgID, prefix string, follow bool) *engineTracker {
	b.Helper()
	cli, err := client.New(client.FromEnv)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	b.Cleanup(func() { cancel(); wg.Wait(); cli.Close() })
	if _, err := cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		b.Fatal(err)
	}
	e := &engineTracker{cli: cli, orgID: orgID, prefix: prefix, follow: follow, byKey: map[string]*ctrTimes{}, seen: make(chan struct{}, 1)}
	res := cli.Events(ctx, client.EventsListOptions{Filters: make(client.Filters).Add("type", "container")})
	wg.Go(func() {
		for {
			select {
			case m := <-res.Messages:
				e.record(ctx, &wg, m)
			case <-res.Err:
				return
			}
		}
	})
	return e
}

func (e *engineTracker) key(m events.Message) string {
	a := m.Actor.Attributes
	if a[run.LabelOrg] == e.orgID && a[run.LabelTask] != "" {
		return a[run.LabelTask]
	}
	if strings.HasPrefix(a["name"], e.prefix) {
		return a["name"]
	}
	return ""
}

func (e *engineTracker) record(ctx context.Context, wg *sync.WaitGroup, m events.Message) {
	k := e.key(m)
	if k == "" {
		return
	}
	at := time.Unix(0, m.TimeNano)
	e.mu.Lock()
	c := e.byKey[k]
	if c == nil {
		c = &ctrTimes{name: m.Actor.Attributes["name"], id: m.Actor.ID, stamps: map[string]time.Time{}, followed: make(chan struct{})}
		if !e.follow {
			close(c.followed)
		}
		e.byKey[k] = c
	}
	if m.Actor.ID != c.id && m.Action != events.ActionCreate {
		// Events of a container this key no longer names (see create below).
		e.mu.Unlock()
		return
	}
	switch m.Action {
	case events.ActionCreate:
		// The backend's first create may be refused after the engine made the container (the
		// disk quota probe) and then removed: the key follows the latest container.
		c.id, c.create, c.start, c.die, c.destroy, c.copies = m.Actor.ID, at, time.Time{}, time.Time{}, time.Time{}, nil
	case events.ActionStart:
		c.start = at
		if e.follow {
			wg.Go(func() { e.followLogs(ctx, c) })
		}
	case events.ActionDie:
		c.die = at
	case events.ActionDestroy:
		c.destroy = at
	case events.ActionArchivePath:
		c.copies = append(c.copies, at)
	}
	e.mu.Unlock()
	select {
	case e.seen <- struct{}{}:
	default:
	}
}

// followLogs reads the container's whole log with the engine's timestamps.
func (e *engineTracker) followLogs(ctx context.Context, c *ctrTimes) {
	defer close(c.followed)
	rc, err := e.cli.ContainerLogs(ctx, c.id, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Follow: true, Timestamps: true})
	if err != nil {
		e.mu.Lock()
		c.followErr = err
		e.mu.Unlock()
		return
	}
	defer rc.Close()
	pr, pw := io.Pipe()
	go func() { _, err := stdcopy.StdCopy(pw, pw, rc); pw.CloseWithError(err) }()
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		ts, text, ok := strings.Cut(sc.Text(), " ")
		t, err := time.Parse(time.RFC3339Nano, ts)
		if !ok || err != nil {
			continue
		}
		e.mu.Lock()
		if c.first.IsZero() {
			c.first = t
		}
		c.stamps[text] = t
		e.mu.Unlock()
	}
	if err := sc.Err(); err != nil {
		e.mu.Lock()
		c.followErr = err
		e.mu.Unlock()
	}
	_, _ = io.Copy(io.Discard, pr)
}

// wait returns the container's record once the engine has reported its destruction and the log
// follower (if any) has finished.
func (e *engineTracker) wait(b *testing.B, key string) ctrTimes {
	b.Helper()
	deadline := time.After(30 * time.Second)
	for {
		e.mu.Lock()
		c := e.byKey[key]
		var followed chan struct{}
		if c != nil && !c.destroy.IsZero() {
			followed = c.followed
		}
		e.mu.Unlock()
		if followed != nil {
			select {
			case <-followed:
			case <-deadline:
				b.Fatalf("container of %s: the log follower did not end", key)
			}
			e.mu.Lock()
			cp := *c
			cp.copies = slices.Clone(c.copies)
			cp.stamps = make(map[string]time.Time, len(c.stamps))
			for k, v := range c.stamps {
				cp.stamps[k] = v
			}
			e.mu.Unlock()
			if cp.create.IsZero() || cp.start.IsZero() || cp.die.IsZero() {
				b.Fatalf("container of %s: incomplete engine events %+v", key, cp)
			}
			if e.follow && cp.first.IsZero() {
				b.Fatalf("container of %s: no timestamped log line (follower: %v)", key, cp.followErr)
			}
			return cp
		}
		select {
		case <-e.seen:
		case <-time.After(100 * time.Millisecond):
		case <-deadline:
			b.Fatalf("container of %s: no destroy event from the engine within 30s", key)
		}
	}
}

// --- docker CLI side ---

type cliRun struct {
	cmd    *exec.Cmd
	t0     time.Time
	done   time.Time
	out    *bufio.Reader
	stderr bytes.Buffer
	text   strings.Builder
}

// startCLI execs `docker run --rm --name name -e K=V... image`; t0 is the moment before exec.
func startCLI(b *testing.B, name, image string, vars map[string]string) *cliRun {
	b.Helper()
	args := []string{"run", "--rm", "--name", name}
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		args = append(args, "-e", k+"="+vars[k])
	}
	c := &cliRun{cmd: exec.Command(dockerCLI, append(args, image)...)}
	c.cmd.Stderr = &c.stderr
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	c.out = bufio.NewReader(out)
	c.t0 = time.Now()
	if err := c.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	return c
}

// next reads one stdout line, stamped on arrival.
func (c *cliRun) next(b *testing.B) stampedLine {
	b.Helper()
	l, err := c.out.ReadString('\n')
	at := time.Now()
	if err != nil {
		_ = c.cmd.Wait()
		b.Fatalf("docker run: stdout ended (%v) after %q; stderr: %s", err, c.text.String(), c.stderr.String())
	}
	c.text.WriteString(l)
	return stampedLine{strings.TrimSuffix(l, "\n"), at}
}

// finish reads the rest of stdout and requires exit 0 and want in the output.
func (c *cliRun) finish(b *testing.B, want string) {
	b.Helper()
	rest, _ := io.ReadAll(c.out)
	c.text.Write(rest)
	err := c.cmd.Wait()
	c.done = time.Now()
	if err != nil || !strings.Contains(c.text.String(), want) {
		b.Fatalf("docker run: %v; stdout:\n%s\nstderr: %s", err, c.text.String(), c.stderr.String())
	}
}

// --- host CPU ---

// hostCPU is CPU time spent on this host: by the engine's daemons (dockerd, containerd), by
// this process (Verdict, the Socket.IO client, the engine tracker) and by its waited-for
// children (the docker CLIs). The containers' own processes and their shims are left out. ok is
// false when the engine's daemons cannot be seen (a remote engine).
type hostCPU struct {
	engine, self, children time.Duration
	ok                     bool
	sums                   int // of add
}

func (c hostCPU) total() time.Duration { return c.engine + c.self + c.children }

func (c hostCPU) sub(o hostCPU) hostCPU {
	return hostCPU{engine: c.engine - o.engine, self: c.self - o.self, children: c.children - o.children, ok: c.ok && o.ok}
}

func (c *hostCPU) add(o hostCPU) {
	c.engine, c.self, c.children = c.engine+o.engine, c.self+o.self, c.children+o.children
	c.ok = o.ok && (c.ok || c.sums == 0)
	c.sums++
}

// clockTick is Linux's USER_HZ, the unit of /proc/<pid>/stat times: 100 on every platform Go
// runs Linux on.
const clockTick = 10 * time.Millisecond

func readHostCPU() hostCPU {
	var c hostCPU
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		if _, err := strconv.Atoi(d.Name()); err != nil {
			continue
		}
		comm, err := os.ReadFile("/proc/" + d.Name() + "/comm")
		if name := strings.TrimSpace(string(comm)); err != nil || (name != "dockerd" && name != "containerd") {
			continue
		}
		stat, err := os.ReadFile("/proc/" + d.Name() + "/stat")
		if err != nil {
			continue
		}
		// Fields after the command (which may hold spaces) start at state; utime and stime are
		// the 14th and 15th fields of the line.
		_, rest, _ := strings.Cut(string(stat), ") ")
		f := strings.Fields(rest)
		if len(f) < 13 {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		s, _ := strconv.ParseInt(f[12], 10, 64)
		c.engine += time.Duration(u+s) * clockTick
		c.ok = true
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		c.self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	if syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru) == nil {
		c.children = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return c
}

// --- figures ---

func ms(from, to time.Time) float64 {
	if from.IsZero() || to.IsZero() {
		return math.NaN()
	}
	return float64(to.Sub(from)) / float64(time.Millisecond)
}

// pct is the nearest-rank percentile of the finite values (NaN when there are none). With few
// samples p99 is the maximum.
func pct(xs []float64, p float64) float64 {
	s := make([]float64, 0, len(xs))
	for _, x := range xs {
		if !math.IsNaN(x) {
			s = append(s, x)
		}
	}
	if len(s) == 0 {
		return math.NaN()
	}
	slices.Sort(s)
	k := int(math.Ceil(p/100*float64(len(s)))) - 1
	return s[max(0, min(k, len(s)-1))]
}

func sum(xs []float64) float64 {
	t := 0.0
	for _, x := range xs {
		t += x
	}
	return t
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	t := 0.0
	for _, x := range xs {
		t += x
	}
	return t / float64(len(xs))
}

func fmtList(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf("%.1f", x)
	}
	return strings.Join(parts, " ")
}

func summary(xs []float64) string {
	return fmt.Sprintf("%7.1f / %7.1f / %7.1f / %7.1f  (n=%d)", pct(xs, 50), pct(xs, 99), pct(xs, 0), pct(xs, 100), len(xs))
}

// phaseSet collects named samples and prints them in the order first added.
type phaseSet struct {
	names []string
	vals  map[string][]float64
}

func (p *phaseSet) add(name string, v float64) {
	if p.vals == nil {
		p.vals = map[string][]float64{}
	}
	if _, ok := p.vals[name]; !ok {
		p.names = append(p.names, name)
	}
	p.vals[name] = append(p.vals[name], v)
}

// table prints the phases of the first set (and any the others add) as rows, one column per
// set, each cell "median (p99)".
func table(title string, heads []string, sets ...phaseSet) string {
	var names []string
	for _, p := range sets {
		for _, n := range p.names {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "  %-42s", title)
	for _, h := range heads {
		fmt.Fprintf(&sb, " %20s", h)
	}
	for _, n := range names {
		fmt.Fprintf(&sb, "\n  %-42s", n)
		for _, p := range sets {
			cell := "-"
			if v, ok := p.vals[n]; ok {
				cell = fmt.Sprintf("%.1f (%.1f)", pct(v, 50), pct(v, 99))
			}
			fmt.Fprintf(&sb, " %20s", cell)
		}
	}
	return sb.String()
}
