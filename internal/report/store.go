package report

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"verdict/internal/domain"
)

// Store keeps the report folders of runs, one tree per organization and task. Every method
// takes the organization: another organization's run is simply not found.
type Store interface {
	// Put extracts a tar stream (as Docker's CopyFromContainer returns it: every entry under
	// the copied folder's base name) into the run's folder `into`, for instance
	// "playwright-report"; the archive's top-level entry becomes `into`, whatever its name.
	// Links, devices and entries with absolute or ".." paths are skipped. Past maxBytes of file
	// content nothing is kept and the error is ErrTooLarge; past MaxFiles entries, nothing is
	// kept either and the error is ErrTooManyFiles (a count, not storage). An existing `into` is
	// not replaced (fs.ErrExist). written is the bytes of file content kept.
	Put(ctx context.Context, orgID, taskID string, r io.Reader, into string, maxBytes int64) (written int64, err error)
	// Open opens a report file for serving; relPath is slash-separated under the run's folder.
	// ErrNotFound for anything missing or any path that could leave the run's folder;
	// ErrIsDir for a folder.
	Open(ctx context.Context, orgID, taskID, relPath string) (io.ReadSeekCloser, fs.FileInfo, error)
	// Size is the bytes of file content the run's reports hold (0 when it has none).
	Size(ctx context.Context, orgID, taskID string) (int64, error)
	// Delete removes the run's reports and returns the bytes of file content freed.
	Delete(ctx context.Context, orgID, taskID string) (freed int64, err error)
	// DeleteOrganization removes every report of the organization, of whatever run, and
	// whatever is left of its folder or prefix: its erasure.
	DeleteOrganization(ctx context.Context, orgID string) error
}

var (
	// ErrTooLarge: the archive passed Put's byte cap; nothing of it was kept.
	ErrTooLarge = errors.New("report: reports exceed the allowed size")
	// ErrTooManyFiles: the archive has more than MaxFiles entries; nothing of it was kept.
	ErrTooManyFiles = errors.New("report: too many files")
	// ErrNotFound: no such report file (or a path that is not allowed).
	ErrNotFound = errors.New("report: not found")
	// ErrIsDir: the path names a folder.
	ErrIsDir = errors.New("report: is a folder")
	// ErrInvalidID: the organization or task ID is not of the allowed shape.
	ErrInvalidID = errors.New("report: invalid organization or task ID")
)

// MaxFiles bounds the entries (files, folders, and skipped links) of one Put: the inodes and
// the work of a walk over the tree, which a tar of empty files would not pay for in bytes.
const MaxFiles = 100_000

// Bounds of one Put beyond its byte and entry caps: names bound what a path may look like.
const (
	maxNameBytes = 1024
	// Reports are the service's alone: they may hold what a suite printed, secrets included.
	dirPerm  = 0o700
	filePerm = 0o600 // never executable, whatever the archive says
)

// FSStore keeps reports on the local filesystem under <dataDir>/reports/<org>/<task>/.
type FSStore struct {
	dir string
}

// NewFSStore opens (creating) the report tree under dataDir.
func NewFSStore(dataDir string) (*FSStore, error) {
	dir := filepath.Join(dataDir, "reports")
	if err := os.MkdirAll(dir, dirPerm); err != nil {
		return nil, err
	}
	// A tree an older version made readable by others is closed at its root.
	if err := os.Chmod(dir, dirPerm); err != nil {
		return nil, err
	}
	return &FSStore{dir: dir}, nil
}

var _ Store = (*FSStore)(nil)

// LocalDir is the run's folder on disk, for ParseDir; "" when an ID is invalid.
func (s *FSStore) LocalDir(orgID, taskID string) string {
	d, err := s.runDir(orgID, taskID)
	if err != nil {
		return ""
	}
	return d
}

// runDir validates the IDs (validIDs) and names the run's folder.
func (s *FSStore) runDir(orgID, taskID string) (string, error) {
	if err := validIDs(orgID, taskID); err != nil {
		return "", err
	}
	return filepath.Join(s.dir, orgID, taskID), nil
}

