package report

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"verdict/internal/domain"
	"verdict/internal/resultfiles"
)

// ParseDir finds and parses the result files in a run's copied report folders.
//
// Files are recognised by name and shape, never trusted by name alone: *.xml whose root is
// <testsuites> or <testsuite> (JUnit), *-result.json (Allure 2), and other *.json holding a JSON
// object with top-level "suites" and "config" or "stats" (Playwright's JSON reporter). Byte-
// identical files count once, so a report copied into two folders is not counted twice.
//
// *.trx whose root is <TestRun> is a Visual Studio test results file (.NET's xUnit, NUnit and
// MSTest through `dotnet test --logger trx`). An *.xml whose root is <testng-results> is
// TestNG's own results file, one whose root is <test-run> NUnit 3's.
//
// When several formats hold tests, one format answers for the whole run, the first present of
// Playwright JSON, Allure, TestNG, NUnit 3, JUnit, TRX (a framework's own file before the JUnit
// files written beside it, which say less): projects emit several reporters for one run, and the same
// test is named differently by each (Playwright's JUnit writes "Describe › title", Allure
// "title", both with other suites), so matching tests across formats would count some twice.
// Playwright JSON is preferred because it alone keeps retries and expected failures, Allure
// because it keeps retries. A run whose container mixes two frameworks reporting in different
// formats is judged by one of them; its exit code still fails the run when the other failed.
//
// A test keeps the attachments its results name (Playwright JSON's and Allure's attachments,
// JUnit's [[ATTACHMENT|path]]) whose file is a regular file among the run's reports, by its
// path there (AttachmentPath): never one outside them.
//
// The walk never leaves root and never follows a symbolic link. Files, bytes, depth and tests
// are bounded. The error reports the files that could not be read or parsed and any bound
// that was reached (errors.Is(err, ErrLimit)); the results are still the ones that were read,
// so a caller keeps them and records the error as a note. A missing root has no results.
func ParseDir(root string) ([]domain.TestResult, error) {
	r, err := ReadDir(root)
	return r.Tests, err
}

// ParseFS is ParseDir over a file system: the run's reports as a Store other than FSStore
// presents them (S3Store.FS). Its rules and bounds are ParseDir's.
func ParseFS(fsys fs.FS) ([]domain.TestResult, error) {
	r, err := ReadFS(fsys)
	return r.Tests, err
}

// Results are what ReadDir read: the tests, the format that answered for them, and the files
// of that format they came from, in the order they were read (what a run says it read).
type Results struct {
	Tests  []domain.TestResult
	Format string // "Playwright JSON", "Allure", "TestNG", "NUnit 3", "JUnit XML", "TRX"; "" for none
	Files  []string
}

// ReadDir is ParseDir, with the format and files that answered.
func ReadDir(root string) (Results, error) {
	r, err := os.OpenRoot(root)
	if errors.Is(err, fs.ErrNotExist) {
		return Results{}, nil
	}
	if err != nil {
		return Results{}, err
	}
	defer r.Close()
	return ReadFS(r.FS())
}

// ReadFS is ParseFS, with the format and files that answered.
func ReadFS(fsys fs.FS) (Results, error) {
	p := dirParser{fsys: fsys, seen: map[[sha256.Size]byte]bool{}, files: newFileSet(), answered: map[string][]string{}}
	if err := fs.WalkDir(p.fsys, ".", p.visit); err != nil && !errors.Is(err, ErrLimit) {
		p.note(".", err)
	}
	var r Results
	switch {
	case len(p.playwright) > 0:
		r.Tests, r.Format = p.playwright, "Playwright JSON"
	case len(p.allure) > 0:
		r.Tests, r.Format = mergeAllure(p.allure), "Allure"
	case len(p.testng) > 0:
		r.Tests, r.Format = p.testng, "TestNG"
	case len(p.nunit) > 0:
		r.Tests, r.Format = p.nunit, "NUnit 3"
	case len(p.junit) == 0 && len(p.trx) > 0:
		r.Tests, r.Format = p.trx, "TRX"
	case len(p.junit) > 0:
		r.Tests, r.Format = p.junit, "JUnit XML"
	}
	r.Files = p.answered[r.Format]
	keepFound(r.Tests, p.files)
	return r, p.err()
}

// dirParser holds one ParseDir's progress.
type dirParser struct {
	fsys       fs.FS
	seen       map[[sha256.Size]byte]bool
	entries    int
	bytes      int64
	tests      int
	playwright []domain.TestResult
	junit      []domain.TestResult
	testng     []domain.TestResult
	nunit      []domain.TestResult
	trx        []domain.TestResult
	allure     []allureResult
	problems   []error
	dropped    int
	files      fileSet             // the regular files met, which attachments must name
	answered   map[string][]string // by format (Results.Format): the files that held its tests
}

