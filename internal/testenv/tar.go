package testenv

import (
	"archive/tar"
	"bytes"
	"io"
	"strings"
	"testing"
	"time"
)

// TarEntry is one member of an archive Tar builds: a regular file by default, a folder when
// Name ends with "/", or any other type (a link, a device) by Type and Link.
type TarEntry struct {
	Name, Body, Link string
	Type             byte
	Mode             int64     // 0: 0644 for a file, 0755 for a folder
	ModTime          time.Time // zero: the epoch
}

// Tar builds a tar archive of entries, in order (the shape Docker's copy of a folder has).
func Tar(t testing.TB, entries ...TarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.Name, Typeflag: e.Type, Linkname: e.Link, Mode: e.Mode, ModTime: e.ModTime, Format: tar.FormatPAX}
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
			if strings.HasSuffix(e.Name, "/") {
				h.Typeflag = tar.TypeDir
			}
		}
		if h.Mode == 0 {
			h.Mode = 0o644
			if h.Typeflag == tar.TypeDir {
				h.Mode = 0o755
			}
		}
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(e.Body))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(tw, e.Body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Untar reads an archive to its end and closes it: the regular files' contents by name.
func Untar(t testing.TB, rc io.ReadCloser) map[string]string {
	t.Helper()
	defer rc.Close()
	files := map[string]string{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			files[h.Name] = string(b)
		}
	}
}
