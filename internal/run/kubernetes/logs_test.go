package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 3, 10, 9, 0, 0, 0, time.UTC)

// stamped is a kubelet's timestamped line i (a few per second, so that a resume from the
// second re-reads some).
func stamped(i int) string {
	return t0.Add(time.Duration(i)*300*time.Millisecond).Format(time.RFC3339Nano) + fmt.Sprintf(" line %d\n", i)
}

// brokenReader gives s, then fails as a dropped connection does.
type brokenReader struct{ r io.Reader }

func (b *brokenReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if errors.Is(err, io.EOF) {
		return n, errors.New("connection reset by peer")
	}
	return n, err
}

// A stream that breaks twice mid-run is resumed from the last line's second: every line
// comes once, in order, without its timestamp.
func TestFollowLogsResumesAfterABreak(t *testing.T) {
	const total = 20
	var all []string
	for i := range total {
		all = append(all, stamped(i))
	}
	breaks := []int{7, 13} // the stream drops after these many lines
	opened := 0
	open := func(_ context.Context, since time.Time) (io.ReadCloser, error) {
		opened++
		// What the API gives from since (whole seconds): every line at or after it.
		var from int
		for from < total && t0.Add(time.Duration(from)*300*time.Millisecond).Before(since) {
			from++
		}
		end := total
		if opened <= len(breaks) {
			end = breaks[opened-1]
			return io.NopCloser(&brokenReader{strings.NewReader(strings.Join(all[from:end], ""))}), nil
		}
		return io.NopCloser(strings.NewReader(strings.Join(all[from:end], ""))), nil
	}
	done := func(context.Context) (bool, error) { return opened > len(breaks), nil }
	var out strings.Builder
	if err := followLogs(context.Background(), open, done, &out); err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	for i := range total {
		fmt.Fprintf(&want, "line %d\n", i)
	}
	if out.String() != want.String() || opened != 3 {
		t.Fatalf("after %d opens got:\n%s", opened, out.String())
	}
}

// A line longer than the reader's buffer passes whole, in pieces; a line without a timestamp
// passes as it is.
func TestCopyStampedLongLines(t *testing.T) {
	long := strings.Repeat("x", 100<<10)
	in := t0.Format(time.RFC3339Nano) + " " + long + "\nno stamp here\n"
	var out strings.Builder
	var last time.Time
	if err := copyStamped(&out, strings.NewReader(in), &last); err != nil {
		t.Fatal(err)
	}
	if out.String() != long+"\nno stamp here\n" || !last.Equal(t0) {
		t.Fatalf("got %d bytes, last %v", out.Len(), last)
	}
}

// A stream that keeps ending while the suite runs, bringing nothing, is given up.
func TestFollowLogsGivesUp(t *testing.T) {
	defer func(w time.Duration) { resumeWait = w }(resumeWait)
	resumeWait = time.Millisecond
	open := func(context.Context, time.Time) (io.ReadCloser, error) { return nil, errors.New("refused") }
	done := func(context.Context) (bool, error) { return false, nil }
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := followLogs(ctx, open, done, io.Discard); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("err %v", err)
	}
}

// A short line reaches the writer while the stream stays open: nothing waits for more bytes
// than the line has.
func TestCopyStampedPassesAShortLineAtOnce(t *testing.T) {
	pr, pw := io.Pipe()
	got := make(chan string, 1)
	w := writerFunc(func(p []byte) (int, error) { got <- string(p); return len(p), nil })
	var last time.Time
	go func() { _ = copyStamped(w, pr, &last) }()
	go func() { _, _ = io.WriteString(pw, t0.Format(time.RFC3339Nano)+" ok\n") }()
	select {
	case line := <-got:
		if line != "ok\n" {
			t.Fatalf("got %q", line)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a short line waited for more bytes")
	}
	pw.Close()
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// FuzzCopyStamped: whatever the stream holds, the copy never panics, never writes more than it
// read, and passes every byte of a stream without timestamps as it is.
func FuzzCopyStamped(f *testing.F) {
	f.Add(stamped(0) + stamped(1))
	f.Add("no stamp\n" + stamped(2) + "2026-13-99T99:99:99Z bad\n")
	f.Add(strings.Repeat("y", 40<<10) + " tail")
	f.Fuzz(func(t *testing.T, in string) {
		var out strings.Builder
		var last time.Time
		_ = copyStamped(&out, strings.NewReader(in), &last)
		if out.Len() > len(in) {
			t.Fatalf("wrote %d bytes of %d", out.Len(), len(in))
		}
		if !hasStamp(in) && out.String() != in {
			t.Fatalf("a stream without timestamps changed: %q -> %q", in, out.String())
		}
	})
}

// hasStamp tells whether some word of in could be read as a line's timestamp.
func hasStamp(in string) bool {
	for _, w := range strings.FieldsFunc(in, func(r rune) bool { return r == ' ' || r == '\n' }) {
		if _, err := time.Parse(time.RFC3339Nano, w); err == nil {
			return true
		}
	}
	return false
}