// validIDs checks both IDs: both must have the task ID's shape (letters, digits, _ and -), so
// neither can name another folder or object prefix. Organization IDs made by domain.NewID
// have it.
func validIDs(orgID, taskID string) error {
	if !domain.ValidTaskID(orgID) || !domain.ValidStoredTaskID(taskID) {
		return ErrInvalidID
	}
	return nil
}

// intoPattern is one component of Put's folder name; it may not start with a dot, which keeps
// it clear of the in-progress folders and of "." and "..".
var intoPattern = regexp.MustCompile(`^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$`)

func validInto(into string) bool {
	parts := strings.Split(into, "/")
	if len(parts) > 8 {
		return false
	}
	for _, p := range parts {
		if !intoPattern.MatchString(p) {
			return false
		}
	}
	return true
}

func (s *FSStore) Put(ctx context.Context, orgID, taskID string, r io.Reader, into string, maxBytes int64) (int64, error) {
	dir, err := s.runDir(orgID, taskID)
	if err != nil {
		return 0, err
	}
	if !validInto(into) {
		return 0, fmt.Errorf("report: invalid folder name %q", into)
	}
	if err := os.MkdirAll(dir, dirPerm); err != nil {
		return 0, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return 0, err
	}
	defer root.Close()
	if _, err := root.Lstat(into); err == nil {
		return 0, fmt.Errorf("report: %s: %w", into, fs.ErrExist)
	}
	// Extract beside the target and rename at the end, so a reader never sees half a report
	// and a refused archive leaves nothing behind. The dot keeps it from being served.
	tmp := ".put-" + domain.RandomHex(8)
	written, err := extract(ctx, root, tmp, r, maxBytes)
	if err == nil {
		err = publish(root, tmp, into)
	}
	if err != nil {
		root.RemoveAll(tmp)
		return 0, err
	}
	return written, nil
}

// publish moves the extracted tree to its name; an archive without entries leaves nothing.
func publish(root *os.Root, tmp, into string) error {
	if _, err := root.Lstat(tmp); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if parent := path.Dir(into); parent != "." {
		if err := root.MkdirAll(parent, dirPerm); err != nil {
			return err
		}
	}
	return root.Rename(tmp, into)
}

// extract writes the archive's directories and regular files under tmp and skips every other
// entry. Every path goes through root, which refuses to leave the run's folder even if
// something there were a link.
func extract(ctx context.Context, root *os.Root, tmp string, r io.Reader, maxBytes int64) (int64, error) {
	return walkArchive(ctx, r, maxBytes,
		func(rel string) error { return root.MkdirAll(path.Join(tmp, rel), dirPerm) },
		func(rel string, _ int64, r io.Reader) (int64, error) { return writeFile(root, path.Join(tmp, rel), r) })
}

// walkArchive reads a tar stream with the rules every Store's Put shares: at most MaxFiles
// entries (ErrTooManyFiles), entries with a path entryPath refuses and every entry other than
// folders and regular files skipped, and at most maxBytes of file content (ErrTooLarge,
// decided from a file's header before any of it is written). It calls dir for each folder and
// file for each regular file with its path under the copied folder ("" for the top entry
// itself) and its size; file reads the content from r and returns the bytes it kept. The
// result is the bytes of file content kept.
func walkArchive(ctx context.Context, r io.Reader, maxBytes int64,
	dir func(rel string) error, file func(rel string, size int64, r io.Reader) (int64, error)) (int64, error) {
	tr := tar.NewReader(r)
	var written int64
	for entries := 0; ; entries++ {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		h, err := tr.Next()
		if err == io.EOF {
			return written, nil
		}
		if err != nil {
			return 0, err
		}
		if entries == MaxFiles {
			return 0, fmt.Errorf("%w: more than %d files and folders", ErrTooManyFiles, MaxFiles)
		}
		rel, ok := entryPath(h.Name)
		if !ok {
			continue
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := dir(rel); err != nil {
				return 0, err
			}
		case tar.TypeReg:
			if h.Size > maxBytes-written {
				return 0, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, maxBytes)
			}
			n, err := file(rel, h.Size, tr)
			if err != nil {
				return 0, err
			}
			written += n
		}
	}
}

