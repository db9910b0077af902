package realtime

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"verdict/internal/testenv"
)

// benchSetup returns the hub to Emit on and a WebSocket member of "acme" connected to the hub
// named by receiverOn: in memory both are the same hub; with Redis the member sits on another
// replica, so each event crosses Redis.
func benchSetup(b *testing.B, mode string) (emitter *Hub, receiver *sioClient) {
	b.Helper()
	if mode == "memory" {
		h, srv := start(b, Options{})
		return h, member(b, srv.URL, "websocket", "acme", "u1")
	}
	url, prefix := testenv.RedisURL(b), testenv.KeyPrefix(b)
	emitter, _ = start(b, Options{RedisURL: url, RedisPrefix: prefix})
	_, srv := start(b, Options{RedisURL: url, RedisPrefix: prefix})
	receiver = member(b, srv.URL, "websocket", "acme", "u1")
	// Wait until the receiver's replica is subscribed.
	deadline := time.Now().Add(10 * time.Second)
	for {
		emitter.Emit("acme", "probe", nil)
		select {
		case <-receiver.packets:
			time.Sleep(200 * time.Millisecond)
			for len(receiver.packets) > 0 {
				<-receiver.packets
			}
			return emitter, receiver
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			b.Fatal("Redis fan-out not live after 10s")
		}
	}
}

// seqs returns the sequence numbers that start the lines of an execution-log event.
func seqs(p string) []int {
	name, arg, ok := parseEvent(p)
	if !ok || name != EventExecutionLog {
		return nil
	}
	var e ExecutionLog
	if json.Unmarshal(arg, &e) != nil {
		return nil
	}
	var out []int
	for line := range strings.SplitSeq(strings.TrimSuffix(e.Log, "\n"), "\n") {
		n, err := strconv.Atoi(line[:strings.IndexByte(line, ' ')])
		if err != nil {
			return nil
		}
		out = append(out, n)
	}
	return out
}

func reportPercentiles(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	b.ReportMetric(us(lat[len(lat)/2]), "p50-µs")
	b.ReportMetric(us(lat[len(lat)*99/100]), "p99-µs")
	b.ReportMetric(us(lat[len(lat)-1]), "max-µs")
}

// BenchmarkEmitLatency: one event at a time, from Emit until the client's reader has it.
func BenchmarkEmitLatency(b *testing.B) {
	for _, mode := range []string{"memory", "redis"} {
		b.Run(mode, func(b *testing.B) {
			h, c := benchSetup(b, mode)
			arrived := make(chan time.Time, 1)
			c.onPacket(func(_ string, at time.Time) { arrived <- at })
			line := strings.Repeat("x", 120) + "\n"
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				t0 := time.Now()
				h.Emit("acme", EventExecutionLog, ExecutionLog{TaskID: strconv.Itoa(i), Log: line})
				select {
				case at := <-arrived:
					lat = append(lat, at.Sub(t0))
				case <-time.After(10 * time.Second):
					b.Fatalf("event %d not delivered", i)
				}
			}
			b.StopTimer()
			reportPercentiles(b, lat)
		})
	}
}

// BenchmarkEmitBurst: bursts of 1000 log lines emitted back to back, as a chatty run would;
// latency includes queueing behind the burst's earlier lines. "one-run": all lines of one run,
// which the dispatcher may merge; "many-runs": every line from another run, so one event each.
func BenchmarkEmitBurst(b *testing.B) {
	const burst = 1000
	for _, mode := range []string{"memory", "redis"} {
		for _, runs := range []string{"one-run", "many-runs"} {
			b.Run(mode+"/"+runs, func(b *testing.B) {
				h, c := benchSetup(b, mode)
				sent := make([]time.Time, burst)
				lat := make([]time.Duration, 0, b.N*burst)
				done := make(chan struct{}, 1)
				lines, events := 0, 0
				c.onPacket(func(p string, at time.Time) {
					got := seqs(p)
					if got == nil {
						return
					}
					events++
					for _, seq := range got {
						lat = append(lat, at.Sub(sent[seq]))
					}
					if lines += len(got); lines == burst {
						done <- struct{}{}
					}
				})
				pad := strings.Repeat("x", 120)
				taskID := func(i int) string { return "run-1" }
				if runs == "many-runs" {
					taskID = strconv.Itoa
				}
				b.ResetTimer()
				for range b.N {
					lines = 0
					for i := range burst {
						sent[i] = time.Now()
						h.Emit("acme", EventExecutionLog, ExecutionLog{TaskID: taskID(i), Log: strconv.Itoa(i) + " " + pad + "\n"})
					}
					select {
					case <-done:
					case <-time.After(30 * time.Second):
						b.Fatalf("burst not delivered (dropped %d)", h.dropped.Load())
					}
				}
				b.StopTimer()
				b.ReportMetric(float64(b.N*burst)/b.Elapsed().Seconds(), "lines/s")
				b.ReportMetric(float64(b.N*burst)/float64(events), "lines/event")
				reportPercentiles(b, lat)
			})
		}
	}
}

// BenchmarkEmitCall: what Emit costs its caller (encode + enqueue) with a client connected. The
// loop emits far faster than any dispatcher delivers, so most events are dropped by design;
// dropped/op shows it. "log" is an ExecutionLog (kept as is), "json" a map marshalled by Emit.
func BenchmarkEmitCall(b *testing.B) {
	payloads := map[string]func() (string, any){
		"log": func() (string, any) {
			return EventExecutionLog, ExecutionLog{TaskID: "run-1", Log: strings.Repeat("x", 120) + "\n"}
		},
		"json": func() (string, any) {
			return EventExecutionUpdated, map[string]any{"taskId": "run-1", "status": "RUNNING", "progress": 42}
		},
	}
	for _, name := range []string{"log", "json"} {
		b.Run(name, func(b *testing.B) {
			h, c := benchSetup(b, "memory")
			c.onPacket(func(string, time.Time) {})
			event, payload := payloads[name]()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				h.Emit("acme", event, payload)
			}
			b.StopTimer()
			b.ReportMetric(float64(h.dropped.Load())/float64(b.N), "dropped/op")
		})
	}
}
