package run

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"path"
	"strings"
	"time"
	"verdict/internal/resultfiles"
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

// FoundFolder holds the result files a run wrote outside its report folders, under their path
// in /app (/app/junit.xml is found-results/junit.xml): collection finds them in the copy of /app
// (finder), or, when /app is too big to copy whole, among the files the backend says the run
// wrote (ChangeLister); the control plane keeps them as one more report folder.
const FoundFolder = "found-results"

// Bounds of the result files found outside the report folders.
const (
	maxFound      = 100      // files
	maxFoundBytes = 16 << 20 // one file: it is held in memory while it is looked at
	maxFoundTotal = 64 << 20 // all of them
	maxFoundDepth = 8        // folders below /app
	// foundSlack is how long before its container started a file may have been written and
	// still count as the run's: the engine's clock may be a little behind the runner's.
	foundSlack = time.Minute
)

// notSearched are folders of dependencies and tools, never of a run's results.
var notSearched = map[string]bool{"node_modules": true, ".git": true, ".venv": true, "venv": true,
	"site-packages": true, "__pycache__": true, ".m2": true, ".gradle": true, ".npm": true, ".cache": true}

// ReportFolders are the run's folders under /app to keep, from those listed: trimmed, without
// repeats, and without those inside another listed folder (they are kept as part of it).
func ReportFolders(listed []string) []string {
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

// PlaceEntry finds the folder that holds rel, an entry's path under /app (junit/a.xml), and the
// entry's name in an archive of that folder alone (rooted at its base name, as a copy of the
// folder gives it). ok is false for entries outside every folder.
func PlaceEntry(rel string, folders []string) (folder, inFolder string, ok bool) {
	clean := strings.TrimSuffix(rel, "/")
	for _, f := range folders {
		if clean == f || strings.HasPrefix(clean, f+"/") {
			return f, path.Base(f) + rel[len(f):], true
		}
	}
	return "", "", false
}

// archiveReports writes to w the archive Peer.Upload takes: the run's report folders, entries
// named by their path under /app. With whole, one copy of /app brings them; past skipBudget
// bytes outside the folders that copy is given up (the image is remembered as one with a big
// /app) and the folders not met are copied one by one, as they all are without whole. A copy
// that fails midway, or an archive Upload stopped reading, ends it with the error.
func (r *Runner) archiveReports(ctx context.Context, id, image string, folders []string, since time.Time, whole bool, w io.Writer, log *slog.Logger) error {
	tw := tar.NewWriter(w)
	remaining := folders
	f := newFinder(since)
	searched := false // the whole of /app was read for result files
	var changed <-chan changeList
	if !whole {
		changed = r.listChanged(ctx, id) // beside the folders' copies: the engine takes a while
	}
	if whole {
		rc, err := r.Backend.CopyOut(ctx, id, appDir)
		switch {
		case errors.Is(err, ErrPathNotFound):
			remaining = nil
		case err != nil:
			log.Warn("copying the report folders failed", "err", err)
		default:
			met, partial, err := filterApp(rc, folders, f, tw)
			rc.Close()
			if err != nil {
				return err
			}
			remaining, searched = nil, !partial
			if partial {
				changed = r.listChanged(ctx, id)
				r.rememberBigApp(image)
				for _, f := range folders {
					if !met[f] {
						remaining = append(remaining, f)
					}
				}
			}
		}
	}
	for _, folder := range remaining {
		rc, err := r.Backend.CopyOut(ctx, id, appDir+"/"+folder)
		if errors.Is(err, ErrPathNotFound) {
			continue
		}
		if err != nil {
			log.Warn("copying a report folder failed", "folder", folder, "err", err)
			continue
		}
		err = copyFolder(rc, folder, tw)
		rc.Close()
		if err != nil {
			return err
		}
	}
	if !searched && changed != nil {
		if err := r.copyChangedResults(ctx, id, folders, <-changed, f, tw, log); err != nil {
			return err
		}
	}
	return tw.Close()
}

// changeList is what a ChangeLister answered; ok is false for a backend that is none.
type changeList struct {
	paths []string
	err   error
	ok    bool
}

// listChanged asks the backend, if it is a ChangeLister, what the container wrote, and
// answers on the channel once it knows.
func (r *Runner) listChanged(ctx context.Context, id string) <-chan changeList {
	out := make(chan changeList, 1)
	lister, ok := r.Backend.(ChangeLister)
	if !ok {
		out <- changeList{}
		return out
	}
	go func() {
		paths, err := lister.Changed(ctx, id)
		out <- changeList{paths: paths, err: err, ok: true}
	}()
	return out
}

// copyChangedResults passes on the result files the run wrote outside its folders when /app
// was too big to read whole: the backend's list of what the container wrote (ChangeLister)
// names them, and each is copied alone. Without one, only the report folders are kept.
func (r *Runner) copyChangedResults(ctx context.Context, id string, folders []string, changed changeList, f *finder, tw *tar.Writer, log *slog.Logger) error {
	if !changed.ok {
		return nil
	}
	if changed.err != nil {
		log.Warn("listing the files the run wrote failed; result files outside the report folders are not looked for", "err", changed.err)
		return nil
	}
	for _, p := range changed.paths {
		rel, ok := strings.CutPrefix(p, appDir+"/")
		if !ok || f.full() || !f.candidate(rel) {
			continue
		}
		if _, _, inFolder := PlaceEntry(rel, folders); inFolder {
			continue
		}
		rc, err := r.Backend.CopyOut(ctx, id, p)
		if errors.Is(err, ErrPathNotFound) {
			continue
		}
		if err != nil {
			log.Warn("copying a result file failed", "path", p, "err", err)
			continue
		}
		err = passOne(rc, rel, f, tw)
		rc.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// passOne passes on the file of src, an archive of one file (rooted at its base name), as the
// result file at rel under /app if the finder takes it.
func passOne(src io.Reader, rel string, f *finder, tw *tar.Writer) error {
	tr := tar.NewReader(src)
	h, err := tr.Next()
	if err == io.EOF {
		return nil
	}
	if err != nil {
		return err
	}
	if h.Name != path.Base(rel) {
		return nil
	}
	_, err = f.pass(tw, h, rel, tr)
	return err
}

// filterApp passes on the entries of src, an archive of appDir, that lie in folders, under
// their path in /app, and the result files outside them that the run wrote (finder) under
// FoundFolder. After skipBudget bytes outside the folders it stops reading: the folders met so
// far are passed on whole (the engine's archive is a tree walk, which lists a folder's entries
// together) and partial is true.
func filterApp(src io.Reader, folders []string, f *finder, tw *tar.Writer) (met map[string]bool, partial bool, err error) {
	tr := tar.NewReader(src)
	met = map[string]bool{}
	var skipped int64
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return met, false, nil
		}
		if err != nil {
			return nil, false, err
		}
		_, rel, found := strings.Cut(h.Name, "/") // the first component is appDir's own name
		folder, _, ok := PlaceEntry(rel, folders)
		if !found || !ok {
			passed, err := f.pass(tw, h, rel, tr)
			if err != nil {
				return nil, false, err
			}
			if !passed {
				if skipped += tarBlock + max(h.Size, 0); skipped > skipBudget {
					return met, true, nil
				}
			}
			continue
		}
		met[folder] = true
		if err := passEntry(tw, h, rel, tr); err != nil {
			return nil, false, err
		}
	}
}

// finder finds the result files a run wrote outside its report folders, within the bounds.
type finder struct {
	since  time.Time // the run's: a file older than this was in the image
	files  int
	bytes  int64
	passed map[string]bool // by path under /app
}

func newFinder(started time.Time) *finder {
	return &finder{since: started.Add(-foundSlack), passed: map[string]bool{}}
}

// full tells whether no more files may be found.
func (f *finder) full() bool { return f.files >= maxFound || f.bytes >= maxFoundTotal }

// candidate tells by its path alone whether rel, a path under /app, may be a result file to
// look at: named as one, not passed already, not too deep, not in dependencies' folders.
func (f *finder) candidate(rel string) bool {
	if resultfiles.Kind(rel) == "" || f.passed[rel] || strings.Count(rel, "/") > maxFoundDepth {
		return false
	}
	for _, part := range strings.Split(path.Dir(rel), "/") {
		if notSearched[part] {
			return false
		}
	}
	return true
}

// pass passes on the entry h at rel (its path under /app) under FoundFolder if it is a result
// file of the run's: a regular file named as one (resultfiles.Kind), written since the run
// started (a file of the image, such as a framework's own test fixture, is older), outside the
// folders of dependencies, within the bounds, whose content looks like one (resultfiles.Looks).
// A candidate is read whole to be looked at.
func (f *finder) pass(tw *tar.Writer, h *tar.Header, rel string, data io.Reader) (bool, error) {
	if !f.candidate(rel) || h.Typeflag != tar.TypeReg || h.ModTime.Before(f.since) || f.full() ||
		h.Size > maxFoundBytes || f.bytes+h.Size > maxFoundTotal {
		return false, nil
	}
	content, err := io.ReadAll(io.LimitReader(data, h.Size))
	if err != nil {
		return false, err
	}
	if !resultfiles.Looks(resultfiles.Kind(rel), content) {
		return false, nil
	}
	f.files++
	f.bytes += h.Size
	f.passed[rel] = true
	return true, passEntry(tw, h, FoundFolder+"/"+rel, bytes.NewReader(content))
}

// copyFolder passes on the entries of src, an archive of folder alone (rooted at its base
// name), under their path in /app.
func copyFolder(src io.Reader, folder string, tw *tar.Writer) error {
	base := path.Base(folder)
	tr := tar.NewReader(src)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		rest, ok := strings.CutPrefix(h.Name, base)
		if !ok || (rest != "" && rest[0] != '/') {
			continue
		}
		if err := passEntry(tw, h, folder+rest, tr); err != nil {
			return err
		}
	}
}

// passEntry writes one entry under name, with a fresh header: the source's may carry PAX
// records (its long name among them).
func passEntry(tw *tar.Writer, h *tar.Header, name string, data io.Reader) error {
	err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: h.Typeflag, Size: h.Size, Mode: h.Mode,
		ModTime: h.ModTime, Linkname: h.Linkname, Devmajor: h.Devmajor, Devminor: h.Devminor})
	if err == nil && h.Typeflag == tar.TypeReg {
		_, err = io.Copy(tw, data)
	}
	return err
}
