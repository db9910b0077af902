package main

import (
	"crypto/md5"
	"crypto/rand"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"time"
)

// writeReports writes the same outcomes in every format Verdict parses, each in the folder its
// real tool uses, so one image exercises every parser:
//
//	junit/results.xml             JUnit XML (final outcome of each test)
//	allure-results/*-result.json  Allure 2 results (one file per attempt)
//	test-results/results.json     Playwright JSON reporter (every attempt)
//	playwright-report/index.html  a small HTML report
func writeReports(root string, start time.Time, tests []testCase) error {
	for _, w := range []func(string, time.Time, []testCase) error{writeJUnit, writeAllure, writePlaywrightJSON, writeHTML} {
		if err := w(root, start, tests); err != nil {
			return err
		}
	}
	return nil
}

func writeFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

func (t testCase) fullName() string { return t.folder + "/" + t.file + " > " + t.name }

func (t testCase) total() time.Duration {
	var d time.Duration
	for _, a := range t.attempts {
		d += a.duration
	}
	return d
}

// --- JUnit ---------------------------------------------------------------------------------------

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name      string      `xml:"name,attr"`
	Timestamp string      `xml:"timestamp,attr"`
	Tests     int         `xml:"tests,attr"`
	Failures  int         `xml:"failures,attr"`
	Errors    int         `xml:"errors,attr"`
	Skipped   int         `xml:"skipped,attr"`
	Time      string      `xml:"time,attr"`
	Cases     []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

func secs(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }

// writeJUnit groups tests by spec file, as Playwright's and pytest's JUnit reporters do. A test
// that passed on a retry is reported as passed, like those reporters do.
func writeJUnit(root string, start time.Time, tests []testCase) error {
	doc := junitSuites{Name: "verdict example suite (" + mode + ")"}
	var total time.Duration
	index := map[string]int{}
	for _, t := range tests {
		key := t.folder + "/" + t.file
		i, ok := index[key]
		if !ok {
			i = len(doc.Suites)
			index[key] = i
			doc.Suites = append(doc.Suites, junitSuite{Name: key, Timestamp: start.UTC().Format("2006-01-02T15:04:05")})
		}
		s := &doc.Suites[i]
		c := junitCase{Name: t.name, Classname: key, Time: secs(t.total())}
		if last := t.attempts[len(t.attempts)-1]; !last.passed {
			c.Failure = &junitFailure{Message: last.message, Type: "AssertionError", Text: last.message + "\n    at " + key}
			s.Failures++
			doc.Failures++
		}
		if t.flaky() {
			c.SystemOut = fmt.Sprintf("passed on retry #%d", len(t.attempts)-1)
		}
		s.Cases = append(s.Cases, c)
		s.Tests++
		doc.Tests++
		total += t.total()
	}
	for i := range doc.Suites {
		var d time.Duration
		for _, t := range tests {
			if t.folder+"/"+t.file == doc.Suites[i].Name {
				d += t.total()
			}
		}
		doc.Suites[i].Time = secs(d)
	}
	doc.Time = secs(total)
	out, err := xml.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	return writeFile(filepath.Join(root, "junit", "results.xml"), append([]byte(xml.Header), append(out, '\n')...))
}

// --- Allure 2 ------------------------------------------------------------------------------------

type allureLabel struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type allureResult struct {
	UUID          string        `json:"uuid"`
	HistoryID     string        `json:"historyId"`
	TestCaseID    string        `json:"testCaseId"`
	FullName      string        `json:"fullName"`
	Name          string        `json:"name"`
	Status        string        `json:"status"`
	StatusDetails allureDetails `json:"statusDetails"`
	Stage         string        `json:"stage"`
	Start         int64         `json:"start"`
	Stop          int64         `json:"stop"`
	Labels        []allureLabel `json:"labels"`
	Steps         []any         `json:"steps"`
	Attachments   []any         `json:"attachments"`
	Parameters    []any         `json:"parameters"`
}

