package domain

import (
	"fmt"
	"strings"
	"time"
)

// A test's history: every parsed result of a finished run is kept as a TestOutcome of a
// TrackedTest, a test known by its identity within its scope.

// Bounds of a test's history.
const (
	// FlakeWindow is how many of a test's newest results its rates are computed over.
	FlakeWindow = 20
	// FlakyFlips is how many flake events within the window make a test flaky.
	FlakyFlips = 2
	// MaxOutcomeMessage bounds the failure message kept with a result, in bytes.
	MaxOutcomeMessage = 2048
	// MaxQuarantineDays is the longest a quarantine may last.
	MaxQuarantineDays = 90
	// MaxQuarantineReason bounds a quarantine's reason, in characters.
	MaxQuarantineReason = 500
)

// Labels of a run that its tests' history reads: the branch a run tested (the default
// baseline group) and the commit of the code under test.
const (
	BranchLabel = "branch"
	CommitLabel = "commit"
)

// Labels of a run that the team's loop reads and writes: what queued it ("schedule", "github",
// "gitlab"), the schedule's name, the repository ("owner/name", or a GitLab project's path) and
// the pull or merge request's number. A run labelled with repo and commit reports its status to
// that commit.
const (
	TriggerLabel  = "trigger"
	ScheduleLabel = "schedule"
	RepoLabel     = "repo"
	PRLabel       = "pr"
)

// TestScope is the scope a run's tests are known in: its project, or its image for a run
// without one.
func TestScope(projectID, image string) string {
	if projectID != "" {
		return "project:" + projectID
	}
	return "image:" + image
}

// ScopeImage is the image of a scope of runs without a project.
func ScopeImage(scope string) (string, bool) { return strings.CutPrefix(scope, "image:") }

// TrackedTest is a test of a scope, with the aggregates kept as its results are recorded.
type TrackedTest struct {
	ID             string
	OrganizationID string
	ProjectID      string // "" for a test of runs without a project
	Scope          string // TestScope
	Suite, Name    string

	// Runs counts every result recorded; Recent holds the newest FlakeWindow of them, newest
	// first, and the rates are computed from it (Rates).
	Runs   int
	Recent []TestPoint

	FirstSeenAt, LastSeenAt time.Time
	// LastFailedTaskID and LastPassedTaskID are the newest runs in which it failed and
	// passed; "" when none.
	LastFailedTaskID, LastPassedTaskID string
	LastFailedAt, LastPassedAt         time.Time

	Quarantine *Quarantine // nil: not quarantined (an expired quarantine reads as nil)
}

// TestPoint is one result as a test's window keeps it.
type TestPoint struct {
	TaskID string     `json:"t"`
	Status TestStatus `json:"s"`
	Branch string     `json:"b,omitempty"` // the run's branch label
	Commit string     `json:"c,omitempty"` // the run's commit label
	At     time.Time  `json:"a"`
}

// TestOutcome is one result of a test in one run.
type TestOutcome struct {
	TestID      string
	ExecutionID string
	TaskID      string
	Suite, Name string // of the test, filled in where it is read with them
	Status      TestStatus
	DurationMs  int64
	Retries     int
	Signature   string // the failure's signature; "" for a test that did not fail
	Message     string // the failure message, masked and bounded; "" for a passing test
	Branch      string
	Commit      string
	CreatedAt   time.Time // the run's finish
}

// Quarantine is a test's quarantine: its failures do not fail runs until Until.
type Quarantine struct {
	Reason    string
	Until     time.Time
	By        string // the user's ID
	CreatedAt time.Time
}

// Active reports whether the quarantine is in force at now.
func (q *Quarantine) Active(now time.Time) bool { return q != nil && now.Before(q.Until) }

// LastStatus is the status of the test's newest result ("" when none).
func (t *TrackedTest) LastStatus() TestStatus {
	if len(t.Recent) == 0 {
		return ""
	}
	return t.Recent[0].Status
}

// Merge adds p to the window: kept newest first, at most FlakeWindow points. A point older
// than a full window's oldest is dropped, so results may be merged in any order (a backfill
// of old runs beside runs ending now) with the same window at the end.
func (t *TrackedTest) Merge(p TestPoint) {
	i := 0
	for i < len(t.Recent) && !p.At.After(t.Recent[i].At) {
		if t.Recent[i].TaskID == p.TaskID {
			return // recorded already
		}
		i++
	}
	if i >= FlakeWindow {
		return
	}
	t.Recent = append(t.Recent, TestPoint{})
	copy(t.Recent[i+1:], t.Recent[i:])
	t.Recent[i] = p
	if len(t.Recent) > FlakeWindow {
		t.Recent = t.Recent[:FlakeWindow]
	}
}

// TestRates are a test's figures over its window.
type TestRates struct {
	// PassRate is the share of its non-skipped results that passed (on the first attempt or
	// on a retry), 0..1; FlakeRate the share of its results that were flake events, 0..1.
	PassRate, FlakeRate float64
	FlakeEvents         int
	Flaky               bool // at least FlakyFlips flake events in the window
}

