package run

import (
	"bufio"
	"context"
	"io"
	"strings"
	"time"
	"unicode/utf8"
)

// Log streaming bounds: a line longer than maxLineBytes is cut; a run's stored log stops at
// maxLogBytes with a note (a suite printing without end must not fill the database).
const (
	maxLineBytes  = 16 << 10
	maxLogBytes   = 32 << 20
	batchBytes    = 32 << 10
	batchInterval = 50 * time.Millisecond
	// maxSecretBytes is the longest variable value a run accepts, so the longest secret.
	maxSecretBytes = 32 << 10
)

// lineCutMark ends a line that was cut; the rest of that line is dropped.
const lineCutMark = " [verdict: line cut at 16 KiB]\n"

// logSink receives batches of whole lines, in order.
type logSink func(chunk string)

// pumpLogs reads the container's output, masks secrets (then cuts long lines), and hands the
// sink batches of whole lines: at most one batch per batchInterval (but for batches of
// batchBytes), each as soon as that allows. A line that comes batchInterval or more after the
// last batch went out goes at once; one that comes sooner waits only for the rest of that
// interval, never a whole one from its arrival (a suite printing every 100 ms would otherwise
// fall into step with the timer and see every line wait 50 ms). It returns when r ends (the
// container exited) or ctx ends.
func pumpLogs(ctx context.Context, r io.Reader, mask *strings.Replacer, sink logSink) {
	lines := make(chan string, 256)
	go func() {
		defer close(lines)
		br := bufio.NewReaderSize(r, 64<<10)
		for {
			line, cut, err := readLine(br)
			if line != "" || err == nil {
				select {
				case lines <- finishLine(line, cut, mask):
				case <-ctx.Done():
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()

	var (
		buf       strings.Builder
		total     int
		capped    bool
		timer     = time.NewTimer(time.Hour)
		pending   bool
		lastFlush time.Time
	)
	timer.Stop()
	flush := func() {
		if buf.Len() > 0 {
			// Stamped before the sink, which also stores the chunk: the interval bounds how
			// often batches go out, not the gap between one's store and the next.
			lastFlush = time.Now()
			sink(buf.String())
			buf.Reset()
		}
		pending = false
	}
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				flush()
				return
			}
			if capped {
				continue
			}
			if total+len(line) > maxLogBytes {
				capped = true
				line = "[verdict] log truncated: the run printed more than 32 MiB\n"
			}
			total += len(line)
			buf.WriteString(line)
			switch wait := batchInterval - time.Since(lastFlush); {
			case buf.Len() >= batchBytes, !pending && wait <= 0:
				flush()
			case !pending:
				pending = true
				timer.Reset(wait)
			}
		case <-timer.C:
			flush()
		case <-ctx.Done():
			flush()
			return
		}
	}
}

// readLine reads one line without its newline, keeping at most MaxRawLineBytes of it and
// dropping the rest. cut tells that the line reached MaxRawLineBytes: a backend passes a longer
// line on cut to exactly that length, so a line this long may have been cut before it came.
func readLine(br *bufio.Reader) (line string, cut bool, err error) {
	var b strings.Builder
	n := 0 // the line's length, dropped bytes included
	for {
		frag, err := br.ReadSlice('\n')
		if err == nil {
			frag = frag[:len(frag)-1]
		}
		if room := MaxRawLineBytes - b.Len(); room > 0 {
			b.Write(frag[:min(len(frag), room)])
		}
		n += len(frag)
		if err == bufio.ErrBufferFull {
			continue
		}
		return b.String(), n >= MaxRawLineBytes, err
	}
}

// finishLine masks the secrets in a line and only then cuts it to maxLineBytes (on a character
// boundary), so a secret across the cut is masked whole instead of leaking its first characters.
func finishLine(line string, cut bool, mask *strings.Replacer) string {
	if mask != nil {
		masked := mask.Replace(line)
		if cut {
			// The end of a cut line may hold the start of a secret whose rest was dropped, which
			// no mask matches, and masking shorter secrets before it may have moved it within
			// the cut. Keep only the masked text of what lies before the last maxSecretBytes-1
			// bytes, where no secret can have been cut: it is the longest common start of the
			// two maskings.
			safe := mask.Replace(line[:max(0, len(line)-(maxSecretBytes-1))])
			n := 0
			for n < len(masked) && n < len(safe) && masked[n] == safe[n] {
				n++
			}
			masked = masked[:n]
		}
		line = masked
	}
	if len(line) > maxLineBytes {
		n := maxLineBytes
		for n > 0 && !utf8.RuneStart(line[n]) {
			n--
		}
		line, cut = line[:n], true
	}
	if cut {
		return line + lineCutMark
	}
	return line + "\n"
}
