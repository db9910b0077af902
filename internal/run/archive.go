package run

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"log/slog"
	"path"
	"strings"
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
func (r *Runner) archiveReports(ctx context.Context, id, image string, folders []string, whole bool, w io.Writer, log *slog.Logger) error {
	tw := tar.NewWriter(w)
	remaining := folders
	if whole {
		rc, err := r.Backend.CopyOut(ctx, id, appDir)
		switch {
		case errors.Is(err, ErrPathNotFound):
			remaining = nil
		case err != nil:
			log.Warn("copying the report folders failed", "err", err)
		default:
			met, partial, err := filterApp(rc, folders, tw)
			rc.Close()
			if err != nil {
				return err
			}
			remaining = nil
			if partial {
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
	return tw.Close()
}

// filterApp passes on the entries of src, an archive of appDir, that lie in folders, under
// their path in /app. After skipBudget bytes outside the folders it stops reading: the folders
// met so far are passed on whole (the engine's archive is a tree walk, which lists a folder's
// entries together) and partial is true.
func filterApp(src io.Reader, folders []string, tw *tar.Writer) (met map[string]bool, partial bool, err error) {
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
			if skipped += tarBlock + max(h.Size, 0); skipped > skipBudget {
				return met, true, nil
			}
			continue
		}
		met[folder] = true
		if err := passEntry(tw, h, rel, tr); err != nil {
			return nil, false, err
		}
	}
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
