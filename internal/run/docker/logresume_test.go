package docker

import (
	"bytes"
	"testing"
)

// TestLineSkipperResumes: a log read again from its start after the stream broke passes on only
// the lines not passed before, however the writes split them, and a second break too.
func TestLineSkipperResumes(t *testing.T) {
	var out bytes.Buffer
	l := &lineSkipper{w: &out}
	l.Write([]byte("1\n2\n"))
	l.Write([]byte("3\n"))
	l.restart() // the stream broke after 3 lines
	l.Write([]byte("1\n2\n3\n4\n"))
	l.restart() // and again after 4
	l.Write([]byte("1\n"))
	l.Write([]byte("2\n3\n4\n5\n6\n"))
	if got := out.String(); got != "1\n2\n3\n4\n5\n6\n" {
		t.Fatalf("passed on %q", got)
	}
}
