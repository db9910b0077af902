package report

import (
	"encoding/json"
	"errors"
	"strings"

	"verdict/internal/domain"
)

// ParsePlaywright reads the output of Playwright's JSON reporter: suites (a file, then its
// describe blocks) nest suites and specs, a spec has one test per project, and a test has one
// result per attempt.
//
// A result counts as a pass when its status is the test's expectedStatus, so a test marked
// test.fail() that fails passes. The test's own status ("expected", "unexpected", "flaky",
// "skipped"), which Playwright computes the same way, decides when present. The suite is the
// project in brackets followed by the title path, as Playwright's list reporter prints it:
// "[chromium] login.spec.ts › Login".
//
// ErrUnrecognized when the document is JSON but not a Playwright report (no top-level suites,
// or neither config nor stats beside them).
func ParsePlaywright(data []byte) ([]domain.TestResult, error) {
	return parsePlaywright(data, maxTests)
}

// pwReport is read in two steps: the top level to recognise the document, then its suites.
type pwReport struct {
	Config json.RawMessage `json:"config"`
	Stats  json.RawMessage `json:"stats"`
	Suites json.RawMessage `json:"suites"`
}

type pwSuite struct {
	Title  string    `json:"title"`
	Specs  []pwSpec  `json:"specs"`
	Suites []pwSuite `json:"suites"`
}

type pwSpec struct {
	Title string   `json:"title"`
	Tests []pwTest `json:"tests"`
}

type pwTest struct {
	ProjectName    string     `json:"projectName"`
	ExpectedStatus string     `json:"expectedStatus"`
	Status         string     `json:"status"`
	Results        []pwResult `json:"results"`
}

type pwResult struct {
	Status      string         `json:"status"`
	Duration    float64        `json:"duration"`
	Error       *pwError       `json:"error"`
	Errors      []pwError      `json:"errors"`
	Attachments []pwAttachment `json:"attachments"`
}

// pwAttachment is an attachment of a result: a file (path, absolute in the container) or an
// inline body, which is not kept.
type pwAttachment struct {
	Name        string `json:"name"`
	ContentType string `json:"contentType"`
	Path        string `json:"path"`
}

type pwError struct {
	Message string `json:"message"`
}

func parsePlaywright(data []byte, limit int) ([]domain.TestResult, error) {
	var rep pwReport
	if err := json.Unmarshal(data, &rep); err != nil {
		var notObject *json.UnmarshalTypeError
		if errors.As(err, &notObject) {
			return nil, ErrUnrecognized
		}
		return nil, err
	}
	if !jsonKind(rep.Suites, '[') || !(jsonKind(rep.Config, '{') || jsonKind(rep.Stats, '{')) {
		return nil, ErrUnrecognized
	}
	var suites []pwSuite
	if err := json.Unmarshal(rep.Suites, &suites); err != nil {
		return nil, err
	}
	w := pwWalker{limit: limit}
	for _, s := range suites {
		w.suite(s, nil)
	}
	if w.limited {
		return w.out, ErrLimit
	}
	return w.out, nil
}

// jsonKind reports whether a raw JSON value starts with the given delimiter.
func jsonKind(v json.RawMessage, delim byte) bool { return len(v) > 0 && v[0] == delim }

type pwWalker struct {
	out     []domain.TestResult
	limit   int
	limited bool
}

func (w *pwWalker) suite(s pwSuite, path []string) {
	if t := strings.TrimSpace(s.Title); t != "" {
		path = append(path[:len(path):len(path)], t)
	}
	titles := strings.Join(path, " › ")
	for _, spec := range s.Specs {
		for _, t := range spec.Tests {
			if len(w.out) == w.limit {
				w.limited = true
				return
			}
			suite := titles
			if t.ProjectName != "" {
				suite = strings.TrimSpace("[" + t.ProjectName + "] " + titles)
			}
			w.out = append(w.out, t.result(spec.Title, suite))
		}
	}
	for _, child := range s.Suites {
		w.suite(child, path)
	}
}

func (t pwTest) result(name, suite string) domain.TestResult {
	expected := t.ExpectedStatus
	if expected == "" {
		expected = "passed"
	}
	attempts := make([]attempt, len(t.Results))
	for i, res := range t.Results {
		a := attempt{status: domain.TestFailed, durationMs: millis(res.Duration), err: res.message()}
		for _, f := range res.Attachments {
			if at, ok := attachment(f.Name, f.ContentType, f.Path); ok && len(a.attachments) < maxAttachments {
				a.attachments = append(a.attachments, at)
			}
		}
		switch res.Status {
		case "skipped":
			a.status = domain.TestSkipped
		case expected:
			a.status = domain.TestPassed
		}
		attempts[i] = a
	}
	r := settle(name, suite, attempts)
	switch t.Status {
	case "expected":
		r.Status, r.Error = domain.TestPassed, ""
	case "unexpected":
		r.Status = domain.TestFailed
	case "flaky":
		r.Status = domain.TestFlaky
	case "skipped":
		r.Status, r.Error = domain.TestSkipped, ""
	}
	if r.Status == domain.TestFailed || r.Status == domain.TestFlaky {
		for i := len(attempts) - 1; i >= 0 && r.Error == ""; i-- {
			r.Error = attempts[i].err
		}
	}
	return r
}

func (res pwResult) message() string {
	if res.Error != nil && res.Error.Message != "" {
		return errorText(res.Error.Message)
	}
	for _, e := range res.Errors {
		if e.Message != "" {
			return errorText(e.Message)
		}
	}
	return ""
}
