package domain

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func point(i int, s TestStatus, branch, commit string) TestPoint {
	return TestPoint{TaskID: string(rune('a' + i)), Status: s, Branch: branch, Commit: commit, At: t0.Add(time.Duration(i) * time.Minute)}
}

// newestFirst lists points given oldest first as a window keeps them.
func newestFirst(pts ...TestPoint) []TestPoint {
	out := make([]TestPoint, len(pts))
	for i, p := range pts {
		out[len(pts)-1-i] = p
	}
	return out
}

func TestRatesFlakeDefinition(t *testing.T) {
	for _, tc := range []struct {
		name      string
		window    []TestPoint
		events    int
		flaky     bool
		passRate  float64
		flakeRate float64
	}{
		{"always passing", newestFirst(point(0, TestPassed, "main", "c1"), point(1, TestPassed, "main", "c1")), 0, false, 1, 0},
		{"a pass on a retry is a flake event",
			newestFirst(point(0, TestFlaky, "main", "c1"), point(1, TestPassed, "main", "c1")), 1, false, 1, 0.5},
		{"fail then pass on one commit flips, twice",
			newestFirst(point(0, TestPassed, "main", "c1"), point(1, TestFailed, "main", "c1"), point(2, TestPassed, "main", "c1")), 2, true, 2.0 / 3, 2.0 / 3},
		{"a fix across commits is not a flip",
			newestFirst(point(0, TestPassed, "main", "c1"), point(1, TestFailed, "main", "c2"), point(2, TestPassed, "main", "c3")), 0, false, 2.0 / 3, 0},
		{"without commit labels a change counts",
			newestFirst(point(0, TestPassed, "", ""), point(1, TestFailed, "", ""), point(2, TestPassed, "", "")), 2, true, 2.0 / 3, 2.0 / 3},
		{"flips are counted within a branch",
			newestFirst(point(0, TestPassed, "main", "c1"), point(1, TestFailed, "feature", "c1"), point(2, TestPassed, "main", "c1")), 0, false, 2.0 / 3, 0},
		{"skipped results are neither passes nor flips",
			newestFirst(point(0, TestPassed, "main", "c1"), point(1, TestSkipped, "main", "c1"), point(2, TestPassed, "main", "c1")), 0, false, 1, 0},
		{"no results", nil, 0, false, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Rates(tc.window)
			if r.FlakeEvents != tc.events || r.Flaky != tc.flaky || !near(r.PassRate, tc.passRate) || !near(r.FlakeRate, tc.flakeRate) {
				t.Errorf("Rates = %+v, want %d events, flaky %v, pass rate %.3f, flake rate %.3f", r, tc.events, tc.flaky, tc.passRate, tc.flakeRate)
			}
		})
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

// Merging results in any order gives the same window: the newest FlakeWindow, newest first,
// each once.
func TestMergeIsOrderIndependent(t *testing.T) {
	var pts []TestPoint
	for i := range 45 {
		pts = append(pts, point(i, TestPassed, "main", "c"))
	}
	var want TrackedTest
	for _, p := range pts {
		want.Merge(p)
	}
	if len(want.Recent) != FlakeWindow || want.Recent[0].TaskID != pts[44].TaskID || want.Recent[FlakeWindow-1].TaskID != pts[25].TaskID {
		t.Fatalf("window in order: %d points, newest %v", len(want.Recent), want.Recent[0])
	}
	for seed := range uint64(20) {
		shuffled := append([]TestPoint(nil), pts...)
		r := rand.New(rand.NewPCG(seed, seed))
		r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		var got TrackedTest
		for _, p := range shuffled {
			got.Merge(p)
			got.Merge(p) // a result merged twice counts once
		}
		if !reflect.DeepEqual(got.Recent, want.Recent) {
			t.Fatalf("seed %d: window differs", seed)
		}
	}
}

func TestApplyQuarantine(t *testing.T) {
	tests := []TestResult{
		{Suite: "s", Name: "a", Status: TestFailed},
		{Suite: "s", Name: "b", Status: TestFailed},
		{Suite: "s", Name: "c", Status: TestFlaky},
		{Suite: "s", Name: "d", Status: TestPassed},
	}
	sum := Summarize(tests)
	q := func(names ...string) []TrackedTest {
		var out []TrackedTest
		for _, n := range names {
			out = append(out, TrackedTest{ID: "id-" + n, Suite: "s", Name: n})
		}
		return out
	}
	if qf, st := ApplyQuarantine(ExecFailed, "", sum, tests, q("a")); st != ExecFailed || len(qf) != 1 || qf[0].TestID != "id-a" {
		t.Errorf("one of two failures quarantined: %v %v", qf, st)
	}
	if qf, st := ApplyQuarantine(ExecFailed, "", sum, tests, q("a", "b")); st != ExecUnstable || len(qf) != 2 {
		t.Errorf("every failure quarantined, one flaky: %v %v", qf, st)
	}
	if _, st := ApplyQuarantine(ExecFailed, "the container was killed (out of memory)", sum, tests, q("a", "b")); st != ExecFailed {
		t.Errorf("a run that failed for another reason keeps its status: %v", st)
	}
	dropped := sum
	dropped.Failed++ // a failure the run did not keep: it cannot be known as quarantined
	if _, st := ApplyQuarantine(ExecFailed, "", dropped, tests, q("a", "b")); st != ExecFailed {
		t.Errorf("a failure not kept counts: %v", st)
	}
	if qf, st := ApplyQuarantine(ExecFailed, "", sum, tests, nil); st != ExecFailed || qf != nil {
		t.Errorf("no quarantine: %v %v", qf, st)
	}
	// Duplicate names are told apart as the history names them.
	dup := []TestResult{{Suite: "s", Name: "x", Status: TestPassed}, {Suite: "s", Name: "x", Status: TestFailed}}
	if qf, st := ApplyQuarantine(ExecFailed, "", Summarize(dup), dup, q("x [2]")); st != ExecPassed || len(qf) != 1 {
		t.Errorf("the second of two same-named tests: %v %v", qf, st)
	}
}

func TestValidateQuarantine(t *testing.T) {
	now := t0
	for _, tc := range []struct {
		reason string
		until  time.Time
		ok     bool
	}{
		{"slow staging", now.Add(time.Hour), true},
		{"  ", now.Add(time.Hour), false},
		{"x", now, false},
		{"x", time.Time{}, false},
		{"x", now.AddDate(0, 0, 90), true},
		{"x", now.AddDate(0, 0, 90).Add(time.Second), false},
		{string(make([]rune, 501)), now.Add(time.Hour), false},
	} {
		if _, err := ValidateQuarantine(tc.reason, tc.until, now); (err == nil) != tc.ok {
			t.Errorf("ValidateQuarantine(%q, %v) = %v, want ok %v", tc.reason, tc.until, err, tc.ok)
		}
	}
}

func TestOutcomeMessageBound(t *testing.T) {
	long := string(make([]byte, MaxOutcomeMessage-1)) + "é" // the cut falls inside é
	if got := OutcomeMessage(long); len(got) > MaxOutcomeMessage || got != long[:MaxOutcomeMessage-1] {
		t.Errorf("cut to %d bytes", len(got))
	}
}

// FuzzWindow merges arbitrary results: the window stays sorted newest first, bounded, without
// a run twice, and its rates stay within 0..1.
func FuzzWindow(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 1, 0, 2}, "main", "c1")
	f.Fuzz(func(t *testing.T, seq []byte, branch, commit string) {
		var tt TrackedTest
		statuses := []TestStatus{TestPassed, TestFailed, TestFlaky, TestSkipped}
		for i, b := range seq {
			p := TestPoint{TaskID: string(rune('a' + int(b)%40)), Status: statuses[int(b)%4], At: t0.Add(time.Duration(int(b)%40) * time.Minute)}
			if i%2 == 0 {
				p.Branch, p.Commit = branch, commit
			}
			tt.Merge(p)
		}
		if len(tt.Recent) > FlakeWindow {
			t.Fatalf("window of %d", len(tt.Recent))
		}
		seen := map[string]bool{}
		for i, p := range tt.Recent {
			if seen[p.TaskID] {
				t.Fatalf("run %s twice", p.TaskID)
			}
			seen[p.TaskID] = true
			if i > 0 && p.At.After(tt.Recent[i-1].At) {
				t.Fatalf("not newest first at %d", i)
			}
		}
		r := Rates(tt.Recent)
		if r.PassRate < 0 || r.PassRate > 1 || r.FlakeRate < 0 || r.FlakeRate > 1 {
			t.Fatalf("rates %+v", r)
		}
	})
}
