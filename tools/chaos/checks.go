package main

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// check is one verdict on a fault. A fault fails when any of its checks does:
//
//	statuses  every run ends as the fault's expectation says (PASSED for most; ERROR with an
//	          error for the runs in flight when the engine restarts or the lease is lost); the
//	          fault was injected and ended, and hit at least one run in flight
//	outcome   a run whose suite ran to its end (its container exited 0, or its log holds the
//	          suite's last line) must end PASSED with exit code 0, unless the fault took the
//	          runner's lease away (then ERROR, runner lost, is correct)
//	logs      each run's stored log and the event stream followed through the fault hold every
//	          numbered line once, in order (all of them for a suite that ran to its end), and
//	          the stream delivered exactly the stored log and the final status
//	effects   every invitation answered 201 was mailed exactly once and no mail came twice;
//	          every ticket answered 201 is one issue in Linear, recorded on the run
//	no 500    no request the balancer passed on was answered 500
//	recovery  within -recover-within of the fault's end, /readyz answered 200 on every
//	          replica and a new run passed; no run of the fault was left unfinished
type check struct {
	name   string
	ok     bool
	detail string
}

var numbered = regexp.MustCompile(`^line (\d+) of (\d+)$`)

// suiteEnd is the last line the sample suite prints when every test passed.
var suiteEnd = regexp.MustCompile(`^\d+ tests, 0 failed$`)

// logStat is what a log holds of the lines the image printed.
type logStat struct {
	numbered int      // distinct numbered lines
	missing  []int    // numbers not there (a gap, or past the end for a suite that ran to it)
	repeated []string // lines there more than once
	ended    bool     // the suite's last line is there
}

func analyse(text string, lines int, complete bool) logStat {
	var s logStat
	seen := map[int]int{}
	other := map[string]int{}
	top := 0
	for _, l := range strings.Split(text, "\n") {
		if l == "" {
			continue
		}
		if m := numbered.FindStringSubmatch(l); m != nil {
			n, _ := strconv.Atoi(m[1])
			seen[n]++
			top = max(top, n)
			continue
		}
		other[l]++
		if suiteEnd.MatchString(l) {
			s.ended = true
		}
	}
	if complete || s.ended {
		top = lines
	}
	for n := 1; n <= top; n++ {
		switch seen[n] {
		case 0:
			s.missing = append(s.missing, n)
		case 1:
		default:
			s.repeated = append(s.repeated, fmt.Sprintf("line %d ×%d", n, seen[n]))
		}
	}
	for l, k := range other {
		if k > 1 {
			s.repeated = append(s.repeated, fmt.Sprintf("%q ×%d", l, k))
		}
	}
	sort.Strings(s.repeated)
	s.numbered = len(seen)
	return s
}

func (s logStat) bad() bool { return len(s.missing) > 0 || len(s.repeated) > 0 }

func (s logStat) String() string {
	var parts []string
	if len(s.missing) > 0 {
		parts = append(parts, fmt.Sprintf("%d lost (%s)", len(s.missing), span(s.missing)))
	}
	if len(s.repeated) > 0 {
		parts = append(parts, fmt.Sprintf("%d repeated (%s)", len(s.repeated), strings.Join(first(s.repeated, 3), ", ")))
	}
	if len(parts) == 0 {
		return "ok"
	}
	return strings.Join(parts, ", ")
}