type allureDetails struct {
	Known   bool   `json:"known"`
	Muted   bool   `json:"muted"`
	Flaky   bool   `json:"flaky"`
	Message string `json:"message,omitempty"`
	Trace   string `json:"trace,omitempty"`
}

func uuid4() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// writeAllure writes one result file per attempt; Allure treats results sharing a historyId as
// retries of one test and shows the latest.
func writeAllure(root string, start time.Time, tests []testCase) error {
	dir := filepath.Join(root, "allure-results")
	at := start
	for _, t := range tests {
		id := fmt.Sprintf("%x", md5.Sum([]byte(t.fullName())))
		for i, a := range t.attempts {
			r := allureResult{
				UUID: uuid4(), HistoryID: id, TestCaseID: id, FullName: t.fullName(), Name: t.name,
				Status: "passed", Stage: "finished",
				Start: at.UnixMilli(), Stop: at.Add(a.duration).UnixMilli(),
				Labels: []allureLabel{
					{"parentSuite", t.folder}, {"suite", t.file}, {"framework", "verdict-example"},
					{"language", "go"}, {"host", "verdict-example"},
				},
				Steps: []any{}, Attachments: []any{}, Parameters: []any{},
			}
			if !a.passed {
				r.Status = "failed"
				r.StatusDetails.Message = a.message
				r.StatusDetails.Trace = "AssertionError: " + a.message + "\n    at " + t.folder + "/" + t.file
			}
			r.StatusDetails.Flaky = t.flaky() && i == len(t.attempts)-1
			at = at.Add(a.duration)
			out, err := json.MarshalIndent(r, "", "  ")
			if err != nil {
				return err
			}
			if err := writeFile(filepath.Join(dir, r.UUID+"-result.json"), out); err != nil {
				return err
			}
		}
	}
	return nil
}

// --- Playwright JSON reporter --------------------------------------------------------------------

type pwReport struct {
	Config pwConfig  `json:"config"`
	Suites []pwSuite `json:"suites"`
	Errors []any     `json:"errors"`
	Stats  pwStats   `json:"stats"`
}

type pwConfig struct {
	RootDir string `json:"rootDir"`
	Version string `json:"version"`
	Workers int    `json:"workers"`
}

type pwSuite struct {
	Title  string    `json:"title"`
	File   string    `json:"file"`
	Line   int       `json:"line"`
	Column int       `json:"column"`
	Specs  []pwSpec  `json:"specs"`
	Suites []pwSuite `json:"suites,omitempty"`
}

type pwSpec struct {
	Title  string   `json:"title"`
	OK     bool     `json:"ok"`
	Tags   []string `json:"tags"`
	Tests  []pwTest `json:"tests"`
	ID     string   `json:"id"`
	File   string   `json:"file"`
	Line   int      `json:"line"`
	Column int      `json:"column"`
}

type pwTest struct {
	Timeout        int        `json:"timeout"`
	Annotations    []any      `json:"annotations"`
	ExpectedStatus string     `json:"expectedStatus"`
	ProjectID      string     `json:"projectId"`
	ProjectName    string     `json:"projectName"`
	Results        []pwResult `json:"results"`
	Status         string     `json:"status"` // expected, unexpected, flaky, skipped
}

type pwResult struct {
	WorkerIndex   int       `json:"workerIndex"`
	ParallelIndex int       `json:"parallelIndex"`
	Status        string    `json:"status"` // passed, failed, timedOut, skipped, interrupted
	Duration      int64     `json:"duration"`
	Error         *pwError  `json:"error,omitempty"`
	Errors        []pwError `json:"errors"`
	Stdout        []any     `json:"stdout"`
	Stderr        []any     `json:"stderr"`
	Retry         int       `json:"retry"`
	StartTime     string    `json:"startTime"`
	Attachments   []any     `json:"attachments"`
}

type pwError struct {
	Message string `json:"message"`
	Stack   string `json:"stack,omitempty"`
}

