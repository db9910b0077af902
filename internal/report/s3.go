package report

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"path"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"verdict/internal/domain"
)

// S3Options locate a bucket of an S3-compatible object store.
type S3Options struct {
	// Endpoint is the service's URL, such as https://s3.eu-west-1.amazonaws.com or
	// http://127.0.0.1:9000: its scheme decides TLS.
	Endpoint  string
	Region    string // empty: the store's default (or, on AWS, the bucket's own, looked up)
	Bucket    string
	AccessKey string
	SecretKey string
	// PathStyle addresses the bucket as a path (http://host/bucket/key) rather than as a host
	// name (http://bucket.host/key); false lets the client choose by the endpoint.
	PathStyle bool
}

// S3Store keeps reports as objects of one bucket, each under <org>/<task>/<path>, in place of
// FSStore's folders. Folders exist only as the prefixes of their files: an empty folder of an
// archive is not kept. Nothing is written to the local disk; files stream through from the
// archive to the store and back to the reader.
//
// Unlike FSStore, a Put is not published all at once: its files appear as they are uploaded,
// and a refused archive has what was uploaded deleted before Put returns. Reports are only
// linked once their run has finished, after Put.
type S3Store struct {
	client *minio.Client
	bucket string
}

var _ Store = (*S3Store)(nil)

// NewS3Store makes the bucket's client. It does not reach the store: Check does.
func NewS3Store(o S3Options) (*S3Store, error) {
	u, err := url.Parse(o.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
		return nil, fmt.Errorf("report: S3 endpoint: want an http(s) URL without a path, got %q", o.Endpoint)
	}
	if o.Bucket == "" {
		return nil, errors.New("report: S3 bucket: required")
	}
	lookup := minio.BucketLookupAuto
	if o.PathStyle {
		lookup = minio.BucketLookupPath
	}
	c, err := minio.New(u.Host, &minio.Options{
		Creds:        credentials.NewStaticV4(o.AccessKey, o.SecretKey, ""),
		Secure:       u.Scheme == "https",
		Region:       o.Region,
		BucketLookup: lookup,
	})
	if err != nil {
		return nil, fmt.Errorf("report: S3 client: %w", err)
	}
	return &S3Store{client: c, bucket: o.Bucket}, nil
}

// Check asks the store whether the bucket exists and these credentials reach it.
func (s *S3Store) Check(ctx context.Context) error {
	ok, err := s.client.BucketExists(ctx, s.bucket)
	if err != nil {
		return fmt.Errorf("report: S3 bucket %s: %w", s.bucket, err)
	}
	if !ok {
		return fmt.Errorf("report: S3 bucket %s does not exist", s.bucket)
	}
	return nil
}

// runPrefix is the key prefix of a run's objects, with its trailing slash.
func runPrefix(orgID, taskID string) (string, error) {
	if err := validIDs(orgID, taskID); err != nil {
		return "", err
	}
	return orgID + "/" + taskID + "/", nil
}

// maxKeyBytes is the longest object key S3 stores accept; keys are UTF-8.
const maxKeyBytes = 1024

// cleanupTimeout bounds the removal of a refused Put's objects, which goes on when the Put's
// own context has ended.
const cleanupTimeout = time.Minute

func (s *S3Store) Put(ctx context.Context, orgID, taskID string, r io.Reader, into string, maxBytes int64) (int64, error) {
	prefix, err := runPrefix(orgID, taskID)
	if err != nil {
		return 0, err
	}
	if !validInto(into) {
		return 0, fmt.Errorf("report: invalid folder name %q", into)
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	base := prefix + into
	// An existing `into`, as a file or as a folder, is not replaced.
	if _, err := s.client.StatObject(ctx, s.bucket, base, minio.StatObjectOptions{}); err == nil {
		return 0, fmt.Errorf("report: %s: %w", into, fs.ErrExist)
	} else if !notFound(err) {
		return 0, err
	}
	if has, err := s.hasPrefix(ctx, base+"/"); err != nil {
		return 0, err
	} else if has {
		return 0, fmt.Errorf("report: %s: %w", into, fs.ErrExist)
	}
	var uploaded []string
	written, err := walkArchive(ctx, r, maxBytes,
		func(string) error { return nil }, // folders are the prefixes of their files
		func(rel string, size int64, r io.Reader) (int64, error) {
			key := base
			if rel != "" {
				key += "/" + rel
			}
			if len(key) > maxKeyBytes || !utf8.ValidString(key) {
				return 0, nil // a name no S3 store takes: skipped, like a link
			}
			info, err := s.client.PutObject(ctx, s.bucket, key, r, size,
				minio.PutObjectOptions{ContentType: ContentType(key)})
			if err != nil {
				return 0, err
			}
			uploaded = append(uploaded, key)
			return info.Size, nil
		})
	if err != nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		if rerr := s.removeKeys(cctx, uploaded); rerr != nil {
			return 0, errors.Join(err, fmt.Errorf("report: removing the refused archive's objects: %w", rerr))
		}
		return 0, err
	}
	return written, nil
}

