package domain

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Sharding is how a run is spread over containers. On a run as the API shows it (a parent),
// Shards > 0 means the run is carried out by shard containers of its own records (its
// children), each of which holds ParentID, its ShardIndex and, for a retry container of the
// failed tests, Retry. A run of one container has all zero.
type Sharding struct {
	// Shards is the number of shard containers (SHARD_TOTAL); on a parent at least 1 (1 only
	// with Retries), 0 for a run of one container. A child holds its parent's.
	Shards int
	// Retries is how many retry containers of the failed tests a parent may start.
	Retries int
	// ParentID is the parent run's internal ID on a shard's record; "" on a run the API shows.
	ParentID string
	// ShardIndex is a shard's index, 1..Shards (SHARD_INDEX); a retry container's follows
	// them (Shards+Retry).
	ShardIndex int
	// Retry is a retry container's round, 1..Retries; 0 for a shard.
	Retry int
	// Attempt is 1 for a shard started again after its runner was lost, else 0.
	Attempt int
	// Assigned are the tests or test files the container runs (VERDICT_TESTS_FILE, one per
	// line); on a parent, all the tests assigned to its shards. Nil: none assigned (the
	// framework splits by SHARD_INDEX/SHARD_TOTAL).
	Assigned []string
	// Parts are a sharded run's containers' records (shards, then retry containers), without
	// their tests; read with a single run, never with the run list. Nil: not read, or none.
	Parts []Execution
}

// Sharded reports whether e is a run carried out by shard containers (a parent).
func (e *Execution) Sharded() bool { return e.Shards > 0 && e.ParentID == "" }

// IsShard reports whether e is one container's part of a sharded run.
func (e *Execution) IsShard() bool { return e.ParentID != "" }

// ShardLost is the error of a shard whose runner was lost twice.
const ShardLost = "the shard's runner was lost"

// ShardTaskID is the internal task ID of container index (a shard, 1..Shards, or a retry
// container, Shards+1..) of the run taskID. The "~" cannot appear in a client's taskId, so it
// never meets one.
func ShardTaskID(taskID string, index int) string { return taskID + "~s" + strconv.Itoa(index) }

// ValidStoredTaskID reports whether s is a run's taskId (ValidTaskID) or one of its shards'
// (ShardTaskID), as the report store and the log routes meet them.
func ValidStoredTaskID(s string) bool {
	if ValidTaskID(s) {
		return true
	}
	run, _, ok := ParseShardTaskID(s)
	return ok && ValidTaskID(run)
}

// ParseShardTaskID splits a container's internal task ID (ShardTaskID) into its run's taskId
// and its index; ok false for any other task ID.
func ParseShardTaskID(id string) (taskID string, index int, ok bool) {
	i := strings.LastIndex(id, "~s")
	if i < 0 {
		return "", 0, false
	}
	n, err := strconv.Atoi(id[i+2:])
	if err != nil || n < 1 {
		return "", 0, false
	}
	return id[:i], n, true
}

// DefaultMaxShards are the shards a run may have per plan unless the server sets others.
var DefaultMaxShards = map[Plan]int{PlanFree: 4, PlanTeam: 8, PlanEnterprise: 32}

// MaxRetries bounds a run's retries of its failed tests.
const MaxRetries = 3

// BalanceUnit is a test file (or a test, where the framework cannot select files) with its
// recorded duration; DurationMs 0: no history.
type BalanceUnit struct {
	Name       string
	DurationMs int64
}

// Balance assigns units to n shards so that their summed recorded durations are as even as
// possible: longest first, each to the shard with the least time so far (longest processing
// time first); units without a duration (new tests) are then spread by count, each to the shard
// with the fewest units. Each shard's list is sorted by name. Ties go to the lower shard, so
// the answer depends only on the units.
func Balance(units []BalanceUnit, n int) [][]string {
	if n < 1 {
		n = 1
	}
	timed := slices.Clone(units)
	slices.SortFunc(timed, func(a, b BalanceUnit) int {
		return cmp.Or(cmp.Compare(b.DurationMs, a.DurationMs), strings.Compare(a.Name, b.Name))
	})
	out := make([][]string, n)
	load := make([]int64, n)
	for _, u := range timed {
		if u.DurationMs <= 0 {
			continue
		}
		i := slices.Index(load, slices.Min(load))
		out[i] = append(out[i], u.Name)
		load[i] += u.DurationMs
	}
	for _, u := range timed {
		if u.DurationMs > 0 {
			continue
		}
		least := 0
		for i := range out {
			if len(out[i]) < len(out[least]) {
				least = i
			}
		}
		out[least] = append(out[least], u.Name)
	}
	for i := range out {
		slices.Sort(out[i])
	}
	return out
}

