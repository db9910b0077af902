package domain

import (
	"reflect"
	"testing"
)

// TestGateRulesBaselineAndJudges: the labels a baseline carries (the project's, else
// branch:main for a run with a branch label, else none), and which rule sets judge a run.
func TestGateRulesBaselineAndJudges(t *testing.T) {
	on, off := true, false
	n := 3
	var none *GateRules
	cases := []struct {
		rules  *GateRules
		labels map[string]string
		want   []Label
	}{
		{none, map[string]string{"branch": "feature"}, []Label{{"branch", "main"}}},
		{&GateRules{}, map[string]string{"commit": "abc"}, nil},
		{&GateRules{BaselineLabels: map[string]string{"env": "ci", "branch": "release"}}, map[string]string{"branch": "x"},
			[]Label{{"branch", "release"}, {"env", "ci"}}},
	}
	for _, c := range cases {
		if got := c.rules.Baseline(c.labels); !reflect.DeepEqual(got, c.want) {
			t.Errorf("Baseline(%v) under %+v: %v, want %v", c.labels, c.rules, got, c.want)
		}
	}
	for _, c := range []struct {
		r    *GateRules
		want bool
	}{
		{none, false}, {&GateRules{}, false}, {&GateRules{NoNewFailures: &off, NoNewFlaky: &off}, false},
		{&GateRules{BaselineLabels: map[string]string{"branch": "main"}}, false},
		{&GateRules{NoNewFlaky: &on}, true}, {&GateRules{MinTests: &n}, true}, {&GateRules{MaxDurationSeconds: &n}, true},
	} {
		if got := c.r.Judges(); got != c.want {
			t.Errorf("Judges(%+v) = %v", c.r, got)
		}
	}
	if err := ValidateGateRules(&GateRules{MinTests: &n, BaselineLabels: map[string]string{"branch": "main"}}); err != nil {
		t.Errorf("valid rules refused: %v", err)
	}
}