const maxProblems = 10 // notes kept in ParseDir's error; the rest are counted

func (p *dirParser) note(name string, err error) {
	if len(p.problems) == maxProblems {
		p.dropped++
		return
	}
	p.problems = append(p.problems, fmt.Errorf("%s: %w", name, err))
}

func (p *dirParser) err() error {
	if p.dropped > 0 {
		p.problems = append(p.problems, fmt.Errorf("and %d more files", p.dropped))
	}
	return errors.Join(p.problems...)
}

func (p *dirParser) visit(name string, d fs.DirEntry, err error) error {
	if err != nil {
		p.note(name, err) // an unreadable folder is skipped, the walk goes on
		return nil
	}
	if p.entries++; p.entries > maxEntries {
		p.note(name, fmt.Errorf("%w: more than %d files and folders", ErrLimit, maxEntries))
		return ErrLimit
	}
	if d.IsDir() {
		if name != "." && strings.Count(name, "/") >= maxDepth {
			p.note(name, fmt.Errorf("%w: folders nested deeper than %d", ErrLimit, maxDepth))
			return fs.SkipDir
		}
		return nil
	}
	if !d.Type().IsRegular() {
		return nil // symbolic links included: never followed, nor named by an attachment
	}
	p.files.add(name)
	kind := resultfiles.Kind(name)
	if kind == "" {
		return nil
	}
	data, err := p.read(name)
	if err != nil {
		p.note(name, err)
		return nil
	}
	if data == nil {
		return nil
	}
	switch err := p.parse(name, kind, data); {
	case errors.Is(err, ErrLimit):
		p.note(name, err)
		return ErrLimit
	case err != nil && !errors.Is(err, ErrUnrecognized):
		p.note(name, err)
	}
	return nil
}

// read returns a candidate file's bytes within the bounds, or nil for a copy already read.
func (p *dirParser) read(name string) ([]byte, error) {
	f, err := p.fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, nil // replaced since the folder was listed
	}
	if info.Size() > maxFileBytes {
		return nil, fmt.Errorf("%w: file larger than %d bytes", ErrLimit, maxFileBytes)
	}
	if p.bytes+info.Size() > maxTotalBytes {
		return nil, fmt.Errorf("%w: result files larger than %d bytes together", ErrLimit, maxTotalBytes)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxFileBytes))
	if err != nil {
		return nil, err
	}
	p.bytes += int64(len(data))
	sum := sha256.Sum256(data)
	if p.seen[sum] {
		return nil, nil
	}
	p.seen[sum] = true
	return data, nil
}

// parse reads the result file name, of kind, and resolves the attachments its tests name
// against its folder.
func (p *dirParser) parse(name, kind string, data []byte) error {
	left := maxTests - p.tests
	var (
		tests []domain.TestResult
		err   error
	)
	format := ""
	switch kind {
	case resultfiles.XML: // JUnit's, TestNG's or NUnit's, by their root element
		tests, err = parseJUnit(data, left)
		resolveAttachments(name, tests)
		p.junit, format = append(p.junit, tests...), "JUnit XML"
		if errors.Is(err, ErrUnrecognized) {
			tests, err = parseTestNG(data, left)
			p.testng, format = append(p.testng, tests...), "TestNG"
		}
		if errors.Is(err, ErrUnrecognized) {
			tests, err = parseNUnit(data, left)
			p.nunit, format = append(p.nunit, tests...), "NUnit 3"
		}
	case resultfiles.TRX:
		tests, err = parseTRX(data, left)
		p.trx, format = append(p.trx, tests...), "TRX"
	case resultfiles.Allure:
		if left == 0 {
			return fmt.Errorf("%w: more than %d test results", ErrLimit, maxTests)
		}
		r, err := decodeAllure(data)
		if err != nil {
			return err
		}
		r.attempt.attachments = resolvedOnly(name, r.attempt.attachments)
		p.allure = append(p.allure, r)
		p.tests++
		p.answered["Allure"] = append(p.answered["Allure"], name)
		return nil
	case resultfiles.Playwright:
		if !resultfiles.LooksLikePlaywright(data) {
			return ErrUnrecognized
		}
		tests, err = parsePlaywright(data, left)
		resolveAttachments(name, tests)
		p.playwright, format = append(p.playwright, tests...), "Playwright JSON"
	}
	if len(tests) > 0 {
		p.answered[format] = append(p.answered[format], name)
	}
	p.tests += len(tests)
	return err
}
