package run

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// collect runs pumpLogs over r and returns the chunks with their arrival times.
func collect(t *testing.T, r io.Reader, env RunEnv) ([]string, []time.Time) {
	t.Helper()
	var (
		mu     sync.Mutex
		chunks []string
		at     []time.Time
	)
	pumpLogs(context.Background(), r, Masker(env), func(c string) {
		mu.Lock()
		chunks, at = append(chunks, c), append(at, time.Now())
		mu.Unlock()
	})
	return chunks, at
}

func TestPumpLogsMasksAndKeepsOrder(t *testing.T) {
	var in strings.Builder
	for i := 0; i < 2000; i++ {
		in.WriteString("line with token=hunter2 and hunter22 #")
		in.WriteString(strings.Repeat("x", i%7))
		in.WriteString("\n")
	}
	in.WriteString("no newline at the end")
	env := RunEnv{Vars: map[string]string{"A": "hunter2", "B": "hunter22", "PLAIN": "line"}, Secrets: []string{"A", "B"}}
	chunks, _ := collect(t, strings.NewReader(in.String()), env)
	got := strings.Join(chunks, "")
	if strings.Contains(got, "hunter2") {
		t.Fatal("a secret reached the log")
	}
	want := strings.ReplaceAll(strings.ReplaceAll(in.String(), "hunter22", Mask), "hunter2", Mask) + "\n"
	if got != want {
		t.Fatalf("log changed beyond masking: %d bytes, want %d", len(got), len(want))
	}
	for _, c := range chunks {
		if !strings.HasSuffix(c, "\n") {
			t.Fatalf("a chunk does not end with a whole line: %q", c[max(0, len(c)-20):])
		}
	}
	if len(chunks) >= 2000 {
		t.Fatalf("%d chunks for 2000 fast lines: not batched", len(chunks))
	}
}

func TestPumpLogsSendsAQuietLineAtOnce(t *testing.T) {
	pr, pw := io.Pipe()
	go func() {
		for i := 0; i < 3; i++ {
			time.Sleep(120 * time.Millisecond)
			io.WriteString(pw, "tick\n")
		}
		pw.Close()
	}()
	start := time.Now()
	chunks, at := collect(t, pr, RunEnv{})
	if len(chunks) != 3 {
		t.Fatalf("chunks %q", chunks)
	}
	// Each line came after a quiet spell: it must not wait for the batch window.
	if first := at[0].Sub(start); first > 120*time.Millisecond+batchInterval-10*time.Millisecond {
		t.Fatalf("the first line waited: %v", first)
	}
}

// stampedWriter writes lines to a pipe at the given offsets from start (both numbered "n\n") and
// records when each went in.
func stampedWriter(pw *io.PipeWriter, start time.Time, offsets []time.Duration) []time.Time {
	sent := make([]time.Time, len(offsets))
	go func() {
		for i, off := range offsets {
			time.Sleep(time.Until(start.Add(off)))
			sent[i] = time.Now()
			fmt.Fprintf(pw, "%d\n", i)
		}
		pw.Close()
	}()
	return sent
}

// arrivals maps each numbered line to the time its chunk reached the sink.
func arrivals(t *testing.T, chunks []string, at []time.Time, n int) []time.Time {
	t.Helper()
	out := make([]time.Time, n)
	for i, c := range chunks {
		for l := range strings.SplitSeq(strings.TrimSuffix(c, "\n"), "\n") {
			k, err := strconv.Atoi(l)
			if err != nil || k >= n {
				t.Fatalf("unexpected line %q", l)
			}
			out[k] = at[i]
		}
	}
	return out
}

// A suite printing a header and then a line every 100 ms, with a sink as slow as a database
// write: the header's second line opens a batch window, and no later line may fall into step
// with it (each waiting ~50 ms for a window that started when the previous batch went out).
func TestPumpLogsCadenceNotInStepWithTheWindow(t *testing.T) {
	const n = 14
	offsets := []time.Duration{0, 0, 0}
	for i := 1; len(offsets) < n; i++ {
		offsets = append(offsets, time.Duration(i)*100*time.Millisecond)
	}
	pr, pw := io.Pipe()
	sent := stampedWriter(pw, time.Now().Add(10*time.Millisecond), offsets)
	var (
		mu     sync.Mutex
		chunks []string
		at     []time.Time
	)
	pumpLogs(context.Background(), pr, nil, func(c string) {
		mu.Lock()
		chunks, at = append(chunks, c), append(at, time.Now())
		mu.Unlock()
		time.Sleep(3 * time.Millisecond) // the chunk's database write
	})
	got := arrivals(t, chunks, at, n)
	var waits []time.Duration
	for i := 3; i < n; i++ {
		waits = append(waits, got[i].Sub(sent[i]))
	}
	slices.Sort(waits)
	if med := waits[len(waits)/2]; med > 20*time.Millisecond {
		t.Fatalf("lines printed every 100 ms waited %v (median) for the batch window; all: %v", med, waits)
	}
}

