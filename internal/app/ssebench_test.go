//go:build integration

package app_test

// BenchmarkSSEFollowers: 1,000 SSE followers of one chatty run.
//
//	go test -run '^$' -bench BenchmarkSSEFollowers -benchtime 1x -v ./internal/app
//
// The server (the real App with its runner, over SQLite and the Docker engine) runs in the
// benchmark's process; the 1,000 clients run in a child process (this test binary again, as
// sseFollowersClient), so the server's heap and RSS are its own. An in-process follower of
// the broadcaster stamps when each log event is published; each client stamps when it reads the
// event ending at the same offset, and the difference is the event's latency from publication
// to a client (the same host's clock). Knobs: VERDICT_BENCH_FOLLOWERS (default 1000),
// VERDICT_BENCH_LINES (default 20000), VERDICT_BENCH_INTERVAL_MS (default 1).

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"verdict/internal/follow"
)

func BenchmarkSSEFollowers(b *testing.B) {
	followers := envInt(b, "VERDICT_BENCH_FOLLOWERS", 1000)
	lines := envInt(b, "VERDICT_BENCH_LINES", 20000)
	interval := envInt(b, "VERDICT_BENCH_INTERVAL_MS", 1)
	for b.Loop() {
		h := newHarness(b, harnessOpts{dialect: "sqlite", realClock: true, workers: true, lease: 2 * time.Second})
		admin := h.signup("bench@example.com", "Bench Co")
		runtime.GC()
		base := memNow()

		// The run waits for the followers: it is queued once they are all connected.
		task := "chatty"
		out, err := os.CreateTemp(b.TempDir(), "receipts")
		if err != nil {
			b.Fatal(err)
		}
		cmd := exec.Command(os.Args[0]) // TestMain runs only the followers in it
		cmd.Env = append(os.Environ(), "VERDICT_SSE_CLIENT_URL="+h.srv.URL+"/api/executions/"+task+"/events",
			"VERDICT_SSE_CLIENT_TOKEN="+admin.token, "VERDICT_SSE_CLIENT_N="+strconv.Itoa(followers),
			"VERDICT_SSE_CLIENT_OUT="+out.Name())
		cmd.Stderr = os.Stderr
		stdout, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		// Followers of a run not queued yet get 404: queue it first, then connect at once.
		r := h.do("POST", "/api/executions", bearer(admin.token), map[string]any{"image": slowImage, "taskId": task,
			"envVars": map[string]any{"LINES": strconv.Itoa(lines), "INTERVAL_MS": strconv.Itoa(interval)}})
		expect(b, r, 201, "")
		ref := h.app.Follow.Follow(admin.orgID, task)
		published := map[int64]time.Time{}
		var refDone sync.WaitGroup
		refDone.Add(1)
		go func() {
			defer refDone.Done()
			for {
				ev, ok := ref.Next(context.Background())
				if !ok {
					return
				}
				if ev.Name == follow.EventLog {
					published[ev.Offset+int64(len(ev.Log))] = time.Now()
				}
				if ev.Final {
					ref.Close()
					return
				}
			}
		}()

		// Sample the server's memory while the clients follow.
		stop := make(chan struct{})
		var peak memStat
		var maxFollowers int64
		maxRuns := 0
		var sampler sync.WaitGroup
		sampler.Add(1)
		go func() {
			defer sampler.Done()
			t := time.NewTicker(50 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
					m := memNow()
					peak.heap = max(peak.heap, m.heap)
					peak.rss = max(peak.rss, m.rss)
					st := h.app.Follow.Stats()
					maxFollowers = max(maxFollowers, st.Followers)
					maxRuns = max(maxRuns, st.Runs)
				}
			}
		}()
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			b.Log("client: " + sc.Text())
		}
		if err := cmd.Wait(); err != nil {
			b.Fatalf("clients: %v", err)
		}
		close(stop)
		sampler.Wait()
		refDone.Wait()
		st := h.app.Follow.Stats()

		// Latencies: each client's receipt of the event ending at an offset the broadcaster
		// published, minus the publication.
		f, err := os.Open(out.Name())
		if err != nil {
			b.Fatal(err)
		}
		var lat []time.Duration
		rs := bufio.NewScanner(f)
		for rs.Scan() {
			fields := strings.Fields(rs.Text())
			if len(fields) != 2 {
				continue
			}
			end, _ := strconv.ParseInt(fields[0], 10, 64)
			at, _ := strconv.ParseInt(fields[1], 10, 64)
			if p, ok := published[end]; ok {
				lat = append(lat, time.Unix(0, at).Sub(p))
			}
		}
		f.Close()
		slices.Sort(lat)
		if len(lat) == 0 {
			b.Fatal("no latency samples")
		}
		pct := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
		stored := h.storedLog(bearer(admin.token), task)
		b.Logf("followers %d (at most %d at once with the reference, in %d topic(s), %d upstream subscriptions), log %d bytes in %d published events, dropped %d",
			followers, maxFollowers, maxRuns, st.Upstream, len(stored), len(published), st.Dropped)
		b.Logf("server heap in use: %.1f MiB before, %.1f MiB peak (+%.1f KiB per follower); RSS %.1f MiB before, %.1f MiB peak",
			mib(base.heap), mib(peak.heap), float64(peak.heap-min(base.heap, peak.heap))/1024/float64(followers), mib(base.rss), mib(peak.rss))
		b.Logf("log latency, publication → client, over %d receipts: p50 %s, p90 %s, p99 %s, max %s",
			len(lat), pct(0.50), pct(0.90), pct(0.99), lat[len(lat)-1])
		b.ReportMetric(float64(pct(0.99).Microseconds())/1000, "p99-ms")
		b.ReportMetric(mib(peak.heap), "peak-heap-MiB")
		b.ReportMetric(mib(peak.rss), "peak-rss-MiB")
	}
}