// Rates computes a test's figures from its window (newest first). A flake event is a result
// that passed only on a retry within its run, or one whose outcome (passed or failed) differs
// from the previous result on the same branch when the code under test did not change: both
// runs carry the same commit label, or either carries none (a failure followed by a pass on
// another commit is a fix, not a flake). Skipped results are neither passes nor flips.
func Rates(recent []TestPoint) TestRates {
	var r TestRates
	ran, passed := 0, 0
	// last holds, per branch, the next newer result's outcome seen so far (walking newest to
	// oldest, the newer neighbour of each result on its branch).
	type seen struct {
		failed bool
		commit string
	}
	last := map[string]seen{}
	for i := len(recent) - 1; i >= 0; i-- { // oldest first
		p := recent[i]
		if p.Status == TestFlaky {
			r.FlakeEvents++
		}
		if p.Status == TestSkipped || p.Status == "" {
			continue
		}
		ran++
		failed := p.Status == TestFailed
		if !failed {
			passed++
		}
		if prev, ok := last[p.Branch]; ok && prev.failed != failed &&
			(prev.commit == "" || p.Commit == "" || prev.commit == p.Commit) && p.Status != TestFlaky {
			r.FlakeEvents++
		}
		last[p.Branch] = seen{failed: failed, commit: p.Commit}
	}
	if ran > 0 {
		r.PassRate = float64(passed) / float64(ran)
	}
	if len(recent) > 0 {
		r.FlakeRate = float64(r.FlakeEvents) / float64(len(recent))
	}
	r.Flaky = r.FlakeEvents >= FlakyFlips
	return r
}

// OutcomeMessage bounds a failure message for a test's history: at most MaxOutcomeMessage
// bytes, cut at a character boundary.
func OutcomeMessage(s string) string {
	if len(s) <= MaxOutcomeMessage {
		return s
	}
	return strings.ToValidUTF8(s[:MaxOutcomeMessage], "")
}

// ValidateQuarantine checks a quarantine asked for at now: a reason of 1 to
// MaxQuarantineReason characters, and an end after now and at most MaxQuarantineDays later.
func ValidateQuarantine(reason string, until, now time.Time) (string, error) {
	reason = strings.TrimSpace(reason)
	switch {
	case reason == "":
		return "", BadRequest("Validation error", "reason is required")
	case len([]rune(reason)) > MaxQuarantineReason:
		return "", BadRequest("Validation error", "reason must be at most 500 characters")
	case until.IsZero():
		return "", BadRequest("Validation error", "until is required (an RFC 3339 time)")
	case !until.After(now):
		return "", BadRequest("Validation error", "until must be in the future")
	case until.After(now.AddDate(0, 0, MaxQuarantineDays)):
		return "", BadRequest("Validation error", "until must be at most 90 days from now")
	}
	return reason, nil
}

// QuarantinedFailure is a failed test of a run whose failure did not count: it was quarantined
// when the run ended.
type QuarantinedFailure struct {
	TestID string     `json:"testId"`
	Suite  string     `json:"suite"`
	Name   string     `json:"name"`
	Status TestStatus `json:"status"`
}

// TestIdentity is a test of a run as its history knows it: its suite and name, the name made
// unique within the run when the report gives two tests the same one (" [2]", " [3]" in report
// order, so that the same report names them the same way every run).
type TestIdentity struct {
	Index       int // in the run's tests
	Suite, Name string
}

// TestIdentities names each of tests.
func TestIdentities(tests []TestResult) []TestIdentity {
	out := make([]TestIdentity, len(tests))
	seen := make(map[string]int, len(tests))
	for i, t := range tests {
		k := t.Suite + "\x00" + t.Name
		seen[k]++
		name := t.Name
		if n := seen[k]; n > 1 {
			name = fmt.Sprintf("%s [%d]", t.Name, n)
		}
		out[i] = TestIdentity{Index: i, Suite: t.Suite, Name: name}
	}
	return out
}

// ApplyQuarantine decides a finishing run's status with its project's quarantined tests
// (those of quarantined, active at the run's end): it returns the run's failed tests that were
// quarantined, and the status the run ends with. A FAILED run whose failed tests were all
// quarantined, all of them among the tests it kept, and that failed for no other reason (no
// error of the run itself) is judged by its other tests, as if the container had exited 0:
// PASSED, or UNSTABLE when some passed only on a retry. Any other run keeps its status.
func ApplyQuarantine(status ExecStatus, runErr string, summary Summary, tests []TestResult,
	quarantined []TrackedTest) ([]QuarantinedFailure, ExecStatus) {
	if len(quarantined) == 0 || summary.Failed == 0 {
		return nil, status
	}
	byKey := make(map[string]string, len(quarantined))
	for _, t := range quarantined {
		byKey[t.Suite+"\x00"+t.Name] = t.ID
	}
	var out []QuarantinedFailure
	failed := 0
	for _, n := range TestIdentities(tests) {
		tr := tests[n.Index]
		if tr.Status != TestFailed {
			continue
		}
		failed++
		if id, ok := byKey[n.Suite+"\x00"+n.Name]; ok {
			out = append(out, QuarantinedFailure{TestID: id, Suite: n.Suite, Name: n.Name, Status: tr.Status})
		}
	}
	if status == ExecFailed && runErr == "" && len(out) == failed && failed == summary.Failed {
		rest := summary
		rest.Failed = 0
		status = Verdict(0, rest)
	}
	return out, status
}
