package report

import (
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"verdict/internal/domain"
)

// want describes an expected result; the error is checked by prefix, since real messages
// go on with stack traces.
type want struct {
	suite, name string
	status      domain.TestStatus
	durationMs  int64
	retries     int
	errPrefix   string
}

func checkResults(t *testing.T, got []domain.TestResult, wants []want) {
	t.Helper()
	if len(got) != len(wants) {
		for _, g := range got {
			t.Logf("got %q %q %s", g.Suite, g.Name, g.Status)
		}
		t.Fatalf("got %d results, want %d", len(got), len(wants))
	}
	for i, w := range wants {
		g := got[i]
		if g.Suite != w.suite || g.Name != w.name || g.Status != w.status || g.DurationMs != w.durationMs || g.Retries != w.retries {
			t.Errorf("result %d = {%q %q %s %dms retries %d}, want {%q %q %s %dms retries %d}", i,
				g.Suite, g.Name, g.Status, g.DurationMs, g.Retries, w.suite, w.name, w.status, w.durationMs, w.retries)
		}
		if !strings.HasPrefix(g.Error, w.errPrefix) || (w.errPrefix == "") != (g.Error == "") {
			t.Errorf("result %d (%s) error = %q, want prefix %q", i, g.Name, g.Error, w.errPrefix)
		}
	}
}

// checkInvariants holds for every parse of any input.
func checkInvariants(t *testing.T, got []domain.TestResult) {
	t.Helper()
	if len(got) > maxTests {
		t.Fatalf("%d results, above the bound", len(got))
	}
	for _, r := range got {
		switch r.Status {
		case domain.TestPassed, domain.TestFailed, domain.TestSkipped, domain.TestFlaky:
		default:
			t.Fatalf("status %q", r.Status)
		}
		if len(r.Name) > maxTextBytes+len("…") || len(r.Suite) > maxTextBytes+len("…") || len(r.Error) > maxErrorBytes+len("…") {
			t.Fatalf("unbounded text: name %d suite %d error %d bytes", len(r.Name), len(r.Suite), len(r.Error))
		}
		if !utf8.ValidString(r.Name) || !utf8.ValidString(r.Suite) || !utf8.ValidString(r.Error) {
			t.Fatalf("invalid UTF-8 in %q", r.Name)
		}
		if strings.ContainsRune(r.Name+r.Suite+r.Error, 0) {
			t.Fatalf("NUL in %q", r.Name)
		}
		if r.DurationMs < 0 || r.DurationMs > maxDurationMs || r.Retries < 0 {
			t.Fatalf("duration %d retries %d", r.DurationMs, r.Retries)
		}
		if r.Status == domain.TestPassed && r.Error != "" { // a skipped test may keep its reason
			t.Fatalf("%s test with an error %q", r.Status, r.Error)
		}
	}
}

func TestSettle(t *testing.T) {
	pass := attempt{status: domain.TestPassed, durationMs: 5}
	fail := func(msg string) attempt { return attempt{status: domain.TestFailed, durationMs: 7, err: msg} }
	skip := attempt{status: domain.TestSkipped}
	cases := []struct {
		name     string
		attempts []attempt
		want     want
	}{
		{"no attempt is a skip", nil, want{status: domain.TestSkipped}},
		{"one pass", []attempt{pass}, want{status: domain.TestPassed, durationMs: 5}},
		{"one failure", []attempt{fail("boom")}, want{status: domain.TestFailed, durationMs: 7, errPrefix: "boom"}},
		{"fail then pass is flaky", []attempt{fail("first"), fail("second"), pass}, want{status: domain.TestFlaky, durationMs: 5, retries: 2, errPrefix: "second"}},
		{"pass then fail fails", []attempt{pass, fail("late")}, want{status: domain.TestFailed, durationMs: 7, retries: 1, errPrefix: "late"}},
		{"skip then pass is a pass", []attempt{skip, pass}, want{status: domain.TestPassed, durationMs: 5, retries: 1}},
		{"fail then skip is a skip", []attempt{fail("x"), skip}, want{status: domain.TestSkipped, retries: 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checkResults(t, []domain.TestResult{settle("", "", c.attempts)}, []want{c.want})
		})
	}
}

func TestErrorText(t *testing.T) {
	if got := errorText("  \x1b[31mExpected\x1b[39m: 1\x1b(B \x1b]8;;file:///app/a.ts\x07a.ts\x1b]8;;\x1b\\ \n"); got != "Expected: 1 a.ts" {
		t.Errorf("colour codes: %q", got)
	}
	long := strings.Repeat("é", maxErrorBytes) // two bytes each: the cut must not split one
	got := errorText(long)
	if !utf8.ValidString(got) || len(got) > maxErrorBytes+len("…") || !strings.HasSuffix(got, "…") {
		t.Errorf("bounded text: %d bytes, valid %v", len(got), utf8.ValidString(got))
	}
	if got := boundText("a\xffb\x00c", 10); got != "a\uFFFDbc" {
		t.Errorf("invalid UTF-8 and NUL: %q", got)
	}
}

func TestDurations(t *testing.T) {
	for in, want := range map[string]int64{
		"0.125": 125, "1,204.5": 1_204_500, " 3 ": 3000, "": 0, "abc": 0, "-1": 0,
		"NaN": 0, "Inf": 0, "1e300": maxDurationMs, "0.0004": 0,
	} {
		if got := secondsToMillis(in); got != want {
			t.Errorf("secondsToMillis(%q) = %d, want %d", in, got, want)
		}
	}
	if millis(math.Inf(1)) != 0 || millis(math.NaN()) != 0 || millis(1e18) != maxDurationMs {
		t.Error("millis of non-finite values")
	}
}
