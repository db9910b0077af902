package report

import (
	"hash/maphash"
	"io/fs"
	"path"
	"strings"

	"verdict/internal/domain"
)

// Bounds of a test's attachments: what a test keeps with its result, within the run's bound on
// kept results (domain.MaxKeptTestBytes).
const (
	maxAttachments    = 20   // per test, all attempts together (a screenshot, video and trace per attempt)
	maxAttachmentName = 128  // bytes of a name
	maxAttachmentType = 128  // bytes of a content type
	maxAttachmentPath = 1024 // bytes of a path, as written and as resolved
)

// appDir is where a container's reports are: the report folders are copied from under it, and
// the run's reports keep their paths below it (/app/test-results/x.png is test-results/x.png).
const appDir = "/app/"

// attachment is an attachment as a result file names it: its path as written, to be resolved
// against the file's folder (resolveAttachments).
func attachment(name, contentType, p string) (domain.Attachment, bool) {
	p = strings.TrimSpace(p)
	if p == "" || len(p) > maxAttachmentPath || strings.ContainsRune(p, 0) {
		return domain.Attachment{}, false
	}
	name = boundText(name, maxAttachmentName)
	if name == "" {
		name = boundText(path.Base(p), maxAttachmentName)
	}
	contentType = boundText(contentType, maxAttachmentType)
	if contentType == "" {
		contentType = ContentType(p)
	}
	return domain.Attachment{Name: name, ContentType: contentType, Path: p}, true
}

// AttachmentPath resolves the path of an attachment as the result file at file (a path in the
// run's reports) writes it: an absolute path is the container's, valid only under /app; a
// relative one is relative to the file's folder. The answer is a path in the run's reports;
// false for one that would leave them ("..", another absolute path) or is no file's name.
func AttachmentPath(file, written string) (string, bool) {
	var p string
	if strings.HasPrefix(written, "/") {
		rest, ok := strings.CutPrefix(written, appDir)
		if !ok {
			return "", false
		}
		p = path.Clean(rest)
	} else {
		p = path.Join(path.Dir(file), written)
	}
	if p == "." || len(p) > maxAttachmentPath || !fs.ValidPath(p) || strings.Contains(p, "\\") {
		return "", false
	}
	return p, true
}

// resolveAttachments rewrites the attachments of tests, read from file, as paths in the run's
// reports, dropping those that cannot be one.
func resolveAttachments(file string, tests []domain.TestResult) {
	for i := range tests {
		tests[i].Attachments = resolvedOnly(file, tests[i].Attachments)
	}
}

func resolvedOnly(file string, list []domain.Attachment) []domain.Attachment {
	out := list[:0]
	for _, a := range list {
		if p, ok := AttachmentPath(file, a.Path); ok {
			a.Path = p
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// fileSet holds the names of the regular files a walk met, by hash: ParseDir walks up to
// maxEntries of them, whose names would cost far more to keep. A collision keeps an
// attachment whose file is missing, whose link then answers 404.
type fileSet struct {
	seed  maphash.Seed
	names map[uint64]struct{}
}

func newFileSet() fileSet { return fileSet{seed: maphash.MakeSeed(), names: map[uint64]struct{}{}} }

func (s fileSet) add(name string) { s.names[maphash.String(s.seed, name)] = struct{}{} }

func (s fileSet) has(name string) bool {
	_, ok := s.names[maphash.String(s.seed, name)]
	return ok
}

// keepFound drops the attachments of tests whose file is not among the run's reports (a
// folder that was not collected, a file the suite named but did not write).
func keepFound(tests []domain.TestResult, files fileSet) {
	for i := range tests {
		list := tests[i].Attachments
		if len(list) == 0 {
			continue
		}
		out := list[:0]
		for _, a := range list {
			if files.has(a.Path) {
				out = append(out, a)
			}
		}
		if len(out) == 0 {
			out = nil
		}
		tests[i].Attachments = out
	}
}

// junitAttachments finds the attachments a JUnit <system-out> or <system-err> names in the
// convention of Jenkins' JUnit attachments plugin, which Playwright's junit reporter follows:
// a line [[ATTACHMENT|path]], the path relative to the XML file's folder or absolute.
func junitAttachments(text string, into []domain.Attachment) []domain.Attachment {
	const open, end = "[[ATTACHMENT|", "]]"
	for len(into) < maxAttachments {
		i := strings.Index(text, open)
		if i < 0 {
			break
		}
		text = text[i+len(open):]
		j := strings.Index(text, end)
		if j < 0 {
			break
		}
		if a, ok := attachment("", "", text[:j]); ok && !strings.ContainsAny(a.Path, "\n\r") {
			into = append(into, a)
		}
		text = text[j+len(end):]
	}
	return into
}
