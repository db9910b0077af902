package domain

import (
	"path"
	"regexp"
	"strings"
	"time"
)

// ExecStatus is an execution's status: PENDING, RUNNING, (ANALYZING), then a final one.
type ExecStatus string

const (
	ExecPending   ExecStatus = "PENDING"
	ExecRunning   ExecStatus = "RUNNING"
	ExecAnalyzing ExecStatus = "ANALYZING"
	ExecPassed    ExecStatus = "PASSED"
	ExecFailed    ExecStatus = "FAILED"
	ExecUnstable  ExecStatus = "UNSTABLE"
	ExecError     ExecStatus = "ERROR"
	ExecCancelled ExecStatus = "CANCELLED"
)

// Valid reports whether s is a known status.
func (s ExecStatus) Valid() bool {
	switch s {
	case ExecPending, ExecRunning, ExecAnalyzing, ExecPassed, ExecFailed, ExecUnstable, ExecError, ExecCancelled:
		return true
	}
	return false
}

// Final reports whether s is a terminal status.
func (s ExecStatus) Final() bool {
	switch s {
	case ExecPassed, ExecFailed, ExecUnstable, ExecError, ExecCancelled:
		return true
	}
	return false
}

var taskIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// ValidTaskID reports whether a client-chosen taskId has the allowed shape.
func ValidTaskID(s string) bool { return taskIDPattern.MatchString(s) }

// TestStatus is one test's outcome.
type TestStatus string

const (
	TestPassed  TestStatus = "passed"
	TestFailed  TestStatus = "failed"
	TestSkipped TestStatus = "skipped"
	TestFlaky   TestStatus = "flaky" // passed, but only on a retry
)

// TestResult is one parsed test.
type TestResult struct {
	Name       string     `json:"name"`
	Suite      string     `json:"suite"`
	Status     TestStatus `json:"status"`
	DurationMs int64      `json:"durationMs"`
	Error      string     `json:"error,omitempty"`
	Retries    int        `json:"retries"`
	// Shard is the shard (from 1) whose container ran the test, in a sharded run; 0: the run
	// is not sharded.
	Shard int `json:"shard,omitempty"`
	// Attachments are the files the test's results name (screenshots, videos, traces...) that
	// are among the run's reports (of its shard's container when Shard is set), oldest attempt
	// first; none: nil.
	Attachments []Attachment `json:"attachments,omitempty"`
}

// Attachment is a file a test's results name, kept among the run's reports.
type Attachment struct {
	Name        string `json:"name"`        // as the results name it: "screenshot", "trace"...
	ContentType string `json:"contentType"` // as the results say, else by the file's extension
	// Path is the file in the run's reports: slash-separated, relative to their root (the
	// container's /app), as the report route serves it.
	Path string `json:"path"`
	// Retry is the attempt that left it: 0 for the first run of the test, n for its n-th retry.
	Retry int `json:"retry,omitempty"`
}

// IsTrace reports whether a is a Playwright trace, which opens in the trace viewer: Playwright
// names it "trace" (a zip), and its own file name is trace.zip.
func (a *Attachment) IsTrace() bool {
	return strings.HasSuffix(strings.ToLower(a.Path), ".zip") && (a.Name == "trace" || path.Base(a.Path) == "trace.zip")
}

// Summary counts an execution's tests.
type Summary struct {
	Total   int `json:"total"`
	Passed  int `json:"passed"`
	Failed  int `json:"failed"`
	Skipped int `json:"skipped"`
	Flaky   int `json:"flaky"`
}

// Summarize counts tests by status.
func Summarize(tests []TestResult) Summary {
	s := Summary{Total: len(tests)}
	for _, t := range tests {
		switch t.Status {
		case TestPassed:
			s.Passed++
		case TestFailed:
			s.Failed++
		case TestSkipped:
			s.Skipped++
		case TestFlaky:
			s.Flaky++
		}
	}
	return s
}

// Verdict decides a finished container's status from its exit code and the summary of its
// parsed tests, never from log text: a failed test or a non-zero exit fails the run; all
// passing with some only on retry is UNSTABLE. The summary counts every test the reports held,
// also those a run does not keep (KeepTests).
func Verdict(exitCode int, s Summary) ExecStatus {
	switch {
	case s.Failed > 0:
		return ExecFailed
	case exitCode != 0:
		return ExecFailed
	case s.Flaky > 0:
		return ExecUnstable
	default:
		return ExecPassed
	}
}

// ContractEnv are the container-contract variable names a project or request may not set.
var ContractEnv = []string{"BASE_URL", "TASK_ID", "CI", "FRAMEWORK_AGNOSTIC"}

// IsContractEnv reports whether name is reserved by the container contract.
func IsContractEnv(name string) bool {
	for _, n := range ContractEnv {
		if n == name {
			return true
		}
	}
	return false
}

var envNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)