// removeKeys deletes the named objects.
func (s *S3Store) removeKeys(ctx context.Context, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	ch := make(chan minio.ObjectInfo)
	go func() {
		defer close(ch)
		for _, k := range keys {
			select {
			case ch <- minio.ObjectInfo{Key: k}:
			case <-ctx.Done():
				return
			}
		}
	}()
	var errs []error
	for e := range s.client.RemoveObjects(ctx, s.bucket, ch, minio.RemoveObjectsOptions{}) {
		errs = append(errs, fmt.Errorf("%s: %w", e.ObjectName, e.Err))
	}
	if err := ctx.Err(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// hasPrefix tells whether any object's key starts with prefix.
func (s *S3Store) hasPrefix(ctx context.Context, prefix string) (bool, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	o, ok := <-s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true, MaxKeys: 1})
	if !ok {
		return false, nil
	}
	if o.Err != nil {
		return false, o.Err
	}
	return true, nil
}

// notFound tells whether err is the store's answer for a missing object.
func notFound(err error) bool {
	switch minio.ToErrorResponse(err).Code {
	case minio.NoSuchKey, "NotFound":
		return true
	}
	return false
}

func (s *S3Store) Open(ctx context.Context, orgID, taskID, relPath string) (io.ReadSeekCloser, fs.FileInfo, error) {
	prefix, err := runPrefix(orgID, taskID)
	if err != nil {
		return nil, nil, ErrNotFound
	}
	rel, ok := servePath(relPath)
	if !ok {
		return nil, nil, ErrNotFound
	}
	if rel == "." || strings.HasSuffix(rel, "/") {
		// Only a folder can be asked for with a trailing slash, as on a filesystem.
		dir := prefix
		if rel != "." {
			dir += rel
		}
		return nil, nil, s.dirOrMissing(ctx, dir)
	}
	key := prefix + rel
	obj, err := s.client.GetObject(ctx, s.bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, nil, err
	}
	st, err := obj.Stat()
	if err != nil {
		obj.Close()
		if notFound(err) {
			return nil, nil, s.dirOrMissing(ctx, key+"/")
		}
		return nil, nil, err
	}
	return obj, objectInfo{name: path.Base(key), size: st.Size, mod: st.LastModified}, nil
}

// dirOrMissing is Open's answer for a path that is no object: ErrIsDir when objects lie under
// it (prefix ends with a slash), else ErrNotFound.
func (s *S3Store) dirOrMissing(ctx context.Context, prefix string) error {
	has, err := s.hasPrefix(ctx, prefix)
	switch {
	case err != nil:
		return err
	case has:
		return ErrIsDir
	}
	return ErrNotFound
}

func (s *S3Store) Size(ctx context.Context, orgID, taskID string) (int64, error) {
	prefix, err := runPrefix(orgID, taskID)
	if err != nil {
		return 0, err
	}
	var total int64
	for o := range s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if o.Err != nil {
			return 0, o.Err
		}
		total += o.Size
	}
	return total, nil
}

func (s *S3Store) Delete(ctx context.Context, orgID, taskID string) (int64, error) {
	prefix, err := runPrefix(orgID, taskID)
	if err != nil {
		return 0, err
	}
	var (
		freed int64
		keys  []string
	)
	for o := range s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if o.Err != nil {
			return 0, o.Err
		}
		freed += o.Size
		keys = append(keys, o.Key)
	}
	if err := s.removeKeys(ctx, keys); err != nil {
		return 0, err
	}
	return freed, nil
}

// deleteBatch is how many keys DeleteOrganization lists before it removes them: S3 removes at
// most 1,000 objects a request.
const deleteBatch = 1000