// BalanceUnits are the units a run's tests give: its test files (a test's Suite) when every
// test names one, else its tests, each with its summed duration.
func BalanceUnits(tests []TestResult) []BalanceUnit {
	byFile := len(tests) > 0
	for _, t := range tests {
		if t.Suite == "" {
			byFile = false
			break
		}
	}
	sum := map[string]int64{}
	for _, t := range tests {
		name := t.Name
		if byFile {
			name = t.Suite
		}
		sum[name] += max(t.DurationMs, 1) // a recorded 0 ms is history, not a new test
	}
	units := make([]BalanceUnit, 0, len(sum))
	for name, d := range sum {
		units = append(units, BalanceUnit{Name: name, DurationMs: d})
	}
	slices.SortFunc(units, func(a, b BalanceUnit) int { return strings.Compare(a.Name, b.Name) })
	return units
}

// Merged is a sharded run's outcome from its shards' and retry containers' records.
type Merged struct {
	Status   ExecStatus
	Error    string
	ExitCode *int
	Tests    []TestResult
	Summary  Summary
}

// MergeShards merges the final records of a sharded run's containers (shards and retry
// containers, in any order) into the run's outcome: any shard CANCELLED is CANCELLED; any
// container ERROR is ERROR naming it ("shard 3 of 4 was lost", "shard 2 of 4: <its error>");
// else the tests of every shard, each with its shard, where a failed test that passed in a
// retry container is flaky (UNSTABLE) and one that failed there stays failed (FAILED). A
// shard's non-zero exit fails the run unless its failed tests explain it (those then decide,
// retries included).
func MergeShards(total int, parts []Execution) Merged {
	parts = slices.Clone(parts)
	slices.SortFunc(parts, func(a, b Execution) int {
		return cmp.Or(cmp.Compare(a.Retry, b.Retry), cmp.Compare(a.ShardIndex, b.ShardIndex))
	})
	for _, p := range parts {
		if p.Status == ExecCancelled {
			return Merged{Status: ExecCancelled, Tests: []TestResult{}}
		}
	}
	for _, p := range parts {
		// A retry container that could not be carried out leaves its tests' failures standing.
		if p.Status != ExecError || p.Retry > 0 {
			continue
		}
		name := fmt.Sprintf("shard %d of %d", p.ShardIndex, total)
		msg := name + ": " + p.Error
		if p.Error == ShardLost {
			msg = name + " was lost"
		}
		return Merged{Status: ExecError, Error: msg, Tests: []TestResult{}}
	}
	tests := []TestResult{}
	exit := 0
	at := map[TestName]int{}
	for _, p := range parts {
		if p.Retry > 0 {
			continue
		}
		failed := 0
		for _, t := range p.Tests {
			t.Shard = p.ShardIndex
			if t.Status == TestFailed {
				failed++
			}
			at[TestName{t.Suite, t.Name}] = len(tests)
			tests = append(tests, t)
		}
		if p.ExitCode != nil && *p.ExitCode != 0 && failed == 0 && exit == 0 {
			exit = *p.ExitCode
		}
	}
	for _, p := range parts {
		if p.Retry == 0 {
			continue
		}
		for _, t := range p.Tests {
			i, ok := at[TestName{t.Suite, t.Name}]
			if !ok || tests[i].Status != TestFailed {
				continue
			}
			tests[i].Retries++
			if t.Status == TestPassed || t.Status == TestFlaky {
				tests[i].Status = TestFlaky
			}
		}
	}
	sum := Summarize(tests)
	code := exit
	return Merged{Status: Verdict(exit, sum), ExitCode: &code, Tests: tests, Summary: sum}
}

// TestName is a test's identity in a run: its suite and name.
type TestName struct{ Suite, Name string }

// FailedTests are the names of a merged run's failed tests, the list of a retry container
// (VERDICT_TESTS_FILE), sorted and each once.
func FailedTests(tests []TestResult) []string {
	var out []string
	for _, t := range tests {
		if t.Status == TestFailed {
			out = append(out, t.Name)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// ShardRecord is the PENDING record of container index of the sharded run e (a retry
// container of round retry when retry > 0), carrying e's settings.
func ShardRecord(e *Execution, index, retry int) *Execution {
	return &Execution{OrganizationID: e.OrganizationID, TaskID: ShardTaskID(e.TaskID, index),
		ProjectID: e.ProjectID, Image: e.Image, Command: e.Command, Environment: e.Environment, BaseURL: e.BaseURL,
		Folder: e.Folder, TimeoutSeconds: e.TimeoutSeconds, ReportFolders: e.ReportFolders, EnvCipher: e.EnvCipher,
		EnvNames: e.EnvNames, TriggeredBy: e.TriggeredBy, ViaAPIKey: e.ViaAPIKey, Status: ExecPending,
		QueueReason: "waiting for a runner", QueuedAt: e.QueuedAt,
		Sharding: Sharding{ParentID: e.ID, Shards: e.Shards, ShardIndex: index, Retry: retry}}
}
