package kubernetes

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"time"
)

// A pod's log stream breaks when the API server or the kubelet restarts mid-run. The follower
// asks for timestamped lines, and after a break asks again from the last line's second,
// passing on only lines newer than the last it passed: no line is lost or repeated (short of
// two lines with the same nanosecond).

// logSource opens the suite's log, following it, from since (zero: the start), each line
// prefixed by its RFC 3339 timestamp and a space, as the kubelet writes them with timestamps.
type logSource func(ctx context.Context, since time.Time) (io.ReadCloser, error)

// suiteExited tells whether the suite container has exited (or its pod is gone): a stream that
// ended then is the log's end.
type suiteExited func(ctx context.Context) (bool, error)

// maxLogResumes bounds the reconnections in a row that bring no new line; resumeWait spaces
// them.
const maxLogResumes = 30

var resumeWait = 500 * time.Millisecond // a variable for the tests

// followLogs copies the suite's log to w, without timestamps, until the suite has exited and its
// stream ended, resuming after breaks.
func followLogs(ctx context.Context, open logSource, done suiteExited, w io.Writer) error {
	var last time.Time
	var err error
	for idle := 0; idle <= maxLogResumes; idle++ {
		before := last
		var body io.ReadCloser
		if body, err = open(ctx, last); err == nil {
			err = copyStamped(w, body, &last)
			body.Close()
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if ended, derr := done(ctx); derr == nil && ended {
			if err != nil {
				// The stream broke as the suite ended: one more read brings any line it missed.
				if body, err = open(ctx, last); err == nil {
					err = copyStamped(w, body, &last)
					body.Close()
				}
			}
			return err
		}
		if last.After(before) {
			idle = 0 // it moved on: a long run may outlive many restarts
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(resumeWait):
		}
	}
	if err == nil {
		err = errors.New("the log stream kept ending while the suite ran")
	}
	return err
}

// copyStamped copies the lines of r to w without their timestamps, skipping those not newer
// than *last, and moves *last to the newest passed. A line is streamed in pieces, never held
// whole; a line without a timestamp (not expected) is passed as it is.
func copyStamped(w io.Writer, r io.Reader, last *time.Time) error {
	br := bufio.NewReaderSize(r, 32<<10)
	for {
		// The timestamp, up to its space (it is at most 35 bytes).
		head, err := br.ReadSlice(' ')
		if len(head) == 0 {
			if err == nil || errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		pass := true
		if err == nil && len(head) <= 40 && bytes.IndexByte(head, '\n') < 0 {
			if ts, perr := time.Parse(time.RFC3339Nano, string(head[:len(head)-1])); perr == nil {
				head = nil
				if pass = ts.After(*last); pass {
					*last = ts
				}
			}
		}
		if head != nil {
			// Not a timestamp: the line's own bytes.
			if _, werr := w.Write(head); werr != nil {
				return werr
			}
			switch {
			case err != nil && !errors.Is(err, bufio.ErrBufferFull):
				if errors.Is(err, io.EOF) {
					return nil
				}
				return err
			case head[len(head)-1] == '\n':
				continue
			}
		}
		// The rest of the line, in pieces.
		for {
			piece, err := br.ReadSlice('\n')
			if pass && len(piece) > 0 {
				if _, werr := w.Write(piece); werr != nil {
					return werr
				}
			}
			switch {
			case err == nil:
			case errors.Is(err, bufio.ErrBufferFull):
				continue
			case errors.Is(err, io.EOF):
				return nil
			default:
				return err
			}
			break
		}
	}
}