func writeFile(root *os.Root, name string, r io.Reader) (int64, error) {
	if dir := path.Dir(name); dir != "." {
		if err := root.MkdirAll(dir, dirPerm); err != nil {
			return 0, err
		}
	}
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, filePerm)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return n, err
}

// entryPath maps an archive entry's name to its place under the extracted folder: the first
// component (the copied folder's own name) is dropped, "." and empty components are ignored.
// Absolute names, "..", backslashes, NUL and overlong names are refused (ok false).
func entryPath(name string) (rel string, ok bool) {
	if name == "" || len(name) > maxNameBytes || strings.HasPrefix(name, "/") || strings.ContainsAny(name, "\\\x00") {
		return "", false
	}
	var parts []string
	for _, p := range strings.Split(name, "/") {
		switch p {
		case "", ".":
			continue
		case "..":
			return "", false
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		return "", false
	}
	return strings.Join(parts[1:], "/"), true
}

func (s *FSStore) Open(ctx context.Context, orgID, taskID, relPath string) (io.ReadSeekCloser, fs.FileInfo, error) {
	dir, err := s.runDir(orgID, taskID)
	if err != nil {
		return nil, nil, ErrNotFound
	}
	rel, ok := servePath(relPath)
	if !ok {
		return nil, nil, ErrNotFound
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, nil, ErrNotFound
	}
	defer root.Close()
	f, err := root.Open(rel)
	if err != nil {
		return nil, nil, ErrNotFound
	}
	info, err := f.Stat()
	switch {
	case err != nil:
		err = ErrNotFound
	case info.IsDir():
		err = ErrIsDir
	case !info.Mode().IsRegular():
		err = ErrNotFound
	}
	if err != nil {
		f.Close()
		return nil, info, err
	}
	return f, info, nil
}

// servePath checks a requested path: slash-separated, relative, without ".", "..", empty
// components, backslashes, NUL, or components starting with a dot (in-progress uploads live in
// dot-folders, and no report needs a hidden file). "" is the run's folder itself. A trailing
// slash is kept: it makes a file not found, as it does for the operating system.
func servePath(p string) (string, bool) {
	if p == "" {
		return ".", true
	}
	if len(p) > maxNameBytes || strings.ContainsAny(p, "\\\x00") {
		return "", false
	}
	for _, c := range strings.Split(strings.TrimSuffix(p, "/"), "/") {
		if c == "" || c[0] == '.' {
			return "", false
		}
	}
	return p, true
}

func (s *FSStore) Size(ctx context.Context, orgID, taskID string) (int64, error) {
	dir, err := s.runDir(orgID, taskID)
	if err != nil {
		return 0, err
	}
	return treeSize(ctx, dir)
}

func (s *FSStore) Delete(ctx context.Context, orgID, taskID string) (int64, error) {
	dir, err := s.runDir(orgID, taskID)
	if err != nil {
		return 0, err
	}
	freed, err := treeSize(ctx, dir)
	if err != nil {
		return 0, err
	}
	if err := os.RemoveAll(dir); err != nil {
		return 0, err
	}
	return freed, nil
}

func (s *FSStore) DeleteOrganization(ctx context.Context, orgID string) error {
	if !domain.ValidTaskID(orgID) {
		return ErrInvalidID
	}
	return os.RemoveAll(filepath.Join(s.dir, orgID))
}

// treeSize adds up the regular files under dir; a missing dir holds nothing.
func treeSize(ctx context.Context, dir string) (int64, error) {
	var total int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			total += info.Size()
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	return total, err
}

// IndexedDirs returns those of the run's stored folders that hold an index.html, the ones a
// link can open (a folder without one answers 404). Never nil, so that an empty answer is told
// apart from one not recorded.
func IndexedDirs(ctx context.Context, s Store, orgID, taskID string, dirs []string) []string {
	out := []string{}
	for _, d := range dirs {
		f, _, err := s.Open(ctx, orgID, taskID, d+"/index.html")
		if err == nil {
			f.Close()
			out = append(out, d)
		}
	}
	return out
}
