package planner

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// shop is a project's manual tests: a risky checkout, an account suite, a harmless profile
// suite and a case without a suite.
func shop() []Case {
	return []Case{
		{ID: "c1", Title: "Pay with a saved card", Suite: "Checkout", Priority: "critical", Tags: []string{"smoke"},
			Steps: []Step{{"Open /checkout", "The saved card is shown"}, {"Click Pay", "The confirmation page loads"}}},
		{ID: "c2", Title: "Apply a coupon", Suite: "Checkout", Priority: "medium", Tags: []string{"promo"}},
		{ID: "c3", Title: "Refund an order", Suite: "Checkout", Priority: "high"},
		{ID: "c4", Title: "Change the shipping address", Suite: "Checkout", Priority: "low"},
		{ID: "c5", Title: "See the order summary", Suite: "Checkout", Priority: "low", Steps: []Step{{"Open the summary", "The total is shown"}}},
		{ID: "a1", Title: "Reset the password", Suite: "Account", Priority: "high", Tags: []string{"auth"}},
		{ID: "a2", Title: "Update the display name", Suite: "Account", Priority: "low", Tags: []string{"promo"}},
		{ID: "p1", Title: "Change the avatar", Suite: "Profile", Priority: "low"},
		{ID: "p2", Title: "Pick a theme", Suite: "  Profile ", Priority: "low"},
		{ID: "n1", Title: "Read the help page", Priority: "medium"},
	}
}

var shopHistory = History{Runs: 10, Tests: map[string]int{"Reset the password": 2, "apply a coupon": 1}, Suites: map[string]int{"checkout": 3}}

func TestDiscoverGroupsAndOrders(t *testing.T) {
	d := Discover(shop(), shopHistory, Options{ProjectID: "proj-1"})
	if d.ProjectID != "proj-1" || d.TotalScanned != 10 {
		t.Errorf("projectId %q, totalScanned %d; want proj-1, 10", d.ProjectID, d.TotalScanned)
	}
	type row struct {
		suite string
		level Level
		tests []Test
	}
	want := []row{
		{"Account", Critical, []Test{{"a1", "Reset the password", Critical}, {"a2", "Update the display name", Low}}},
		{"Checkout", Critical, []Test{
			{"c1", "Pay with a saved card", Critical},
			{"c3", "Refund an order", High},
			{"c2", "Apply a coupon", High},
			{"c4", "Change the shipping address", Low},
			{"c5", "See the order summary", Low},
		}},
		{NoSuite, Medium, []Test{{"n1", "Read the help page", Medium}}},
		{"Profile", Low, []Test{{"p1", "Change the avatar", Low}, {"p2", "Pick a theme", Low}}},
	}
	if len(d.Groups) != len(want) {
		t.Fatalf("%d groups, want %d: %+v", len(d.Groups), len(want), d.Groups)
	}
	for i, w := range want {
		g := d.Groups[i]
		if g.Suite != w.suite || g.RiskLevel != w.level || !reflect.DeepEqual(g.Tests, w.tests) {
			t.Errorf("group %d = %s %s %+v\nwant %s %s %+v", i, g.Suite, g.RiskLevel, g.Tests, w.suite, w.level, w.tests)
		}
	}
}

func TestDiscoverRationaleNamesTheEvidence(t *testing.T) {
	d := Discover(shop(), shopHistory, Options{})
	got := map[string]string{}
	for _, g := range d.Groups {
		got[g.Suite] = g.Rationale
	}
	want := map[string]string{
		"Checkout": "3 of 5 tests touch coupon, payment and refund; 1 is marked critical and 1 high; 1 failed and the suite had 3 failures in the last 10 runs.",
		"Account":  "1 of 2 tests touches auth and password; 1 is marked high priority; 1 failed in the last 10 runs.",
		NoSuite:    "Its only test touches no payments, security or data, is not marked critical or high and did not fail in the last 10 runs.",
		"Profile":  "No test touches payments, security or data, none is marked critical or high and none failed in the last 10 runs.",
	}
	for suite, w := range want {
		if got[suite] != w {
			t.Errorf("%s: rationale\n%q\nwant\n%q", suite, got[suite], w)
		}
	}
	for _, r := range got {
		if strings.Count(r, ".") != 1 || !strings.HasSuffix(r, ".") {
			t.Errorf("rationale %q is not one sentence", r)
		}
	}
}

