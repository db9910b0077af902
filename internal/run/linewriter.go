package run

import (
	"bytes"
	"io"
)

// NewLineWriter returns a LineWriter passing whole lines on to dst.
func NewLineWriter(dst io.Writer) *LineWriter { return &LineWriter{dst: dst} }

// LineWriter passes on only whole lines, holding back a partial last line until it is completed
// or flushed. It is not safe for concurrent use.
//
// A line longer than MaxRawLineBytes goes on as soon as that much of it has arrived, cut
// to exactly that length, and the rest of it is dropped up to its newline (the runner marks the
// line as cut): held whole, a container printing without a newline grew the server's memory
// without bound; split into pieces, a secret across a split would escape the masking.
type LineWriter struct {
	dst      io.Writer
	pending  []byte
	dropping bool // the rest of a cut line is being dropped
}

func (w *LineWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		switch {
		case w.dropping:
			if i < 0 {
				return n, nil
			}
			p, w.dropping = p[i+1:], false
		case len(w.pending) > 0 && i >= 0 && len(w.pending)+i <= MaxRawLineBytes:
			// The held-back line ends here.
			w.pending = append(w.pending, p[:i+1]...)
			if _, err := w.dst.Write(w.pending); err != nil {
				return 0, err
			}
			w.pending, p = w.pending[:0], p[i+1:]
		case len(w.pending) == 0 && i >= 0 && i <= MaxRawLineBytes:
			// Whole lines within the bound go on in one write, straight from p.
			end := i + 1
			for {
				j := bytes.IndexByte(p[end:], '\n')
				if j < 0 || j > MaxRawLineBytes {
					break
				}
				end += j + 1
			}
			if _, err := w.dst.Write(p[:end]); err != nil {
				return 0, err
			}
			p = p[end:]
		default:
			// A partial line: hold it back, up to the bound.
			take := min(len(p), MaxRawLineBytes-len(w.pending))
			w.pending, p = append(w.pending, p[:take]...), p[take:]
			if len(w.pending) < MaxRawLineBytes {
				return n, nil
			}
			if _, err := w.dst.Write(append(w.pending, '\n')); err != nil {
				return 0, err
			}
			w.pending, w.dropping = w.pending[:0], true
		}
	}
	return n, nil
}

// flush writes a last line that had no newline, ending it with one.
func (w *LineWriter) Flush() error {
	if len(w.pending) == 0 {
		return nil
	}
	_, err := w.dst.Write(append(w.pending, '\n'))
	w.pending = nil
	return err
}
