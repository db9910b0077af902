package run

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"verdict/internal/report"
)

// appDir holds a run's report folders in its container: collection copies it out once.
const appDir = "/app"

// skipBudget bounds the archive bytes outside the report folders that the copy of appDir may
// read before collection gives it up and copies the folders it has not met one by one: an
// image that keeps its dependencies under /app (node_modules) must not cost a copy of them
// per run.
const skipBudget = 16 << 20

// tarBlock is the size of a tar header, counted with each skipped entry's content.
const tarBlock = 512

// errPutReturned ends a folder's pipe once its Put returned, so that writes after an early
// return (too many files) fail at once instead of blocking.
var errPutReturned = errors.New("report folder already stored or refused")

// reportFolders are the run's folders under /app to keep: trimmed, without repeats, and
// without those inside another listed folder (they are kept as part of it).
func reportFolders(listed []string) []string {
	var out []string
	for _, f := range listed {
		out = append(out, strings.Trim(f, "/"))
	}
	var keep []string
	for i, f := range out {
		inside := f == ""
		for j, g := range out {
			if g != "" && (strings.HasPrefix(f, g+"/") || (f == g && j < i)) {
				inside = true
				break
			}
		}
		if !inside {
			keep = append(keep, f)
		}
	}
	return keep
}

// placeEntry finds the folder that holds an entry of the archive of appDir and the entry's
// name in an archive of that folder alone (rooted at its base name, as a copy of the folder
// gives it). ok is false for entries outside every folder.
func placeEntry(name string, folders []string) (folder, inFolder string, ok bool) {
	_, rel, found := strings.Cut(name, "/") // the first component is appDir's own name
	if !found {
		return "", "", false
	}
	clean := strings.TrimSuffix(rel, "/")
	for _, f := range folders {
		if clean == f || strings.HasPrefix(clean, f+"/") {
			return f, path.Base(f) + rel[len(f):], true
		}
	}
	return "", "", false
}

// folderResult is what storing one folder gave.
type folderResult struct {
	written int64
	err     error
}

// putFunc stores one folder's archive under into, as report.Store.Put does.
type putFunc func(r io.Reader, into string) (int64, error)

// splitReports reads src, an archive of appDir, and stores each report folder found in it
// through put, as an archive of that folder alone. The folders' puts run side by side, each
// fed through a pipe, so they need not come one after another in src. room bounds the
// folders' file content together (negative: no bound): past it every put is abandoned and the
// error is report.ErrTooLarge.
//
// After skipBudget bytes outside the folders it stops reading: the folders met so far are
// stored (the engine's archive is a tree walk, which lists a folder's entries together) and
// partial is true; the others are left to the caller.
func splitReports(src io.Reader, folders []string, room int64, put putFunc) (found map[string]folderResult, partial bool, err error) {
	in := &errReader{r: src}
	tr := tar.NewReader(in)
	puts := map[string]*folderPut{}
	results := func(end func(*folderPut)) map[string]folderResult {
		out := make(map[string]folderResult, len(puts))
		for f, p := range puts {
			end(p)
			out[f] = p.res
		}
		return out
	}
	abort := func(cause error) { results(func(p *folderPut) { p.abort(cause) }) }
	var content, skipped int64
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return results((*folderPut).close), false, nil
		}
		if err != nil {
			abort(err)
			return nil, false, fmt.Errorf("reading the archive of %s: %w", appDir, err)
		}
		folder, name, ok := placeEntry(h.Name, folders)
		if !ok {
			if skipped += tarBlock + max(h.Size, 0); skipped > skipBudget {
				return results((*folderPut).close), true, nil
			}
			continue
		}
		if h.Typeflag == tar.TypeReg {
			if room >= 0 && h.Size > room-content {
				abort(report.ErrTooLarge)
				return nil, false, fmt.Errorf("%w: more than %d bytes", report.ErrTooLarge, room)
			}
			content += h.Size
		}
		p := puts[folder]
		if p == nil {
			p = startPut(folder, put)
			puts[folder] = p
		}
		if err := p.write(h, name, tr); err != nil && in.err != nil {
			abort(in.err)
			return nil, false, fmt.Errorf("reading the archive of %s: %w", appDir, in.err)
		}
	}
}

// folderPut feeds one folder's entries to its put, running in its own goroutine.
type folderPut struct {
	out    *errWriter
	pw     *io.PipeWriter
	tw     *tar.Writer
	failed bool // the put no longer reads: its further entries are dropped
	done   chan struct{}
	res    folderResult
}

func startPut(into string, put putFunc) *folderPut {
	pr, pw := io.Pipe()
	p := &folderPut{pw: pw, out: &errWriter{w: pw}, done: make(chan struct{})}
	p.tw = tar.NewWriter(p.out)
	go func() {
		defer close(p.done)
		p.res.written, p.res.err = put(pr, into)
		pr.CloseWithError(errPutReturned)
	}()
	return p
}

// write passes one entry on under name. Its error is the source's or the put's; a put that
// failed, or an entry that cannot be written, ends the put with the error it returns.
func (p *folderPut) write(h *tar.Header, name string, data io.Reader) error {
	if p.failed {
		return nil
	}
	// A fresh header: the source's may carry PAX records (its long name among them).
	err := p.tw.WriteHeader(&tar.Header{Name: name, Typeflag: h.Typeflag, Size: h.Size, Mode: h.Mode,
		ModTime: h.ModTime, Linkname: h.Linkname, Devmajor: h.Devmajor, Devminor: h.Devminor})
	if err == nil && h.Typeflag == tar.TypeReg {
		_, err = io.Copy(p.tw, data)
	}
	if err != nil {
		p.failed = true
		if p.out.err == nil {
			// Not the pipe: the entry could not be encoded, or the source failed (the caller
			// tells which). Either way this folder cannot be stored whole.
			p.pw.CloseWithError(err)
		}
	}
	return err
}

// close ends the folder's archive and waits for its put.
func (p *folderPut) close() {
	if !p.failed {
		_ = p.tw.Close()
	}
	_ = p.pw.Close()
	<-p.done
}

// abort makes the put fail with cause (it keeps nothing) and waits for it.
func (p *folderPut) abort(cause error) {
	p.pw.CloseWithError(cause)
	<-p.done
}

// errReader and errWriter remember their last error, to tell a failing source from a put that
// stopped reading.
type errReader struct {
	r   io.Reader
	err error
}

func (e *errReader) Read(b []byte) (int, error) {
	n, err := e.r.Read(b)
	if err != nil && err != io.EOF {
		e.err = err
	}
	return n, err
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(b []byte) (int, error) {
	n, err := e.w.Write(b)
	if err != nil {
		e.err = err
	}
	return n, err
}
