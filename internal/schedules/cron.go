package schedules

import (
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"verdict/internal/domain"
)

// Bounds of a schedule's expression and zone.
const (
	MaxCronLen     = 100
	MaxTimezoneLen = 64
)

// parser reads the five standard fields (minute, hour, day of month, month, day of week): a
// schedule fires at most once a minute.
var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow)

// Cron is a parsed expression in its zone.
type Cron struct {
	spec cron.Schedule // read on the wall clock, as if it were UTC
	loc  *time.Location
}

// ParseCron reads a 5-field cron expression and an IANA time zone, or refuses them with a 400
// that names which is wrong.
func ParseCron(expr, zone string) (*Cron, error) {
	loc, err := parseZone(zone)
	if err != nil {
		return nil, err
	}
	spec, err := parseExpr(expr)
	if err != nil {
		return nil, err
	}
	c := &Cron{spec: spec, loc: loc}
	if c.Next(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)).IsZero() {
		return nil, domain.BadRequest("Invalid cron", "cron "+quote(expr)+" never fires")
	}
	return c, nil
}

func parseZone(zone string) (*time.Location, error) {
	bad := domain.BadRequest("Invalid timezone", "timezone "+quote(zone)+" is not an IANA time zone (e.g. Europe/Paris, America/New_York, UTC)")
	// "Local" would be the server's own zone, and "" is UTC to the time package: neither is a
	// zone a user means.
	if zone == "" || zone == "Local" || len(zone) > MaxTimezoneLen {
		return nil, bad
	}
	for _, r := range zone {
		if !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || strings.ContainsRune("/_+-", r)) {
			return nil, bad
		}
	}
	loc, err := time.LoadLocation(zone)
	if err != nil {
		return nil, bad
	}
	return loc, nil
}

func parseExpr(expr string) (cron.Schedule, error) {
	bad := func(why string) error {
		return domain.BadRequest("Invalid cron", "cron "+quote(expr)+" "+why)
	}
	if len(expr) > MaxCronLen {
		return nil, bad("is longer than 100 characters")
	}
	fields := strings.Fields(expr)
	if len(fields) != 5 {
		return nil, bad("must have 5 fields: minute, hour, day of month, month, day of week (e.g. 0 2 * * 1-5)")
	}
	// Only the fields' own characters: the parser would also take a TZ= prefix or a
	// descriptor (@every), which a schedule does not offer.
	for _, f := range fields {
		for _, r := range f {
			if !(r >= '0' && r <= '9' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || strings.ContainsRune("*/,-?", r)) {
				return nil, bad("holds " + quote(string(r)) + ": a field is numbers, names (JAN, MON), *, ?, ranges (-), steps (/) and lists (,)")
			}
		}
	}
	spec, err := parser.Parse(strings.Join(fields, " "))
	if err != nil {
		return nil, bad("is not valid: " + err.Error())
	}
	if s, ok := spec.(*cron.SpecSchedule); ok {
		s.Location = time.UTC // the wall clock; see Next
	}
	return spec, nil
}

// Next is the first fire strictly after t, zero when there is none within five years. The
// expression is read on the zone's wall clock: on the night the clocks go back, a wall time that
// occurs twice fires once, the first time; on the night they go forward, a wall time that does
// not exist fires as the clock shows it an hour later (02:30 at 03:30), unless that instant
// fires anyway. So each fire is one instant, and fires never go back in time.
func (c *Cron) Next(t time.Time) time.Time {
	wall := wallOf(t.In(c.loc))
	for range 1000 {
		wall = c.spec.Next(wall)
		if wall.IsZero() {
			return time.Time{}
		}
		at := time.Date(wall.Year(), wall.Month(), wall.Day(), wall.Hour(), wall.Minute(), 0, 0, c.loc)
		if first, ok := c.earlier(at); ok {
			if !first.After(t) {
				continue // a wall time that occurs twice, and has occurred: it fired then
			}
			at = first
		}
		if at.After(t) {
			return at.UTC()
		}
	}
	return time.Time{}
}

// earlier is the first instant of at's wall time when that wall time occurs twice (the clocks
// went back within the three hours before at) and at is not it.
func (c *Cron) earlier(at time.Time) (time.Time, bool) {
	_, off := at.Zone()
	_, before := at.Add(-3 * time.Hour).Zone()
	if before <= off {
		return time.Time{}, false
	}
	first := at.Add(-time.Duration(before-off) * time.Second)
	if wallOf(first.In(c.loc)) != wallOf(at) {
		return time.Time{}, false
	}
	return first, true
}

// NextRuns lists the next n fires after t.
func (c *Cron) NextRuns(t time.Time, n int) []time.Time {
	out := make([]time.Time, 0, n)
	for range n {
		t = c.Next(t)
		if t.IsZero() {
			break
		}
		out = append(out, t)
	}
	return out
}

// wallOf is t's wall clock as a UTC time.
func wallOf(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
}

// maxCounted bounds the missed fires counted one by one after a long downtime.
const maxCounted = 100_000

// CatchUp is what a schedule due at due does at now, given the grace period: at most one fire,
// the newest fire time at or before now if it is within the grace (zero if none); the fires it
// skips (every older one since due), counted, with the newest of them; and the next fire after
// now. A replica that was down for a day fires a per-minute schedule once, never 1,440 times.
func (c *Cron) CatchUp(due, now time.Time, grace time.Duration) (fire time.Time, missed int, lastMissed, next time.Time) {
	start := now.Add(-grace)
	t := due
	for !t.IsZero() && t.Before(start) && missed < maxCounted {
		missed, lastMissed, t = missed+1, t, c.Next(t)
	}
	if !t.IsZero() && t.Before(start) {
		// Too many to count one by one: go straight to the grace period's start.
		t = c.Next(start.Add(-time.Minute))
		for !t.IsZero() && t.Before(start) {
			t = c.Next(t)
		}
	}
	for !t.IsZero() && !t.After(now) {
		n := c.Next(t)
		if n.IsZero() || n.After(now) {
			fire = t
			break
		}
		missed, lastMissed, t = missed+1, t, n
	}
	if t.After(now) {
		next = t
	} else {
		next = c.Next(now)
	}
	return fire, missed, lastMissed, next
}

// quote quotes s for an error, cut short.
func quote(s string) string {
	r := []rune(s)
	if len(r) > 64 {
		s = string(r[:64]) + "…"
	}
	return strings.ToValidUTF8(`"`+strings.ReplaceAll(s, `"`, `'`)+`"`, "?")
}
