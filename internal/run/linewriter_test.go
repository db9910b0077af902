package run

import (
	"bytes"
	"io"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
)

// expectedLines is what LineWriter must pass on for in: every line whole, ending with a newline,
// a line longer than MaxRawLineBytes cut to that length.
func expectedLines(in string) string {
	var b strings.Builder
	for i, line := range strings.Split(in, "\n") {
		last := i == strings.Count(in, "\n")
		if last && line == "" {
			break
		}
		b.WriteString(line[:min(len(line), MaxRawLineBytes)] + "\n")
	}
	return b.String()
}

// A container printing without a newline must not grow the server's memory: LineWriter holds at
// most MaxRawLineBytes of a line, passes that on at once and drops the rest of the line.
func TestLineWriterBoundsALineWithoutEnd(t *testing.T) {
	var got bytes.Buffer
	w := NewLineWriter(&got)
	chunk := bytes.Repeat([]byte("x"), 16<<10) // the engine's log messages are at most 16 KiB
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range (32 << 20) / len(chunk) { // 32 MiB, no newline
		if _, err := w.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	grew := int64(after.HeapInuse) - int64(before.HeapInuse)
	if grew > 4<<20 || cap(w.pending) > 2*MaxRawLineBytes {
		t.Fatalf("after 32 MiB without a newline the heap grew by %d bytes, %d held", grew, cap(w.pending))
	}
	t.Logf("32 MiB without a newline: heap in use grew by %d KiB, %d KiB held", grew>>10, cap(w.pending)>>10)
	if want := strings.Repeat("x", MaxRawLineBytes) + "\n"; got.String() != want {
		t.Fatalf("the cut line came as %d bytes, want %d at once", got.Len(), len(want))
	}
	// The line's end is dropped with it; the lines after it come whole.
	for _, s := range []string{"end of the long line\nnext ", "line\n", "last words"} {
		if _, err := w.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if rest := strings.TrimPrefix(got.String(), strings.Repeat("x", MaxRawLineBytes)+"\n"); rest != "next line\nlast words\n" {
		t.Fatalf("after the cut line: %q", rest)
	}
}

func TestLineWriterKeepsLinesAcrossWrites(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var in strings.Builder
	for range 300 {
		n := rng.IntN(80)
		switch rng.IntN(10) {
		case 0:
			n = MaxRawLineBytes - 1 + rng.IntN(3) // around the cut
		case 1:
			n = rng.IntN(3 * MaxRawLineBytes)
		}
		in.WriteString(strings.Repeat(string(rune('a'+rng.IntN(26))), n))
		in.WriteString("\n")
	}
	in.WriteString(strings.Repeat("z", MaxRawLineBytes+5)) // a last line without newline, cut
	src := in.String()
	var got bytes.Buffer
	w := NewLineWriter(&got)
	for rest := src; rest != ""; {
		n := min(len(rest), 1+rng.IntN(40<<10))
		if _, err := w.Write([]byte(rest[:n])); err != nil {
			t.Fatal(err)
		}
		rest = rest[n:]
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if want := expectedLines(src); got.String() != want {
		t.Fatalf("got %d bytes, want %d", got.Len(), len(want))
	}
}

// demux passes a write error of its destination on.
func TestLineWriterWriteError(t *testing.T) {
	pr, pw := io.Pipe()
	pr.CloseWithError(io.ErrClosedPipe)
	w := NewLineWriter(pw)
	if _, err := w.Write([]byte("a line\n")); err == nil {
		t.Fatal("no error from a closed destination")
	}
}
