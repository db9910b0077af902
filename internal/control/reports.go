package control

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"

	"verdict/internal/billing"
	"verdict/internal/domain"
	"verdict/internal/report"
	"verdict/internal/run"
)

// errPutReturned ends a folder's pipe once its Put returned, so that writes after an early
// return (too many files) fail at once instead of blocking.
var errPutReturned = errors.New("report folder already stored or refused")

// keepReports stores the run's report folders from archive in the report store, within the
// organization's storage limit, and parses the results they hold (run.Peer.Upload).
func (p *peer) keepReports(ctx context.Context, e *domain.Execution, archive io.Reader, log *slog.Logger) (run.Reports, error) {
	var f run.Reports
	org, err := p.Store.Organizations().Get(ctx, e.OrganizationID)
	if err != nil {
		if err := p.unavailable(ctx, err); errors.Is(err, run.ErrUnavailable) {
			return f, err // nothing kept yet: the runner uploads again once the database answers
		}
		f.Notes = append(f.Notes, "reports were not collected: the organization could not be read")
		return f, nil
	}
	room := int64(-1)
	if limit := org.Limits().MaxStorageBytes; limit != domain.Unlimited {
		room = max(limit-org.StorageUsedBytes, 0)
	}
	listed := e.ReportFolders
	if len(listed) == 0 {
		listed = domain.DefaultReportFolders
	}
	// And the result files the runner found elsewhere under /app, kept as one more folder.
	folders := run.ReportFolders(append(listed[:len(listed):len(listed)], run.FoundFolder))
	kept := map[string]int64{}
	var total int64
	// keep records one folder's Put; false when the reports must all be dropped.
	keep := func(folder string, n int64, err error) bool {
		switch {
		case errors.Is(err, report.ErrTooManyFiles):
			// A bound on entries, not on storage: this folder alone is left out, and no storage
			// alert is raised.
			f.Notes = append(f.Notes, fmt.Sprintf("report folder %s was not kept: it holds more than %d files and "+
				"folders, the limit for one report folder", folder, report.MaxFiles))
		case errors.Is(err, report.ErrTooLarge):
			return false
		case err != nil:
			log.Warn("storing a report folder failed", "folder", folder, "err", err)
		default:
			kept[folder] = n
			total += n
		}
		return true
	}
	limit := func() int64 {
		if room < 0 {
			return 1 << 40
		}
		return max(room-total, 0)
	}
	put := func(rd io.Reader, into string) (int64, error) {
		return p.Reports.Put(ctx, e.OrganizationID, e.TaskID, rd, into, limit())
	}

	found, err := splitReports(archive, folders, room, put)
	if errors.Is(err, report.ErrTooLarge) {
		return p.dropReports(ctx, e, f, log), nil
	}
	if err != nil {
		return run.Reports{}, err
	}
	for _, folder := range folders {
		if res, ok := found[folder]; ok && !keep(folder, res.written, res.err) {
			return p.dropReports(ctx, e, f, log), nil
		}
	}
	for _, folder := range folders {
		if n, ok := kept[folder]; ok {
			f.Dirs = append(f.Dirs, folder)
			f.Bytes += n
		}
	}
	// Recorded now, so that views link only folders that open without looking at the disk.
	f.Indexes = report.IndexedDirs(ctx, p.Reports, e.OrganizationID, e.TaskID, f.Dirs)
	if len(f.Dirs) > 0 && (p.ReportDir != nil || p.ReportFS != nil) {
		p.readResults(ctx, e, &f, limit(), log)
	}
	return f, nil
}

// readResults reads the test results in the run's stored reports into f (masked like the log,
// bounded, with a note of the files read), and keeps the results report of a run that wrote
// results but no HTML report, within room bytes.
func (p *peer) readResults(ctx context.Context, e *domain.Execution, f *run.Reports, room int64, log *slog.Logger) {
	// Results are the container's words: its secrets are masked in them as in its log.
	mask, err := reportMask(p.Box, e.EnvCipher)
	if err != nil {
		f.Notes = append(f.Notes, "test results were not read: the run's secrets to mask in them could not be decrypted")
		return
	}
	read, err := p.parseReports(ctx, e)
	tests := read.Tests
	if err != nil {
		f.Notes = append(f.Notes, mask("test results could not be read: "+err.Error()))
	}
	if len(read.Files) > 0 {
		f.Notes = append(f.Notes, mask(readNote(read)))
	}
	for i := range tests {
		tests[i].Name, tests[i].Suite, tests[i].Error = mask(tests[i].Name), mask(tests[i].Suite), mask(tests[i].Error)
		for j := range tests[i].Attachments { // its path stays: it names a file of the reports
			tests[i].Attachments[j].Name = mask(tests[i].Attachments[j].Name)
		}
	}
	// The summary counts every test; the run keeps a bounded list of them, failures first,
	// since every view of the run reads that list back whole.
	var dropped int
	f.Summary = domain.Summarize(tests)
	if len(tests) > 0 && len(f.Indexes) == 0 && !slices.Contains(f.Dirs, report.ResultsFolder) {
		p.keepResultsReport(ctx, e, tests, f, room, log)
	}
	f.Tests, dropped = domain.KeepTests(tests)
	if dropped > 0 {
		f.Notes = append(f.Notes, fmt.Sprintf("%d more tests were not kept: a run keeps at most %d tests and %d KiB "+
			"of test results, failures first; the summary counts them all", dropped, domain.MaxKeptTests, domain.MaxKeptTestBytes>>10))
	}
}

