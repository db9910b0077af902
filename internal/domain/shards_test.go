package domain

import (
	"fmt"
	"slices"
	"testing"
)

func TestBalanceLongestFirst(t *testing.T) {
	// Two long files and many short ones over 4 shards: the long ones go to shards of their
	// own and the short ones fill the others evenly.
	units := []BalanceUnit{{"long1", 60000}, {"long2", 55000}}
	for i := range 40 {
		units = append(units, BalanceUnit{fmt.Sprintf("short%02d", i), 3000})
	}
	out := Balance(units, 4)
	if len(out) != 4 {
		t.Fatalf("%d shards, want 4", len(out))
	}
	dur := map[string]int64{}
	for _, u := range units {
		dur[u.Name] = u.DurationMs
	}
	var loads []int64
	seen := 0
	for _, shard := range out {
		var l int64
		for _, n := range shard {
			l += dur[n]
			seen++
		}
		loads = append(loads, l)
	}
	if seen != len(units) {
		t.Fatalf("%d units assigned, want %d", seen, len(units))
	}
	lo, hi := slices.Min(loads), slices.Max(loads)
	if float64(hi-lo) > 0.15*float64(lo) {
		t.Fatalf("loads %v: slowest more than 15%% over fastest", loads)
	}
}

func TestBalanceNewTestsByCount(t *testing.T) {
	units := []BalanceUnit{{"a", 10}, {"b", 0}, {"c", 0}, {"d", 0}, {"e", 0}}
	out := Balance(units, 2)
	// "a" goes to shard 1 by time; the four new ones by count: 2 then 1+... so 2 and 3 units.
	if n1, n2 := len(out[0]), len(out[1]); n1+n2 != 5 || n1 < 2 || n2 < 2 {
		t.Fatalf("shards %v: new tests not spread by count", out)
	}
	if !slices.Contains(out[0], "a") {
		t.Fatalf("shards %v: the timed unit should be first on shard 1", out)
	}
}

func TestBalanceDeterministic(t *testing.T) {
	units := []BalanceUnit{{"x", 5}, {"y", 5}, {"z", 5}}
	a, b := Balance(units, 2), Balance([]BalanceUnit{units[2], units[0], units[1]}, 2)
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatalf("balance depends on input order: %v vs %v", a, b)
	}
}

func TestBalanceUnitsByFile(t *testing.T) {
	u := BalanceUnits([]TestResult{{Suite: "f1", Name: "a", DurationMs: 10}, {Suite: "f1", Name: "b", DurationMs: 5}, {Suite: "f2", Name: "c"}})
	if len(u) != 2 || u[0] != (BalanceUnit{"f1", 15}) || u[1] != (BalanceUnit{"f2", 1}) {
		t.Fatalf("units %v", u)
	}
	u = BalanceUnits([]TestResult{{Suite: "", Name: "a", DurationMs: 10}, {Suite: "f1", Name: "b", DurationMs: 5}})
	if len(u) != 2 || u[0].Name != "a" || u[1].Name != "b" {
		t.Fatalf("a test without a file: units by test, got %v", u)
	}
}

func exit(n int) *int { return &n }

func TestMergeShards(t *testing.T) {
	pass := Execution{Status: ExecPassed, ExitCode: exit(0), Sharding: Sharding{ShardIndex: 1},
		Tests: []TestResult{{Suite: "f1", Name: "a", Status: TestPassed}}}
	fail := Execution{Status: ExecFailed, ExitCode: exit(1), Sharding: Sharding{ShardIndex: 2},
		Tests: []TestResult{{Suite: "f2", Name: "b", Status: TestFailed}, {Suite: "f2", Name: "c", Status: TestFailed}}}
	m := MergeShards(2, []Execution{fail, pass})
	if m.Status != ExecFailed || m.Summary.Failed != 2 || m.Summary.Total != 3 || m.Tests[0].Shard != 1 || m.Tests[1].Shard != 2 {
		t.Fatalf("merged %+v", m)
	}
	if got := FailedTests(m.Tests); !slices.Equal(got, []string{"b", "c"}) {
		t.Fatalf("failed tests %v", got)
	}
	// A retry where b passes and c fails again: still FAILED, b flaky.
	retry := Execution{Status: ExecFailed, ExitCode: exit(1), Sharding: Sharding{Retry: 1},
		Tests: []TestResult{{Suite: "f2", Name: "b", Status: TestPassed}, {Suite: "f2", Name: "c", Status: TestFailed}}}
	m = MergeShards(2, []Execution{fail, pass, retry})
	if m.Status != ExecFailed || m.Summary.Flaky != 1 || m.Summary.Failed != 1 || m.Tests[1].Retries != 1 {
		t.Fatalf("merged with retry %+v", m)
	}
	// Both pass on retry: UNSTABLE, the shard's exit code explained by its failures.
	retry.Tests[1].Status = TestPassed
	m = MergeShards(2, []Execution{fail, pass, retry})
	if m.Status != ExecUnstable || m.Summary.Flaky != 2 || *m.ExitCode != 0 {
		t.Fatalf("all passed on retry %+v", m)
	}
	// A non-zero exit without a failed test fails the run.
	crash := Execution{Status: ExecFailed, ExitCode: exit(3), Sharding: Sharding{ShardIndex: 2}}
	if m := MergeShards(2, []Execution{pass, crash}); m.Status != ExecFailed || *m.ExitCode != 3 {
		t.Fatalf("crashed shard %+v", m)
	}
}

func TestMergeShardsErrorAndCancel(t *testing.T) {
	ok := Execution{Status: ExecPassed, ExitCode: exit(0), Sharding: Sharding{ShardIndex: 1}}
	lost := Execution{Status: ExecError, Error: ShardLost, Sharding: Sharding{ShardIndex: 3}}
	m := MergeShards(4, []Execution{ok, lost})
	if m.Status != ExecError || m.Error != "shard 3 of 4 was lost" {
		t.Fatalf("lost shard %+v", m)
	}
	timeout := Execution{Status: ExecError, Error: "timed out", Sharding: Sharding{ShardIndex: 2}}
	if m := MergeShards(4, []Execution{ok, timeout}); m.Error != "shard 2 of 4: timed out" {
		t.Fatalf("errored shard %+v", m)
	}
	if m := MergeShards(4, []Execution{timeout, {Status: ExecCancelled, Sharding: Sharding{ShardIndex: 1}}}); m.Status != ExecCancelled {
		t.Fatalf("cancelled %+v", m)
	}
	// A retry container's error keeps the failures as they were.
	fail := Execution{Status: ExecFailed, ExitCode: exit(1), Sharding: Sharding{ShardIndex: 1},
		Tests: []TestResult{{Name: "b", Status: TestFailed}}}
	if m := MergeShards(1, []Execution{fail, {Status: ExecError, Error: "timed out", Sharding: Sharding{Retry: 1}}}); m.Status != ExecFailed {
		t.Fatalf("retry error %+v", m)
	}
}
