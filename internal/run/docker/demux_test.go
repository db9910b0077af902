package docker

import (
	"archive/tar"
	"bytes"
	"encoding/binary"
	"slices"
	"strings"
	"testing"

	"github.com/moby/moby/api/pkg/stdcopy"
)

func TestDemuxKeepsLinesWhole(t *testing.T) {
	var mux bytes.Buffer
	// The engine's framing: stream type, three zero bytes, big-endian payload size, payload.
	frame := func(stream stdcopy.StdType, s string) {
		mux.Write([]byte{byte(stream), 0, 0, 0})
		_ = binary.Write(&mux, binary.BigEndian, uint32(len(s)))
		mux.WriteString(s)
	}
	frame(stdcopy.Stdout, "one\npar")
	frame(stdcopy.Stderr, "err ")
	frame(stdcopy.Stderr, "line\n")
	frame(stdcopy.Stdout, "tial\ntwo\n")
	frame(stdcopy.Stderr, "last words")
	var got bytes.Buffer
	if err := demux(&got, &mux); err != nil {
		t.Fatal(err)
	}
	want := "one\nerr line\npartial\ntwo\nlast words\n"
	if got.String() != want {
		t.Errorf("demux = %q, want %q", got.String(), want)
	}
}

func TestTopDirs(t *testing.T) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range []tar.Header{
		{Name: "tests/", Typeflag: tar.TypeDir},
		{Name: "tests/api/", Typeflag: tar.TypeDir},
		{Name: "tests/api/health.spec.ts", Typeflag: tar.TypeReg},
		{Name: "tests/README.md", Typeflag: tar.TypeReg},
		{Name: "tests/ui/e2e/cart.spec.ts", Typeflag: tar.TypeReg}, // no header for ui/ itself
		{Name: "tests/link", Typeflag: tar.TypeSymlink, Linkname: "api"},
	} {
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := topDirs(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []string{"api", "ui"}) {
		t.Errorf("topDirs = %q, want [api ui]", got)
	}
	if _, err := topDirs(strings.NewReader("not a tar archive, but long enough to be read as a header block")); err == nil {
		t.Error("topDirs of garbage: no error")
	}
}