// span writes sorted numbers as ranges: 3-9, 12.
func span(ns []int) string {
	var parts []string
	for i := 0; i < len(ns); {
		j := i
		for j+1 < len(ns) && ns[j+1] == ns[j]+1 {
			j++
		}
		if i == j {
			parts = append(parts, strconv.Itoa(ns[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", ns[i], ns[j]))
		}
		i = j + 1
	}
	return strings.Join(first(parts, 4), ", ")
}

func first(xs []string, n int) []string {
	if len(xs) <= n {
		return xs
	}
	return append(xs[:n:n], fmt.Sprintf("… %d more", len(xs)-n))
}

// ranToEnd says whether the run's suite ran to its end, by the engine's word or its own.
func (c *chaos) ranToEnd(rr *runRec) (bool, string) {
	if code, ok := c.exits.code(rr.taskID); ok {
		return code == 0, fmt.Sprintf("container exit %d", code)
	}
	if analyse(rr.stored, rr.lines, false).ended {
		return true, "container exit ? (log ends)"
	}
	return false, "container exit ?"
}

// checkEffects counts, once every fault has run, the mails the SMTP server received and the
// issues the fake Linear created, waiting up to 20 s for the outbox to deliver what it owes.
func (c *chaos) checkEffects(ctx context.Context) {
	want := map[string]bool{}
	for _, r := range c.results {
		for email, status := range r.invites {
			if status == http.StatusCreated {
				want[email] = true
			}
		}
	}
	count := func() map[string]int {
		m := map[string]int{}
		for _, msg := range c.smtp.Messages() {
			for _, to := range msg.To {
				m[strings.ToLower(to)]++
			}
		}
		return m
	}
	_ = waitFor(ctx, 20*time.Second, func() bool {
		m := count()
		for email := range want {
			if m[email] == 0 {
				return false
			}
		}
		return true
	})
	time.Sleep(2 * time.Second) // a second copy would come now, not later
	c.mails = count()
	c.issues = map[string]int{}
	for _, is := range c.linear.Issues() {
		c.issues[is.Title]++
	}
	c.tickets = map[string]int{}
	if e, err := c.admin.getRetrying(ctx, c.ticketRun); err == nil {
		for _, t := range e.TrackerAIssues {
			c.tickets[t.Title]++
		}
	} else {
		logf("reading the tickets of %s: %v", c.ticketRun, err)
	}
}

// judge runs the checks of one fault.
func (c *chaos) judge(r *result) {
	var statuses, outcome, logs, recovery []string
	statuses = append(statuses, r.broken...)
	inFlight := 0
	for _, rr := range r.allRuns() {
		if rr.kind == "in flight" {
			inFlight++
		}
	}
	if inFlight == 0 {
		statuses = append(statuses, "no run was in flight when the fault came")
	}
	for _, rr := range r.allRuns() {
		e := rr.final
		if e == nil || !e.final() {
			st := "unknown"
			if e != nil {
				st = e.Status
			}
			recovery = append(recovery, fmt.Sprintf("%s still %s", rr.taskID, st))
			continue
		}
		want, explained := []string{"PASSED"}, false
		if r.f.want != nil {
			want, explained = r.f.want(rr.kind)
		}
		switch {
		case !contains(want, e.Status):
			statuses = append(statuses, fmt.Sprintf("%s (%s) ended %s, want %s", rr.taskID, rr.kind, describeEnd(e), strings.Join(want, " or ")))
		case e.Status == "ERROR" && explained && e.errText() == "":
			statuses = append(statuses, fmt.Sprintf("%s (%s) ended ERROR without saying why", rr.taskID, rr.kind))
		}
		end, _ := c.ranToEnd(rr)
		exempt := r.f.leaseLost && rr.kind == "in flight"
		if end && !exempt && (e.Status != "PASSED" || e.ExitCode == nil || *e.ExitCode != 0) {
			outcome = append(outcome, fmt.Sprintf("%s ran to its end but ended %s (%s)", rr.taskID, e.Status, e.errText()))
		}
		complete := end && !exempt
		if rr.logErr != nil {
			logs = append(logs, fmt.Sprintf("%s: stored log unreadable: %v", rr.taskID, rr.logErr))
			continue
		}
		if s := analyse(rr.stored, rr.lines, complete); s.bad() {
			logs = append(logs, fmt.Sprintf("%s stored log: %s", rr.taskID, s))
		}
		text, final := rr.f.snapshot()
		if s := analyse(text, rr.lines, complete); s.bad() {
			logs = append(logs, fmt.Sprintf("%s stream: %s", rr.taskID, s))
		}
		switch {
		case final == "":
			logs = append(logs, fmt.Sprintf("%s stream: no final status (run %s)", rr.taskID, e.Status))
		case final != e.Status:
			logs = append(logs, fmt.Sprintf("%s stream: final %s, the run says %s", rr.taskID, final, e.Status))
		case text != rr.stored:
			logs = append(logs, fmt.Sprintf("%s stream: %d bytes, the stored log %d, and they differ", rr.taskID, len(text), len(rr.stored)))
		}
	}
	if r.readyAfter < 0 || r.readyAfter > c.recoverWithin {
		recovery = append(recovery, fmt.Sprintf("/readyz 200 on every replica after %s", seconds(r.readyAfter)))
	}
	if r.passAfter < 0 || r.passAfter > c.recoverWithin {
		recovery = append(recovery, fmt.Sprintf("a new run passed after %s (%s)", seconds(r.passAfter), r.probe))
	}

	var effects []string
	r.mu.Lock()
	for email, status := range r.invites {
		got := c.mails[email]
		switch {
		case got > 1:
			effects = append(effects, fmt.Sprintf("%s mailed %d times (invitation answered %s)", email, got, statusText(status)))
		case status == http.StatusCreated && got == 0:
			effects = append(effects, fmt.Sprintf("%s never mailed though the invitation answered 201", email))
		}
	}
	for title, status := range r.tickets {
		created, recorded := c.issues[title], c.tickets[title]
		switch {
		case created > 1 || recorded > 1:
			effects = append(effects, fmt.Sprintf("%q: %d issues in Linear, %d on the run (answered %s)", title, created, recorded, statusText(status)))
		case status == http.StatusCreated && (created != 1 || recorded != 1):
			effects = append(effects, fmt.Sprintf("%q answered 201: %d issues in Linear, %d on the run", title, created, recorded))
		}
	}
	r.mu.Unlock()
	sort.Strings(effects)

	var no500 []string
	for _, w := range []struct {
		name string
		t    *traffic
	}{{"before the fault", r.before}, {"during the fault and its recovery", r.traffic}, {"after", r.after}} {
		if n := w.t.count("500"); n > 0 {
			no500 = append(no500, fmt.Sprintf("%d answers 500 %s", n, w.name))
		}
	}
	for _, x := range []struct {
		name string
		errs []string
	}{{"statuses", statuses}, {"outcome", outcome}, {"logs", logs}, {"effects", effects}, {"no 500", no500}, {"recovery", recovery}} {
		r.checks = append(r.checks, check{name: x.name, ok: len(x.errs) == 0, detail: strings.Join(x.errs, "; ")})
	}
}

// describeEnd is a final status with its exit code or error.
func describeEnd(e *execution) string {
	s := e.Status
	if e.ExitCode != nil {
		s += fmt.Sprintf(" (exit %d)", *e.ExitCode)
	}
	if t := e.errText(); t != "" {
		s += fmt.Sprintf(" (%s)", t)
	}
	return s
}

// byStatus writes counts by status: "201 ×9, 500 ×3".
func byStatus(m map[int]int) string {
	var keys []int
	for k := range m {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s ×%d", statusText(k), m[k]))
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, ", ")
}

func statusText(s int) string {
	if s == 0 {
		return "no answer"
	}
	return strconv.Itoa(s)
}

// report prints every fault's figures and the summary table; true when a check failed.
func (c *chaos) report(took time.Duration) bool {
	failed := false
	out := &strings.Builder{}
	p := func(format string, args ...any) { fmt.Fprintf(out, format+"\n", args...) }
	p("")
	p("chaos: the real service (2 replicas behind a balancer, PostgreSQL, Redis, a remote runner) through real faults")
	if n := c.setupTraffic.count("500"); n > 0 {
		failed = true
		p("SETUP: %d answers 500 before the first fault: %s", n, strings.Join(c.setupTraffic.samples, " | "))
	}
	for i, r := range c.results {
		c.judge(r)
		p("")
		p("== %d. %s (lasted %.1f s)", i+1, r.f.title, r.faultFor.Seconds())
		p("   expected: %s", r.f.expect)
		for _, n := range r.notes {
			p("   note: %s", n)
		}
		p("   runs:")
		for _, rr := range r.allRuns() {
			p("     %s", c.describe(r, rr))
		}
		p("   requests through the balancer during the fault and until it recovered (2xx/4xx/503/500/other 5xx/conn errors/client gave up):")
		for _, class := range []string{"api", "events", "runner"} {
			t := r.traffic
			p("     %-7s %4d / %3d / %3d / %3d / %3d / %3d / %3d", class, t.count("2xx", class), t.count("4xx", class),
				t.count("503", class), t.count("500", class), t.count("5xx", class), t.count("conn error", class), t.count("client gone", class))
		}
		p("     %d sent to the other replica after a refused connection", r.traffic.failovers)
		for _, w := range []*traffic{r.before, r.traffic, r.after} {
			for _, s := range w.samples {
				p("     500: %s", s)
			}
		}
		p("     before the fault: %d answers, %d of them 500; after the recovery, while the runs ended: %d answers, %d of them 500",
			r.before.total(), r.before.count("500"), r.after.total(), r.after.count("500"))
		p("   /readyz answered 200 during the fault: %s", strings.Join(r.readyDuring, ", "))
		p("   recovery: /readyz 200 on every replica %s after the fault ended; a new run %s after %s",
			seconds(r.readyAfter), r.probe, seconds(r.passAfter))
		mailed, issues := 0, 0
		inv, tick := map[int]int{}, map[int]int{}
		for email, st := range r.invites {
			inv[st]++
			mailed += c.mails[email]
		}
		for title, st := range r.tickets {
			tick[st]++
			issues += c.issues[title]
		}
		p("   effects: %d invitations (answered %s) → %d mails; %d tickets (answered %s) → %d issues in Linear",
			len(r.invites), byStatus(inv), mailed, len(r.tickets), byStatus(tick), issues)
		for _, ch := range r.checks {
			mark := "ok"
			if !ch.ok {
				mark = "FAIL: " + ch.detail
				failed = true
			}
			p("   %-8s %s", ch.name, mark)
		}
	}
	if errs := c.tb.Errors(); len(errs) > 0 {
		p("")
		p("the fakes reported: %s", strings.Join(errs, "; "))
	}
	p("")
	p("%-58s %-8s %-8s %-8s %-8s %-8s %-9s %-7s %-7s %s", "fault", "statuses", "outcome", "logs", "effects", "no 500", "recovery", "ready", "new run", "result")
	for _, r := range c.results {
		res := "PASS"
		cells := map[string]string{}
		for _, ch := range r.checks {
			cells[ch.name] = "ok"
			if !ch.ok {
				cells[ch.name] = "FAIL"
				res = "FAIL"
			}
		}
		if n := r.before.count("500") + r.traffic.count("500") + r.after.count("500"); n > 0 {
			cells["no 500"] = fmt.Sprintf("FAIL %d", n)
		}
		p("%-58s %-8s %-8s %-8s %-8s %-8s %-9s %-7s %-7s %s", r.f.title, cells["statuses"], cells["outcome"], cells["logs"], cells["effects"], cells["no 500"],
			cells["recovery"], short(r.readyAfter), short(r.passAfter), res)
	}
	verdict := "PASS"
	if failed {
		verdict = "FAIL"
	}
	p("chaos: %s (%d faults in %.0f s; logs in %s)", verdict, len(c.results), took.Seconds(), c.work)
	fmt.Print(out.String())
	return failed
}

func short(d time.Duration) string {
	if d < 0 {
		return "never"
	}
	return fmt.Sprintf("%.1fs", d.Seconds())
}

// describe is one line about a run: how it ended, why, and what its logs hold.
func (c *chaos) describe(r *result, rr *runRec) string {
	st, errText, exit := "unknown", "", "-"
	if e := rr.final; e != nil {
		st = e.Status
		errText = e.errText()
		if e.ExitCode != nil {
			exit = strconv.Itoa(*e.ExitCode)
		}
	}
	_, container := c.ranToEnd(rr)
	complete := false
	if end, _ := c.ranToEnd(rr); end && !(r.f.leaseLost && rr.kind == "in flight") {
		complete = true
	}
	stored := analyse(rr.stored, rr.lines, complete)
	text, _ := rr.f.snapshot()
	stream := analyse(text, rr.lines, complete)
	rr.f.mu.Lock()
	reconnects, anomalies := rr.f.reconnects, len(rr.f.anomalies)
	refusals := fmt.Sprint(rr.f.refusals)
	rr.f.mu.Unlock()
	s := fmt.Sprintf("%-24s %-13s %-9s exit %-4s %-28s stored %d/%d lines %s; stream %d/%d lines %s (%d reconnects",
		rr.taskID, rr.kind, st, exit, container, stored.numbered, rr.lines, stored, stream.numbered, rr.lines, stream, reconnects)
	if refusals != "map[]" {
		s += ", refused " + refusals
	}
	if anomalies > 0 {
		s += fmt.Sprintf(", %d offset jumps", anomalies)
	}
	s += ")"
	if e := rr.final; e != nil {
		s += fmt.Sprintf("; %d tests", e.Summary.Total)
		if len(e.Notes) > 0 {
			s += fmt.Sprintf(", notes %q", e.Notes)
		}
	}
	if errText != "" {
		s += fmt.Sprintf("; error: %q", errText)
	}
	return s
}