type pwStats struct {
	StartTime  string  `json:"startTime"`
	Duration   float64 `json:"duration"`
	Expected   int     `json:"expected"`
	Skipped    int     `json:"skipped"`
	Unexpected int     `json:"unexpected"`
	Flaky      int     `json:"flaky"`
}

func writePlaywrightJSON(root string, start time.Time, tests []testCase) error {
	rep := pwReport{
		Config: pwConfig{RootDir: "/app/tests", Version: "1.50.0", Workers: 1},
		Suites: []pwSuite{}, Errors: []any{},
		Stats: pwStats{StartTime: start.UTC().Format(time.RFC3339Nano)},
	}
	index := map[string]int{}
	at := start
	var total time.Duration
	for n, t := range tests {
		file := t.folder + "/" + t.file
		i, ok := index[file]
		if !ok {
			i = len(rep.Suites)
			index[file] = i
			rep.Suites = append(rep.Suites, pwSuite{Title: file, File: file})
		}
		pt := pwTest{Timeout: 30000, Annotations: []any{}, ExpectedStatus: "passed", ProjectID: "chromium", ProjectName: "chromium"}
		for r, a := range t.attempts {
			res := pwResult{
				Status: "passed", Duration: a.duration.Milliseconds(), Errors: []pwError{},
				Stdout: []any{}, Stderr: []any{}, Retry: r, Attachments: []any{},
				StartTime: at.UTC().Format(time.RFC3339Nano),
			}
			if !a.passed {
				e := pwError{Message: "Error: " + a.message, Stack: "Error: " + a.message + "\n    at " + file}
				res.Status, res.Error, res.Errors = "failed", &e, []pwError{e}
			}
			pt.Results = append(pt.Results, res)
			at = at.Add(a.duration)
		}
		switch {
		case t.flaky():
			pt.Status = "flaky"
			rep.Stats.Flaky++
		case t.passed():
			pt.Status = "expected"
			rep.Stats.Expected++
		default:
			pt.Status = "unexpected"
			rep.Stats.Unexpected++
		}
		total += t.total()
		rep.Suites[i].Specs = append(rep.Suites[i].Specs, pwSpec{
			Title: t.name, OK: t.passed(), Tags: []string{}, Tests: []pwTest{pt},
			ID: fmt.Sprintf("%x", md5.Sum([]byte(t.fullName())))[:20], File: file, Line: 3 + 6*n, Column: 5,
		})
	}
	rep.Stats.Duration = float64(total.Microseconds()) / 1000
	out, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return writeFile(filepath.Join(root, "test-results", "results.json"), out)
}

// --- HTML report ---------------------------------------------------------------------------------

var htmlReport = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><title>Test report</title>
<style>body{font-family:sans-serif;margin:2em}td,th{padding:.3em .8em;text-align:left}.passed{color:#176f2c}.failed{color:#b3261e}.flaky{color:#9a6700}</style>
</head>
<body>
<h1>Test report</h1>
<p>{{len .}} tests</p>
<table>
<tr><th>File</th><th>Test</th><th>Status</th><th>Attempts</th><th>Error</th></tr>
{{range .}}<tr><td>{{.File}}</td><td>{{.Name}}</td><td class="{{.Status}}">{{.Status}}</td><td>{{.Attempts}}</td><td>{{.Error}}</td></tr>
{{end}}</table>
</body>
</html>
`))

func writeHTML(root string, _ time.Time, tests []testCase) error {
	type row struct {
		File, Name, Status, Error string
		Attempts                  int
	}
	rows := make([]row, 0, len(tests))
	for _, t := range tests {
		r := row{File: t.folder + "/" + t.file, Name: t.name, Status: "passed", Attempts: len(t.attempts)}
		switch {
		case t.flaky():
			r.Status = "flaky"
		case !t.passed():
			r.Status = "failed"
			r.Error = t.attempts[len(t.attempts)-1].message
		}
		rows = append(rows, r)
	}
	path := filepath.Join(root, "playwright-report", "index.html")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := htmlReport.Execute(f, rows); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
