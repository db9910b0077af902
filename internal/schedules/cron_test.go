package schedules_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"verdict/internal/domain"
	"verdict/internal/schedules"
)

func mustCron(t *testing.T, expr, zone string) *schedules.Cron {
	t.Helper()
	c, err := schedules.ParseCron(expr, zone)
	if err != nil {
		t.Fatalf("ParseCron(%q, %q): %v", expr, zone, err)
	}
	return c
}

func at(t *testing.T, zone, s string) time.Time {
	t.Helper()
	loc, err := time.LoadLocation(zone)
	if err != nil {
		t.Fatal(err)
	}
	v, err := time.ParseInLocation("2006-01-02 15:04", s, loc)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// A malformed expression or zone is a 400 that names which of the two is wrong, and quotes it.
func TestParseCronRefusals(t *testing.T) {
	for _, c := range []struct{ expr, zone, code, msg string }{
		{"* * * *", "UTC", "Invalid cron", `cron "* * * *" must have 5 fields`},
		{"* * * * * *", "UTC", "Invalid cron", "must have 5 fields"},
		{"61 * * * *", "UTC", "Invalid cron", `cron "61 * * * *" is not valid`},
		{"0 0 30 2 *", "UTC", "Invalid cron", `cron "0 0 30 2 *" never fires`},
		{"@every 1m", "UTC", "Invalid cron", "must have 5 fields"},
		{"@hourly * * * *", "UTC", "Invalid cron", `holds "@"`},
		{"TZ=UTC * * * *", "UTC", "Invalid cron", `holds "="`},
		{"CRON_TZ=Asia/Tokyo * * * *", "UTC", "Invalid cron", `holds "_"`},
		{strings.Repeat("1,", 60) + "1 * * * *", "UTC", "Invalid cron", "is longer than 100 characters"},
		{"0 2 * * *", "Mars/Olympus", "Invalid timezone", `timezone "Mars/Olympus" is not an IANA time zone`},
		{"0 2 * * *", "", "Invalid timezone", `timezone "" is not`},
		{"0 2 * * *", "Local", "Invalid timezone", `timezone "Local" is not`},
		{"0 2 * * *", "../../etc/passwd", "Invalid timezone", "is not an IANA time zone"},
		{"0 2 * * *", "Europe/Paris\n", "Invalid timezone", "is not an IANA time zone"},
	} {
		_, err := schedules.ParseCron(c.expr, c.zone)
		de := wantInvalid(t, err)
		if de.Code != c.code || !strings.Contains(de.Message, c.msg) {
			t.Errorf("ParseCron(%q, %q) = %s: %s, want %s: …%s…", c.expr, c.zone, de.Code, de.Message, c.code, c.msg)
		}
	}
	for _, ok := range [][2]string{{"*/5 9-17 * * MON-FRI", "Europe/Paris"}, {"0 0 29 2 *", "UTC"}, {"0 2 * * 1-5", "America/New_York"},
		{"  0   2 * *  *  ", "Asia/Kolkata"}, {"? * * * ?", "UTC"}} {
		mustCron(t, ok[0], ok[1])
	}
}

// Fire times are read on the zone's wall clock, across both of the year's clock changes.
func TestNextAcrossDST(t *testing.T) {
	const paris = "Europe/Paris"
	daily := mustCron(t, "30 2 * * *", paris)
	// Spring forward (2026-03-29, 02:00 → 03:00): 02:30 does not exist and fires at 03:30 CEST,
	// once; the days around keep 02:30.
	got := daily.NextRuns(at(t, paris, "2026-03-27 12:00"), 4)
	want := []time.Time{at(t, paris, "2026-03-28 02:30"), at(t, paris, "2026-03-29 03:30"), at(t, paris, "2026-03-30 02:30"), at(t, paris, "2026-03-31 02:30")}
	equalTimes(t, "daily 02:30 over spring forward", got, want)
	// Fall back (2026-10-25, 03:00 → 02:00): 02:30 occurs twice and fires once, the first time.
	got = daily.NextRuns(at(t, paris, "2026-10-24 12:00"), 2)
	first := time.Date(2026, 10, 25, 0, 30, 0, 0, time.UTC) // 02:30 CEST
	equalTimes(t, "daily 02:30 over fall back", got, []time.Time{first, at(t, paris, "2026-10-26 02:30")})

	// Every half hour: over fall back the repeated hour is not fired again; over spring
	// forward the missing hour's two times fall on 03:00 and 03:30, each instant once.
	half := mustCron(t, "*/30 * * * *", paris)
	got = half.NextRuns(time.Date(2026, 10, 24, 23, 45, 0, 0, time.UTC), 5) // 01:45 CEST
	equalTimes(t, "half-hourly over fall back", got, []time.Time{
		time.Date(2026, 10, 25, 0, 0, 0, 0, time.UTC), time.Date(2026, 10, 25, 0, 30, 0, 0, time.UTC), // 02:00, 02:30 CEST
		time.Date(2026, 10, 25, 2, 0, 0, 0, time.UTC), time.Date(2026, 10, 25, 2, 30, 0, 0, time.UTC), // 03:00, 03:30 CET
		time.Date(2026, 10, 25, 3, 0, 0, 0, time.UTC)})
	got = half.NextRuns(time.Date(2026, 3, 29, 0, 15, 0, 0, time.UTC), 4) // 01:15 CET
	equalTimes(t, "half-hourly over spring forward", got, []time.Time{
		time.Date(2026, 3, 29, 0, 30, 0, 0, time.UTC), time.Date(2026, 3, 29, 1, 0, 0, 0, time.UTC), // 01:30 CET, 03:00 CEST
		time.Date(2026, 3, 29, 1, 30, 0, 0, time.UTC), time.Date(2026, 3, 29, 2, 0, 0, 0, time.UTC)}) // 03:30, 04:00 CEST
	// Strictly after: a time that is a fire time is not its own next.
	n := half.Next(time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC))
	equalTimes(t, "strictly after", []time.Time{n}, []time.Time{time.Date(2026, 5, 1, 10, 30, 0, 0, time.UTC)})
}