type memStat struct{ heap, rss uint64 }

func mib(n uint64) float64 { return float64(n) / (1 << 20) }

func memNow() memStat {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	s := memStat{heap: m.HeapInuse}
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
				kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				s.rss = kb << 10
			}
		}
	}
	return s
}

// TestMain runs the tests, or, in the process BenchmarkSSEFollowers starts (the test binary
// again, with VERDICT_SSE_CLIENT_URL set), only its followers.
func TestMain(m *testing.M) {
	if url := os.Getenv("VERDICT_SSE_CLIENT_URL"); url != "" {
		os.Exit(sseFollowersClient(url))
	}
	os.Exit(m.Run())
}

// sseFollowersClient is BenchmarkSSEFollowers' client process: each of N clients follows url to
// the end, and every log event's end offset and receipt time (Unix nanoseconds) is written to
// the output file. It returns the process's exit code.
func sseFollowersClient(url string) int {
	n, _ := strconv.Atoi(os.Getenv("VERDICT_SSE_CLIENT_N"))
	token := os.Getenv("VERDICT_SSE_CLIENT_TOKEN")
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: -1, DisableCompression: true}}
	type receipt struct {
		end int64
		at  int64
	}
	results := make([][]receipt, n)
	var wg sync.WaitGroup
	var mu sync.Mutex
	failed := 0
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest("GET", url, nil)
			req.Header.Set("Authorization", "Bearer "+token)
			res, err := client.Do(req)
			if err != nil || res.StatusCode != 200 {
				mu.Lock()
				failed++
				mu.Unlock()
				return
			}
			defer res.Body.Close()
			var end int64
			final := false
			_ = readSSE(res.Body, func(ev sseEvent) bool {
				now := time.Now().UnixNano()
				switch ev.event {
				case "execution-log":
					var d struct {
						Log    string `json:"log"`
						Offset int64  `json:"offset"`
					}
					if json.Unmarshal([]byte(ev.data), &d) == nil {
						end = d.Offset + int64(len(d.Log))
						results[i] = append(results[i], receipt{end, now})
					}
				case "execution-updated":
					var v struct {
						Status string `json:"status"`
					}
					_ = json.Unmarshal([]byte(ev.data), &v)
					final = isFinal(v.Status)
				}
				return true
			})
			if !final {
				mu.Lock()
				failed++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	f, err := os.Create(os.Getenv("VERDICT_SSE_CLIENT_OUT"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	w := bufio.NewWriter(f)
	total := 0
	for _, rs := range results {
		for _, r := range rs {
			fmt.Fprintf(w, "%d %d\n", r.end, r.at)
			total++
		}
	}
	if err := w.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	f.Close()
	fmt.Printf("%d clients, %d without the final update, %d log events read\n", n, failed, total)
	if failed > 0 {
		return 1
	}
	return 0
}