func TestDiscoverRationaleWithoutHistory(t *testing.T) {
	cases := []Case{
		{ID: "1", Title: "Delete the account", Suite: "S", Priority: "high"},
		{ID: "2", Title: "Export the data", Suite: "S", Priority: "critical"},
		{ID: "3", Title: "Pay", Suite: "One", Priority: "critical"},
		{ID: "4", Title: "Rename", Suite: "Quiet"},
		{ID: "5", Title: "Rename again", Suite: "Quiet"},
	}
	got := map[string]string{}
	for _, g := range Discover(cases, History{}, Options{}).Groups {
		got[g.Suite] = g.Rationale
	}
	want := map[string]string{
		"S":     "Both tests touch delete and export; 1 is marked critical and 1 high.",
		"One":   "Its only test touches payment; it is marked critical.",
		"Quiet": "No test touches payments, security or data and none is marked critical or high.",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("rationales\n%q\nwant\n%q", got, want)
	}
	// Failures counted without a known window are recent.
	d := Discover(cases[3:4], History{Tests: map[string]int{"rename": 3}}, Options{})
	if r := d.Groups[0].Rationale; r != "It failed 3 times recently." {
		t.Errorf("rationale %q", r)
	}
}

func TestDiscoverSuiteHistoryRaisesTheSuite(t *testing.T) {
	// 5 a failure, up to 20, on top of the riskiest test's score; the tests keep their own.
	for _, tc := range []struct {
		priority  string
		failures  int
		want, own Level
	}{
		{"high", 0, Medium, Medium}, // 30
		{"high", 1, Medium, Medium}, // 35
		{"high", 2, High, Medium},   // 40
		{"high", 100, High, Medium}, // 50
		{"low", 100, Medium, Low},   // 20
	} {
		cases := []Case{{ID: "1", Title: "Rename", Suite: "Settings", Priority: tc.priority}}
		d := Discover(cases, History{Runs: 20, Suites: map[string]int{"SETTINGS": tc.failures}}, Options{})
		if g := d.Groups[0]; g.RiskLevel != tc.want || g.Tests[0].RiskLevel != tc.own {
			t.Errorf("%s, %d suite failures: suite %s, test %s; want %s, %s", tc.priority, tc.failures, g.RiskLevel, g.Tests[0].RiskLevel, tc.want, tc.own)
		}
	}
}

func TestDiscoverFilters(t *testing.T) {
	ids := func(d Discovery) []string {
		var out []string
		for _, g := range d.Groups {
			for _, t := range g.Tests {
				out = append(out, t.ID)
			}
		}
		return out
	}
	for _, tc := range []struct {
		opts Options
		want []string
	}{
		{Options{Suite: "checkout"}, []string{"c1", "c3", "c2", "c4", "c5"}},
		{Options{Suite: " PROFILE "}, []string{"p1", "p2"}},
		{Options{Suite: NoSuite}, []string{"n1"}},
		{Options{Tag: "Promo"}, []string{"c2", "a2"}},
		{Options{Suite: "Account", Tag: "promo"}, []string{"a2"}},
		{Options{Suite: "Nowhere"}, nil},
		{Options{Tag: "nothing"}, nil},
	} {
		d := Discover(shop(), History{}, tc.opts)
		if got := ids(d); !reflect.DeepEqual(got, tc.want) || d.TotalScanned != len(tc.want) {
			t.Errorf("%+v: tests %v (scanned %d), want %v", tc.opts, got, d.TotalScanned, tc.want)
		}
	}
}

func TestDiscoverJSONShape(t *testing.T) {
	b, err := json.Marshal(Discover(shop()[:1], History{}, Options{ProjectID: "p"}))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"projectId":"p","totalScanned":1,"groups":[{"suite":"Checkout","riskLevel":"CRITICAL",` +
		`"rationale":"Its only test touches payment and checkout; it is marked critical.",` +
		`"tests":[{"id":"c1","title":"Pay with a saved card","riskLevel":"CRITICAL"}]}]}`
	if string(b) != want {
		t.Errorf("JSON\n%s\nwant\n%s", b, want)
	}
	b, _ = json.Marshal(Discover(nil, History{}, Options{ProjectID: "p"}))
	if string(b) != `{"projectId":"p","totalScanned":0,"groups":[]}` {
		t.Errorf("empty discovery: %s", b)
	}
}

func TestDiscoverIgnoresOrder(t *testing.T) {
	want := Discover(shop(), shopHistory, Options{})
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		cases := shop()
		rng.Shuffle(len(cases), func(i, j int) { cases[i], cases[j] = cases[j], cases[i] })
		if got := Discover(cases, shopHistory, Options{}); !reflect.DeepEqual(got, want) {
			t.Fatalf("a shuffled input gives another discovery:\n%+v\nwant\n%+v", got, want)
		}
	}
}