func (s *S3Store) DeleteOrganization(ctx context.Context, orgID string) error {
	if !domain.ValidTaskID(orgID) {
		return ErrInvalidID
	}
	keys := make([]string, 0, deleteBatch)
	for o := range s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: orgID + "/", Recursive: true}) {
		if o.Err != nil {
			return o.Err
		}
		if keys = append(keys, o.Key); len(keys) == deleteBatch {
			if err := s.removeKeys(ctx, keys); err != nil {
				return err
			}
			keys = keys[:0]
		}
	}
	return s.removeKeys(ctx, keys)
}

// FS is the run's reports as a read-only file system, for ParseFS. Its methods take ctx.
func (s *S3Store) FS(ctx context.Context, orgID, taskID string) (fs.FS, error) {
	prefix, err := runPrefix(orgID, taskID)
	if err != nil {
		return nil, err
	}
	return s3FS{ctx: ctx, s: s, prefix: prefix}, nil
}

// objectInfo is an object's fs.FileInfo: a regular file the service alone reads.
type objectInfo struct {
	name string
	size int64
	mod  time.Time
}

func (i objectInfo) Name() string       { return i.name }
func (i objectInfo) Size() int64        { return i.size }
func (i objectInfo) Mode() fs.FileMode  { return filePerm }
func (i objectInfo) ModTime() time.Time { return i.mod }
func (i objectInfo) IsDir() bool        { return false }
func (i objectInfo) Sys() any           { return nil }

// dirInfo is a prefix's fs.FileInfo.
type dirInfo struct{ name string }

func (i dirInfo) Name() string       { return i.name }
func (i dirInfo) Size() int64        { return 0 }
func (i dirInfo) Mode() fs.FileMode  { return fs.ModeDir | dirPerm }
func (i dirInfo) ModTime() time.Time { return time.Time{} }
func (i dirInfo) IsDir() bool        { return true }
func (i dirInfo) Sys() any           { return nil }

// s3FS is a run's objects as an fs.FS (and fs.ReadDirFS): a prefix with objects under it is
// a folder.
type s3FS struct {
	ctx    context.Context
	s      *S3Store
	prefix string
}

func (f s3FS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	if name == "." {
		return &s3Dir{info: dirInfo{name: "."}}, nil
	}
	key := f.prefix + name
	obj, err := f.s.client.GetObject(f.ctx, f.s.bucket, key, minio.GetObjectOptions{})
	if err == nil {
		st, serr := obj.Stat()
		if serr == nil {
			return &s3File{Object: obj, info: objectInfo{name: path.Base(name), size: st.Size, mod: st.LastModified}}, nil
		}
		obj.Close()
		err = serr
	}
	if !notFound(err) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	switch has, err := f.s.hasPrefix(f.ctx, key+"/"); {
	case err != nil:
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	case has:
		return &s3Dir{info: dirInfo{name: path.Base(name)}}, nil
	}
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}

// ReadDir lists one level of a folder: objects as files, deeper prefixes as folders.
func (f s3FS) ReadDir(name string) ([]fs.DirEntry, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrInvalid}
	}
	prefix := f.prefix
	if name != "." {
		prefix += name + "/"
	}
	var out []fs.DirEntry
	for o := range f.s.client.ListObjects(f.ctx, f.s.bucket, minio.ListObjectsOptions{Prefix: prefix}) {
		if o.Err != nil {
			return nil, &fs.PathError{Op: "readdir", Path: name, Err: o.Err}
		}
		base, isDir := strings.CutSuffix(strings.TrimPrefix(o.Key, prefix), "/")
		switch {
		case base == "" || strings.Contains(base, "/"):
			continue // a folder marker some other tool made
		case isDir:
			out = append(out, fs.FileInfoToDirEntry(dirInfo{name: base}))
		default:
			out = append(out, fs.FileInfoToDirEntry(objectInfo{name: base, size: o.Size, mod: o.LastModified}))
		}
	}
	if len(out) == 0 && name != "." {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrNotExist}
	}
	slices.SortFunc(out, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return out, nil
}

type s3File struct {
	*minio.Object
	info objectInfo
}

func (f *s3File) Stat() (fs.FileInfo, error) { return f.info, nil }

type s3Dir struct{ info dirInfo }

func (d *s3Dir) Stat() (fs.FileInfo, error) { return d.info, nil }
func (d *s3Dir) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.info.name, Err: ErrIsDir}
}
func (d *s3Dir) Close() error { return nil }