// A burst is batched: at most one chunk per batchInterval, and no line waits much longer than
// one interval.
func TestPumpLogsBatchesABurst(t *testing.T) {
	const n = 100
	offsets := make([]time.Duration, n)
	for i := range offsets {
		offsets[i] = time.Duration(i) * 5 * time.Millisecond
	}
	pr, pw := io.Pipe()
	start := time.Now().Add(10 * time.Millisecond)
	sent := stampedWriter(pw, start, offsets)
	chunks, at := collect(t, pr, RunEnv{})
	span := offsets[n-1] + batchInterval
	if limit := int(span/batchInterval) + 2; len(chunks) > limit {
		t.Fatalf("%d chunks for a %v burst, want at most %d", len(chunks), offsets[n-1], limit)
	}
	got := arrivals(t, chunks, at, n)
	for i := range n {
		if w := got[i].Sub(sent[i]); w > batchInterval+40*time.Millisecond {
			t.Fatalf("line %d waited %v", i, w)
		}
	}
}

func TestReadLineCutsLongLines(t *testing.T) {
	// One line of 3 MiB: its start is kept, cut and marked, the rest dropped.
	chunks, _ := collect(t, strings.NewReader(strings.Repeat("y", 3<<20)+"\nshort\n"+strings.Repeat("z", 3*maxLineBytes)), RunEnv{})
	got := strings.Join(chunks, "")
	want := strings.Repeat("y", maxLineBytes) + lineCutMark + "short\n" + strings.Repeat("z", maxLineBytes) + lineCutMark
	if got != want {
		t.Fatalf("got %d bytes, want %d", len(got), len(want))
	}
	// A cut never splits a character.
	chunks, _ = collect(t, strings.NewReader("a"+strings.Repeat("é", maxLineBytes)), RunEnv{})
	if got := strings.Join(chunks, ""); !strings.HasSuffix(got, "é"+lineCutMark) || len(got) != maxLineBytes-1+len(lineCutMark) {
		t.Fatalf("cut inside a character: %d bytes ending %q", len(got), got[max(0, len(got)-40):])
	}
	if MaxRawLineBytes < maxLineBytes+maxSecretBytes {
		t.Fatal("a backend's line cut must leave room for a secret across the stored cut")
	}
}

// A secret across the 16 KiB cut is masked whole first: none of its characters reach the log.
func TestPumpLogsMasksBeforeCutting(t *testing.T) {
	secret := "s3cr3t-" + strings.Repeat("k", 40)
	env := RunEnv{Vars: map[string]string{"TOKEN": secret}, Secrets: []string{"TOKEN"}}
	for _, start := range []int{maxLineBytes - 5, maxLineBytes - 1, maxLineBytes - len(secret) + 1} {
		in := strings.Repeat("x", start) + secret + strings.Repeat("x", 100) + "\n"
		got := strings.Join(func() []string { c, _ := collect(t, strings.NewReader(in), env); return c }(), "")
		want := (strings.Repeat("x", start) + Mask + strings.Repeat("x", 100))[:maxLineBytes] + lineCutMark
		if got != want {
			t.Fatalf("secret at %d: log ends %q, want %q", start, got[max(0, len(got)-80):], want[max(0, len(want)-80):])
		}
	}

	// A line longer than a backend passes on: the secret at the cut end lost its rest, and the
	// secrets masked before it shrank the line enough to bring its start within 16 KiB.
	long := strings.Repeat("L", 10<<10)
	env = RunEnv{Vars: map[string]string{"LONG": long, "TOKEN": secret}, Secrets: []string{"LONG", "TOKEN"}}
	var in strings.Builder
	in.WriteString(strings.Repeat(long+" ", 5))
	in.WriteString(strings.Repeat("x", MaxRawLineBytes-in.Len()-10) + secret + strings.Repeat("y", 1000) + "\n")
	chunks, _ := collect(t, strings.NewReader(in.String()), env)
	got := strings.Join(chunks, "")
	if strings.Contains(got, "s3cr3t") || strings.Contains(got, "LLL") || !strings.HasPrefix(got, Mask+" "+Mask+" ") || !strings.HasSuffix(got, lineCutMark) {
		t.Fatalf("a cut line leaks a secret's start or lost its masks: %q ... %q", got[:min(len(got), 40)], got[max(0, len(got)-60):])
	}
}

func TestParseCommandAndContainerURL(t *testing.T) {
	if got, err := ParseCommand(`pytest -q -k "not slow" 'a b' c\ d`); err != nil || strings.Join(got, "|") != `pytest|-q|-k|not slow|a b|c d` {
		t.Fatalf("split %q, %v", got, err)
	}
	for in, want := range map[string]string{
		"http://127.0.0.1:3000/x": "http://host.docker.internal:3000/x",
		"http://localhost/":       "http://host.docker.internal/",
		"http://[::1]:8080":       "http://host.docker.internal:8080",
		"https://staging.example": "https://staging.example",
		"":                        "",
	} {
		if got := containerURL(in); got != want {
			t.Fatalf("containerURL(%q) = %q, want %q", in, got, want)
		}
	}
}
