package run

import (
	"context"
	"io"
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
	pumpLogs(context.Background(), r, masker(env), func(c string) {
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

func TestReadLineCutsLongLines(t *testing.T) {
	chunks, _ := collect(t, strings.NewReader(strings.Repeat("y", 3*maxLineBytes)+"\nshort\n"), RunEnv{})
	got := strings.Join(chunks, "")
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) != 2 || len(lines[0]) != maxLineBytes || lines[1] != "short" {
		t.Fatalf("lines %d, first %d bytes", len(lines), len(lines[0]))
	}
}

func TestSplitCommandAndContainerURL(t *testing.T) {
	if got := SplitCommand(`pytest -q -k "not slow" 'a b' c\ d`); strings.Join(got, "|") != `pytest|-q|-k|not slow|a b|c d` {
		t.Fatalf("split %q", got)
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