// keepResultsReport stores a results report of tests for a run whose suite wrote results but
// no HTML report, and lists it with the run's reports: every run with results has a report.
func (p *peer) keepResultsReport(ctx context.Context, e *domain.Execution, tests []domain.TestResult, f *run.Reports,
	room int64, log *slog.Logger) {
	archive, err := report.ResultsArchive(e.TaskID, tests)
	if err == nil {
		var n int64
		if n, err = p.Reports.Put(ctx, e.OrganizationID, e.TaskID, archive, report.ResultsFolder, room); err == nil {
			f.Dirs, f.Indexes, f.Bytes = append(f.Dirs, report.ResultsFolder), append(f.Indexes, report.ResultsFolder), f.Bytes+n
			return
		}
	}
	if errors.Is(err, report.ErrTooLarge) {
		f.Notes = append(f.Notes, "the results report was not kept: it would pass the organization's storage limit")
		return
	}
	log.Warn("storing the results report failed", "err", err)
}

// parseReports reads the test results in the run's stored reports.
func (p *peer) parseReports(ctx context.Context, e *domain.Execution) (report.Results, error) {
	if p.ReportFS == nil {
		return report.ReadDir(p.ReportDir(e.OrganizationID, e.TaskID))
	}
	fsys, err := p.ReportFS(ctx, e.OrganizationID, e.TaskID)
	if err != nil {
		return report.Results{}, err
	}
	return report.ReadFS(fsys)
}

// readNote says which result files a run's tests were read from: the format that answered and
// its first files (paths in the run's reports).
func readNote(r report.Results) string {
	const shown = 5
	files := strings.Join(r.Files[:min(len(r.Files), shown)], ", ")
	if more := len(r.Files) - shown; more > 0 {
		files += fmt.Sprintf(" and %d more", more)
	}
	return fmt.Sprintf("test results read from %s: %s", r.Format, files)
}

// dropReports removes what was kept of the run's reports when together they would pass the
// organization's storage limit, and raises the storage alert.
func (p *peer) dropReports(ctx context.Context, e *domain.Execution, f run.Reports, log *slog.Logger) run.Reports {
	if _, err := p.Reports.Delete(ctx, e.OrganizationID, e.TaskID); err != nil {
		log.Warn("removing the partial reports failed", "err", err)
	}
	f.Dirs, f.Bytes = nil, 0
	f.Notes = append(f.Notes, "reports were dropped: they would pass the organization's storage limit")
	if err := p.countStorage(ctx, e.OrganizationID, billing.Usage{Refused: true,
		Note: "The reports of run " + e.TaskID + " were dropped because they would pass the limit."}); err != nil {
		log.Error("raising the storage alert failed", "err", err)
	}
	return f
}

// folderResult is what storing one folder gave.
type folderResult struct {
	written int64
	err     error
}

// putFunc stores one folder's archive under into, as report.Store.Put does.
type putFunc func(r io.Reader, into string) (int64, error)

// splitReports reads src, the archive of a run's report folders (entries named by their path
// under /app), and stores each folder through put, as an archive of that folder alone. The
// folders' puts run side by side, each fed through a pipe, so they need not come one after
// another in src. Entries outside every folder are left out. room bounds the folders' file
// content together (negative: no bound): past it every put is abandoned and the error is
// report.ErrTooLarge. An archive that cannot be read keeps nothing.
func splitReports(src io.Reader, folders []string, room int64, put putFunc) (found map[string]folderResult, err error) {
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
	var content int64
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return results((*folderPut).close), nil
		}
		if err != nil {
			abort(err)
			return nil, fmt.Errorf("reading the reports' archive: %w", err)
		}
		folder, name, ok := run.PlaceEntry(h.Name, folders)
		if !ok {
			continue
		}
		if h.Typeflag == tar.TypeReg {
			if room >= 0 && h.Size > room-content {
				abort(report.ErrTooLarge)
				return nil, fmt.Errorf("%w: more than %d bytes", report.ErrTooLarge, room)
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
			return nil, fmt.Errorf("reading the reports' archive: %w", in.err)
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