// ValidEnvName reports whether name is a usable environment variable name.
func ValidEnvName(name string) bool { return envNamePattern.MatchString(name) }

// DefaultTimeout is a run's timeout when neither request nor project sets one.
const DefaultTimeout = 30 * time.Minute

// DefaultReportFolders are copied out of /app after a run unless a project names others: the
// folders the frameworks' reporters write to by default or by custom (Playwright's html report
// and its json and junit reporters' usual results/, Allure, Maven Surefire and Failsafe,
// Gradle, Cypress's reporters), and the generic names.
var DefaultReportFolders = []string{"playwright-report", "allure-results", "allure-report", "test-results", "reports",
	"junit", "results", "target/surefire-reports", "target/failsafe-reports", "build/test-results", "cypress/results",
	"cypress/reports"}

// EnvVar is a project variable; a secret's Value is encrypted at rest and never returned.
type EnvVar struct {
	Key    string `json:"key"`
	Value  string `json:"value"`
	Secret bool   `json:"secret"`
}

// Project is a test suite's settings: its image and the defaults of its runs.
type Project struct {
	ID             string
	OrganizationID string
	Name           string
	Image          string
	TargetURLs     map[string]string // development, staging, production
	DefaultFolder  string
	TimeoutSeconds int
	ReportFolders  []string // under /app
	EnvVars        []EnvVar // secret values are ciphertext here
	// Shards and Retries are the defaults of the project's runs (0: one container, no retry).
	Shards, Retries int
	// Repository is where the project's code lives ("owner/name" on GitHub, a GitLab project's
	// path; ValidRepository), to which its runs report commit statuses; "" for none.
	Repository string
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// Environments a project may name target URLs for.
var Environments = []string{"development", "staging", "production"}

// Execution is one run of a test-suite image. The executions table is the queue.
type Execution struct {
	ID             string // internal; names the container
	OrganizationID string
	TaskID         string // unique within the organization; the API's identifier
	ProjectID      string
	Image          string
	Command        string
	Environment    string
	BaseURL        string
	Folder         string
	TimeoutSeconds int
	ReportFolders  []string
	// EnvCipher holds the request's and project's variables for the container, encrypted; the
	// API shows only EnvNames.
	EnvCipher   string
	EnvNames    []string
	TriggeredBy string // user ID
	ViaAPIKey   bool
	// Labels are the client's key:value labels of the run (ValidateLabels), set when it is
	// queued and never changed; nil or empty: none.
	Labels map[string]string

	Status      ExecStatus
	QueueReason string
	Error       string
	ExitCode    *int
	QueuedAt    time.Time
	StartedAt   *time.Time
	FinishedAt  *time.Time

	RunnerID string
	// RunnerInstance is the runner process that claimed the run (a remote runner's random ID
	// of the start it is in): only that process's calls about the run count. Empty for the
	// embedded runner. Never shown to users.
	RunnerInstance  string
	ContainerID     string
	LeaseUntil      *time.Time
	CancelRequested bool

	Summary     Summary
	Tests       []TestResult
	ReportDirs  []string // report folders stored for this run
	ReportBytes int64
	Notes       []string

	// ReportIndexes are those of ReportDirs holding an index.html, recorded when the reports
	// are stored so views link only folders that open; nil: not recorded (older runs).
	ReportIndexes []string

	// Analysis explains a FAILED or UNSTABLE run of an organization with analysis on; nil: none.
	// It is not read with the run list.
	Analysis *Analysis

	// Tickets are the issues and items created in trackers from the run, oldest first; nil:
	// none. They are read with a single run, never with the run list: a finished run's list row
	// stays as it was when the run ended.
	Tickets []Ticket

	// QuarantinedFailures are the failed tests of the run that were quarantined when it
	// ended: their failures did not decide its status. Nil: none.
	QuarantinedFailures []QuarantinedFailure
	// Gate is the project's quality gate's judgement of the run; nil: the project has no
	// rules (or the run none).
	Gate *Gate
	// TestsRecorded: the run's results are in its tests' histories and its gate judged (in one
	// transaction): its outcome, gate included, no longer changes.
	TestsRecorded bool
	// Pinned runs are exempt from retention until unpinned.
	Pinned bool
	// FilesExpiredAt is when retention deleted the run's log and report files; nil: kept.
	FilesExpiredAt *time.Time
	// Version counts the writes to the run's record (every change of it moves it on): a copy
	// of the run at the version the database has is the run as it is. Set on the runs of the
	// run list (ExecutionRepo.List), 0 elsewhere.
	Version int64

	Sharding // the run's shards and retries, or this container's part of a sharded run
}

// DurationMs is the run's wall time from start to finish (so far, when running).
func (e *Execution) DurationMs(now time.Time) int64 {
	if e.StartedAt == nil {
		return 0
	}
	end := now
	if e.FinishedAt != nil {
		end = *e.FinishedAt
	}
	return end.Sub(*e.StartedAt).Milliseconds()
}