// After downtime a schedule fires at most once: the newest missed fire if it is within the
// grace period, never the older ones, which are counted as missed.
func TestCatchUpGrace(t *testing.T) {
	c := mustCron(t, "* * * * *", "UTC")
	due := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name       string
		now        time.Time
		grace      time.Duration
		fire       time.Time
		missed     int
		lastMissed time.Time
		next       time.Time
	}{
		{"on time", due.Add(300 * time.Millisecond), time.Hour, due, 0, time.Time{}, due.Add(time.Minute)},
		{"exactly due", due, time.Hour, due, 0, time.Time{}, due.Add(time.Minute)},
		{"10 minutes down, within the grace", due.Add(10*time.Minute + 20*time.Second), time.Hour,
			due.Add(10 * time.Minute), 10, due.Add(9 * time.Minute), due.Add(11 * time.Minute)},
		{"a day down: the newest within the grace runs", due.Add(24*time.Hour + 5*time.Second), time.Hour,
			due.Add(24 * time.Hour), 1440, due.Add(24*time.Hour - time.Minute), due.Add(24*time.Hour + time.Minute)},
		{"everything older than the grace", due.Add(90 * time.Second), 10 * time.Second,
			time.Time{}, 2, due.Add(time.Minute), due.Add(2 * time.Minute)},
	} {
		fire, missed, lastMissed, next := c.CatchUp(due, tc.now, tc.grace)
		if !fire.Equal(tc.fire) || missed != tc.missed || !lastMissed.Equal(tc.lastMissed) || !next.Equal(tc.next) {
			t.Errorf("%s: fire %v missed %d (newest %v) next %v; want %v %d (%v) %v", tc.name, fire, missed, lastMissed, next,
				tc.fire, tc.missed, tc.lastMissed, tc.next)
		}
	}
	// A daily schedule down for two days with a grace of an hour: nothing runs, both are missed.
	daily := mustCron(t, "0 3 * * *", "UTC")
	due = time.Date(2026, 5, 1, 3, 0, 0, 0, time.UTC)
	fire, missed, _, next := daily.CatchUp(due, due.Add(49*time.Hour+time.Minute), time.Hour)
	if !fire.IsZero() || missed != 3 || !next.Equal(due.Add(72*time.Hour)) {
		t.Errorf("daily after two days: fire %v missed %d next %v", fire, missed, next)
	}
	// Years down: the count stops at its bound and the next fire is still right.
	fire, missed, _, next = c.CatchUp(due, due.AddDate(1, 0, 0).Add(30*time.Second), time.Minute)
	if !fire.Equal(due.AddDate(1, 0, 0)) || missed < 100_000 || !next.Equal(due.AddDate(1, 0, 0).Add(time.Minute)) {
		t.Errorf("a year down: fire %v missed %d next %v", fire, missed, next)
	}
}

func equalTimes(t *testing.T, what string, got, want []time.Time) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: got %v, want %v", what, got, want)
		return
	}
	for i := range got {
		if !got[i].Equal(want[i]) {
			t.Errorf("%s: [%d] got %v, want %v", what, i, got[i], want[i])
		}
	}
}

// Any expression and zone either parse into a schedule whose fires go strictly forward, or are
// refused as a 400 naming the cron or the zone; never a panic or another error.
func FuzzParseCron(f *testing.F) {
	for _, s := range [][2]string{{"* * * * *", "UTC"}, {"*/5 9-17 * * MON-FRI", "Europe/Paris"}, {"0 0 30 2 *", "UTC"},
		{"TZ=UTC * * * *", "UTC"}, {"@every 1m", "Local"}, {"5-1 * * * *", "America/New_York"}, {"*/0 * * * *", "UTC"},
		{"0 2 * * 7", "Australia/Lord_Howe"}, {"1,2,3-9/2 */3 1-31/7 JAN-DEC/2 ?", "Asia/Kathmandu"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, expr, zone string) {
		c, err := schedules.ParseCron(expr, zone)
		if err != nil {
			de := wantInvalid(t, err)
			if de.Code != "Invalid cron" && de.Code != "Invalid timezone" {
				t.Fatalf("ParseCron(%q, %q): code %q", expr, zone, de.Code)
			}
			return
		}
		prev := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
		for _, n := range c.NextRuns(prev, 5) {
			if !n.After(prev) || n.Second() != 0 {
				t.Fatalf("ParseCron(%q, %q): fire %v after %v", expr, zone, n, prev)
			}
			prev = n
		}
	})
}

// wantInvalid fails unless err is a 400 (domain.KindInvalid) and returns it.
func wantInvalid(t testing.TB, err error) *domain.Error {
	t.Helper()
	var de *domain.Error
	if !errors.As(err, &de) || de.Kind != domain.KindInvalid {
		t.Fatalf("got %v, want a 400", err)
	}
	return de
}
