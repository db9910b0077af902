package domain

import (
	"strings"
	"testing"
	"time"
)

func days(n int) *int { return &n }

// The plan table: runs are kept longer than their files on every plan.
func TestRetentionPlans(t *testing.T) {
	for plan, want := range map[Plan]Retention{PlanFree: {14, 90}, PlanTeam: {90, 400}, PlanEnterprise: {365, 730}, "gold": {14, 90}} {
		if got := RetentionFor(plan); got != want {
			t.Errorf("%s: %+v, want %+v", plan, got, want)
		}
		if r := RetentionFor(plan); r.RunsDays <= r.LogsDays {
			t.Errorf("%s keeps runs %d days, files %d", plan, r.RunsDays, r.LogsDays)
		}
	}
}

// What an organization keeps: its setting, else the plan's value, never more than the plan's
// value or the server's maximum, and files never longer than their run.
func TestEffectiveRetention(t *testing.T) {
	for _, c := range []struct {
		name string
		plan Plan
		s    RetentionSetting
		max  Retention
		want Retention
	}{
		{"the plan's", PlanTeam, RetentionSetting{}, Retention{}, Retention{90, 400}},
		{"shortened", PlanTeam, RetentionSetting{days(30), days(60)}, Retention{}, Retention{30, 60}},
		{"logs only", PlanFree, RetentionSetting{LogsDays: days(3)}, Retention{}, Retention{3, 90}},
		{"server maxima", PlanEnterprise, RetentionSetting{}, Retention{100, 200}, Retention{100, 200}},
		{"a setting above the maximum", PlanEnterprise, RetentionSetting{days(300), days(700)}, Retention{100, 200}, Retention{100, 200}},
		{"a setting above a smaller plan's", PlanFree, RetentionSetting{days(60), days(300)}, Retention{}, Retention{14, 90}},
		{"runs maximum below the plan's files", PlanTeam, RetentionSetting{}, Retention{RunsDays: 30}, Retention{30, 30}},
		{"a nonsense stored value", PlanTeam, RetentionSetting{days(0), days(-5)}, Retention{}, Retention{90, 400}},
	} {
		if got := EffectiveRetention(c.plan, c.s, c.max); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}

// The bounds of an admin's setting: whole days from 1, at most the plan's value and the
// server's maximum, runs at least logs; each refusal a 400 naming what is wrong.
func TestCheckRetention(t *testing.T) {
	for _, c := range []struct {
		plan Plan
		s    RetentionSetting
		max  Retention
		want string // "" accepted; else a part of the message
	}{
		{PlanTeam, RetentionSetting{}, Retention{}, ""},
		{PlanTeam, RetentionSetting{days(1), days(1)}, Retention{}, ""},
		{PlanTeam, RetentionSetting{days(90), days(400)}, Retention{}, ""},
		{PlanTeam, RetentionSetting{LogsDays: days(30)}, Retention{}, ""},
		{PlanTeam, RetentionSetting{LogsDays: days(0)}, Retention{}, "logsDays must be a whole number of days from 1"},
		{PlanTeam, RetentionSetting{RunsDays: days(-1)}, Retention{}, "runsDays must be a whole number of days from 1"},
		{PlanTeam, RetentionSetting{LogsDays: days(91)}, Retention{}, "logsDays may be at most 90, the team plan's retention"},
		{PlanFree, RetentionSetting{RunsDays: days(91)}, Retention{}, "runsDays may be at most 90, the free plan's"},
		{PlanEnterprise, RetentionSetting{LogsDays: days(31)}, Retention{LogsDays: 30}, "logsDays may be at most 30, this server's maximum"},
		{PlanEnterprise, RetentionSetting{RunsDays: days(61)}, Retention{RunsDays: 60}, "runsDays may be at most 60, this server's maximum"},
		{PlanTeam, RetentionSetting{days(30), days(29)}, Retention{}, "runsDays (29) must be at least logsDays (30)"},
		{PlanTeam, RetentionSetting{RunsDays: days(10)}, Retention{}, "runsDays (10) must be at least logsDays (90)"},
		{PlanTeam, RetentionSetting{LogsDays: days(60)}, Retention{RunsDays: 50}, "runsDays (50) must be at least logsDays (60)"},
	} {
		err := CheckRetention(c.plan, c.s, c.max)
		switch e, _ := err.(*Error); {
		case c.want == "" && err != nil:
			t.Errorf("%s %+v %+v: refused: %v", c.plan, c.s, c.max, err)
		case c.want != "" && (e == nil || e.Kind != KindInvalid || e.Code != "Validation error" || !strings.Contains(e.Message, c.want)):
			t.Errorf("%s %+v %+v: %v, want a 400 saying %q", c.plan, c.s, c.max, err, c.want)
		}
	}
}

func TestRetentionCutoffsAndNote(t *testing.T) {
	now := time.Date(2026, 3, 10, 9, 0, 0, 0, time.UTC)
	logs, runs := RetentionCutoffs(Retention{14, 90}, now)
	if !logs.Equal(now.AddDate(0, 0, -14)) || !runs.Equal(now.AddDate(0, 0, -90)) {
		t.Fatalf("cutoffs %s %s", logs, runs)
	}
	if got := FilesExpiredNote(now.Add(20 * time.Hour)); got != "Logs and report files expired under the organization's retention policy on 2026-03-11." {
		t.Fatalf("note %q", got)
	}
}
