package run

import (
	"bufio"
	"context"
	"io"
	"strings"
	"time"
)

// Log streaming bounds: a line longer than maxLineBytes is cut; a run's stored log stops at
// maxLogBytes with a note (a suite printing without end must not fill the database).
const (
	maxLineBytes  = 16 << 10
	maxLogBytes   = 32 << 20
	batchBytes    = 32 << 10
	batchInterval = 50 * time.Millisecond
)

// logSink receives batches of whole lines, in order.
type logSink func(chunk string)

// pumpLogs reads the container's output, masks secrets, and hands the sink batches of whole
// lines. A line after a quiet spell (nothing sent for batchInterval) goes out at once; during a
// burst, lines wait at most batchInterval or until batchBytes, so a chatty suite costs at most
// one event per batchInterval. It returns when r ends (the container exited) or ctx ends.
func pumpLogs(ctx context.Context, r io.Reader, mask *strings.Replacer, sink logSink) {
	lines := make(chan string, 256)
	go func() {
		defer close(lines)
		br := bufio.NewReaderSize(r, 64<<10)
		for {
			line, err := readLine(br)
			if line != "" || err == nil {
				select {
				case lines <- line:
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
			sink(buf.String())
			buf.Reset()
			lastFlush = time.Now()
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
			if mask != nil {
				line = mask.Replace(line)
			}
			if total+len(line) > maxLogBytes {
				capped = true
				line = "[verdict] log truncated: the run printed more than 32 MiB\n"
			}
			total += len(line)
			buf.WriteString(line)
			if buf.Len() >= batchBytes || (!pending && time.Since(lastFlush) >= batchInterval) {
				flush()
			} else if !pending {
				pending = true
				timer.Reset(batchInterval)
			}
		case <-timer.C:
			flush()
		case <-ctx.Done():
			flush()
			return
		}
	}
}

// readLine reads one line including its newline (added when the stream ends without one),
// cutting lines longer than maxLineBytes.
func readLine(br *bufio.Reader) (string, error) {
	var b strings.Builder
	for {
		frag, err := br.ReadSlice('\n')
		if b.Len() < maxLineBytes {
			room := maxLineBytes - b.Len()
			if len(frag) > room {
				frag = frag[:room]
			}
			b.Write(frag)
		}
		switch err {
		case bufio.ErrBufferFull:
			continue
		case nil:
			s := b.String()
			if !strings.HasSuffix(s, "\n") {
				s += "\n"
			}
			return s, nil
		default:
			if b.Len() == 0 {
				return "", err
			}
			return strings.TrimSuffix(b.String(), "\n") + "\n", err
		}
	}
}
