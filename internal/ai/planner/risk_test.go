package planner

import (
	"slices"
	"testing"
)

func TestAssess(t *testing.T) {
	for _, tc := range []struct {
		name     string
		c        Case
		failures int
		score    int
		level    Level
		areas    []string
	}{
		{"critical and checkout in the title", Case{Title: "Pay with a saved card at checkout", Priority: "critical"}, 0, 75, Critical, []string{"payments"}},
		{"critical alone", Case{Title: "Change the avatar", Priority: "critical"}, 0, 45, High, nil},
		{"high and password", Case{Title: "Reset the password", Priority: "high"}, 0, 60, High, []string{"security"}},
		{"high, password, failing twice", Case{Title: "Reset the password", Priority: "high"}, 2, 80, Critical, []string{"security"}},
		{"medium and export", Case{Title: "Export orders to CSV", Priority: "medium"}, 0, 40, High, []string{"data"}},
		{"medium alone", Case{Title: "Change the avatar", Priority: "medium"}, 0, 15, Medium, nil},
		{"no priority counts as medium", Case{Title: "Change the avatar"}, 0, 15, Medium, nil},
		{"unknown priority counts as medium", Case{Title: "Change the avatar", Priority: "urgent"}, 0, 15, Medium, nil},
		{"priority in capitals", Case{Title: "Change the avatar", Priority: " HIGH "}, 0, 30, Medium, nil},
		{"low alone", Case{Title: "Change the avatar", Priority: "low"}, 0, 0, Low, nil},
		{"login in a step counts half", Case{Title: "Change the avatar", Priority: "low", Steps: []Step{{Action: "Log in as Ann"}}}, 0, 15, Medium, []string{"security"}},
		{"login in the preconditions counts half", Case{Title: "Change the avatar", Priority: "low", Preconditions: "User is logged in"}, 0, 15, Medium, []string{"security"}},
		{"payment in an expected result counts half", Case{Title: "Open the order", Priority: "medium", Steps: []Step{{Expected: "The invoice is shown"}}}, 0, 30, Medium, []string{"payments"}},
		{"a release tag", Case{Title: "Change the avatar", Priority: "low", Tags: []string{"smoke"}}, 0, 10, Low, nil},
		{"high and a release tag", Case{Title: "Change the avatar", Priority: "high", Tags: []string{"Critical-Path"}}, 0, 40, High, nil},
		{"an area in a tag counts fully", Case{Title: "Change the avatar", Priority: "low", Tags: []string{"Payments"}}, 0, 30, Medium, []string{"payments"}},
		{"two areas", Case{Title: "Refund and delete the account", Priority: "low"}, 0, 40, High, []string{"payments", "data"}},
		{"three areas are capped", Case{Title: "Refund, log in, export", Priority: "medium"}, 0, 60, High, []string{"payments", "security", "data"}},
		{"a strong area before a half one", Case{Title: "Export the report", Priority: "low", Steps: []Step{{Action: "pay"}}}, 0, 35, Medium, []string{"data", "payments"}},
		{"one failure", Case{Title: "Change the avatar", Priority: "low"}, 1, 10, Low, nil},
		{"three failures", Case{Title: "Change the avatar", Priority: "low"}, 3, 30, Medium, nil},
		{"failures are capped", Case{Title: "Change the avatar", Priority: "low"}, 9, 30, Medium, nil},
		{"whole words only", Case{Title: "Important notes about the payday party", Priority: "low"}, 0, 0, Low, nil},
		{"inflections", Case{Title: "Refunded orders are deleted", Priority: "low"}, 0, 40, High, []string{"payments", "data"}},
		{"phrases", Case{Title: "Data loss after sign in", Priority: "low"}, 0, 40, High, []string{"security", "data"}},
		{"words across two tags do not join", Case{Title: "x", Priority: "low", Tags: []string{"data", "loss"}}, 0, 0, Low, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := assess(tc.c, tc.failures)
			if r.Score != tc.score || r.Level != tc.level || !slices.Equal(r.Areas, tc.areas) {
				t.Errorf("assess = score %d, %s, areas %v (%v); want %d, %s, %v", r.Score, r.Level, r.Areas, r.Reasons, tc.score, tc.level, tc.areas)
			}
		})
	}
}

func TestLevelThresholds(t *testing.T) {
	for score, want := range map[int]Level{0: Low, 14: Low, 15: Medium, 39: Medium, 40: High, 69: High, 70: Critical, 200: Critical} {
		if got := levelOf(score); got != want {
			t.Errorf("levelOf(%d) = %s, want %s", score, got, want)
		}
	}
}

func TestAssessReadsHistoryByTitle(t *testing.T) {
	c := Case{Title: "Reset  the Password", Priority: "high"}
	h := History{Runs: 10, Tests: map[string]int{"reset the password": 1, "RESET THE PASSWORD ": 1, "other": 5}}
	r := Assess(c, h)
	if r.Failures != 2 || r.Score != 80 || r.Level != Critical {
		t.Errorf("Assess = %+v, want 2 failures, score 80, CRITICAL", r)
	}
	want := []string{"priority high +30", "touches security +30", "2 recent failures +20"}
	if !slices.Equal(r.Reasons, want) {
		t.Errorf("reasons = %q, want %q", r.Reasons, want)
	}
	if !slices.Equal(r.Terms, []string{"password"}) {
		t.Errorf("terms = %q", r.Terms)
	}
}

func TestEveryAreaTermMatchesItsForms(t *testing.T) {
	for _, a := range areas {
		for _, term := range a.terms {
			for _, f := range term.forms {
				c := Case{Title: "x " + f + " y", Priority: "low"}
				if r := assess(c, 0); !slices.Contains(r.Areas, a.name) || !slices.Contains(r.Terms, term.name) {
					t.Errorf("%q: areas %v, terms %v; want %s and %s", f, r.Areas, r.Terms, a.name, term.name)
				}
			}
		}
	}
}
