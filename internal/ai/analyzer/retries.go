package analyzer

import (
	"regexp"
	"strings"

	"verdict/internal/domain"
)

// Runners that retry a failed test say so, each in its own words; a test that failed and then
// passed within one run is flaky, whatever its message says. What they say, read here:
//   - two results of the same test in the run's reports, one failed and one passed (gotestsum
//     --rerun-fails, TestNG's retry analyzer, retry extensions that report every attempt);
//   - the runner's output where its report keeps only the final outcome: pytest-rerunfailures'
//     "RERUN", Cypress's "(Attempt 1 of 3)", gotestsum's "=== RERUN", Surefire's "Flakes:"
//     section, Playwright's "(retry #1)" and its list of flaky tests, Vitest's "(retry x1)".
//
// Surefire's flakyFailure and Playwright's flaky status reach the analyser as the status
// "flaky" already (the report parsers read them).

// retryLinePatterns find a retried test's identity in one line of a runner's output; the first
// group is the test (a pytest node id, a title, a Go test name, a JVM class.method).
var retryLinePatterns = []*regexp.Regexp{
	regexp.MustCompile(`^(\S+::\S+)\s+RERUN\b`),                   // pytest-rerunfailures
	regexp.MustCompile(`\(Attempt \d+ of \d+\)\s+(.+?)\s*$`),      // Cypress
	regexp.MustCompile(`^=== RERUN\s+(\S+)`),                      // gotestsum
	regexp.MustCompile(`›\s*([^›]+?)\s*\(retry #\d+\)`),           // Playwright list reporter
	regexp.MustCompile(`[✓✔]\s+(.+?)\s+\d*m?s?\s*\(retry x\d+\)`), // Vitest
	regexp.MustCompile(`[✓✔]\s+(.+?)\s+\(retry x\d+\)`),           // Vitest, no duration
}

// flakesHeader starts Surefire's list of tests that failed and then passed on a rerun, and
// Playwright's list of flaky tests.
var (
	surefireFlakes  = regexp.MustCompile(`^\[WARNING\] Flakes:\s*$`)
	surefireFlake   = regexp.MustCompile(`^\[WARNING\] ([\w$.]+)\.(\w+)(?::\d+)?\s*$`)
	playwrightFlaky = regexp.MustCompile(`^\s*\d+ flaky\s*$`)
	playwrightTest  = regexp.MustCompile(`^\s*\[[^\]]+\] › (?:[^›]+ › )?(.+?)\s*$`)
)

// maxRetryLines bounds the lines of the log's tail read for retries.
const maxRetryLines = 4000

// retriedInLog reads the tail of a run's log for tests its runner retried: each line that names
// one, with the name as the runner printed it.
func retriedInLog(log string) []retryMark {
	if len(log) > MaxLogBytes {
		log = log[len(log)-MaxLogBytes:]
	}
	if !strings.Contains(log, "RERUN") && !strings.Contains(log, "Attempt ") && !strings.Contains(log, "retry") && !strings.Contains(log, "Flakes:") && !strings.Contains(log, "flaky") {
		return nil
	}
	lines := strings.Split(log, "\n")
	if len(lines) > maxRetryLines {
		lines = lines[len(lines)-maxRetryLines:]
	}
	var marks []retryMark
	section := ""
	for _, raw := range lines {
		l := strings.TrimRight(raw, "\r")
		t := strings.TrimSpace(l)
		switch {
		case surefireFlakes.MatchString(t):
			section = "surefire"
			continue
		case playwrightFlaky.MatchString(t):
			section = "playwright"
			continue
		}
		switch section {
		case "surefire":
			if m := surefireFlake.FindStringSubmatch(t); m != nil {
				marks = append(marks, retryMark{suite: m[1], name: m[2], line: t})
				continue
			}
			if !strings.HasPrefix(t, "[ERROR]   Run") && !strings.HasPrefix(t, "[INFO]   Run") && !strings.HasPrefix(t, "[WARNING]   Run") {
				section = ""
			}
		case "playwright":
			if m := playwrightTest.FindStringSubmatch(l); m != nil {
				marks = append(marks, retryMark{name: m[1], line: t})
				continue
			}
			section = ""
		}
		for _, p := range retryLinePatterns {
			if m := p.FindStringSubmatch(t); m != nil {
				id := strings.TrimSpace(m[1])
				mark := retryMark{name: id, line: t}
				if suite, name, ok := strings.Cut(id, "::"); ok {
					if i := strings.LastIndex(name, "::"); i >= 0 {
						name = name[i+2:]
					}
					mark.suite, mark.name = suite, name
				}
				marks = append(marks, mark)
				break
			}
		}
	}
	return marks
}

// retryMark is a test a runner's output shows retried.
type retryMark struct {
	suite, name string
	line        string
}

// sameSuite reports whether a mark's suite (if it names one) is the test's: a pytest node id's
// file and a JUnit report's class are compared as dotted paths.
func (m retryMark) sameSuite(t *Test) bool {
	if m.suite == "" || t.Suite == "" {
		return true
	}
	a, b := suitePath(m.suite), suitePath(t.Suite)
	return strings.Contains(a, b) || strings.Contains(b, a)
}

// suiteSeparators turn a suite's path into a dotted one.
var suiteSeparators = strings.NewReplacer("/", ".", "\\", ".", "::", ".")

// suitePath is a suite as a dotted path: "tests/test_api.py" gives "tests.test_api".
func suitePath(s string) string {
	return strings.TrimPrefix(strings.TrimSuffix(suiteSeparators.Replace(s), ".py"), ".")
}

// maxNameTails bounds the tails of a test's name looked up among the retried titles.
const maxNameTails = 32

// nameTails are the names a runner may print for a test: its whole name, and each tail after a
// separator ("cart › adds an item" is printed "adds an item" by Cypress).
func nameTails(name string) []string {
	tails := []string{name}
	for i := 0; i < len(name) && len(tails) < maxNameTails; i++ {
		switch {
		case name[i] == ' ', name[i] == '.':
			tails = append(tails, name[i+1:])
		case strings.HasPrefix(name[i:], "› "), strings.HasPrefix(name[i:], "> "), strings.HasPrefix(name[i:], "::"):
			tails = append(tails, strings.TrimSpace(name[i+2:]))
		}
	}
	return tails
}

// markRetries returns the run's tests with those that failed and then passed within the run
// marked (rerun: the evidence), or the tests themselves when there are none. The caller's slice
// is never changed.
func markRetries(in *Input) []Test {
	tests := in.Tests
	// lastPassed is where each test last passed in the reports: a rerun is reported after the
	// attempt it repeats, so only a pass after a failure makes the failure a retried one (a
	// data-driven test's iterations share a name, and one failing before another passes is not
	// a retry).
	lastPassed, failedKeys := map[string]int{}, map[string]bool{}
	for i := range tests {
		switch tests[i].Status {
		case domain.TestPassed:
			lastPassed[TestKey(tests[i].Suite, tests[i].Name)] = i
		case domain.TestFailed:
			failedKeys[TestKey(tests[i].Suite, tests[i].Name)] = true
		}
	}
	byName := map[string][]retryMark{}
	for _, m := range retriedInLog(in.Log) {
		if m.name != "" {
			byName[m.name] = append(byName[m.name], m)
		}
	}
	var out []Test
	mark := func(i int, why string) {
		if out == nil {
			out = make([]Test, len(tests))
			copy(out, tests)
		}
		out[i].rerun = why
	}
	for i := range tests {
		t := &tests[i]
		switch {
		case t.Status == domain.TestFailed && passedAfter(lastPassed, TestKey(t.Suite, t.Name), i):
			mark(i, "the same test also passed in this run (a rerun after the failure)")
		case len(byName) > 0 && t.Status == domain.TestPassed && t.Retries == 0 && !failedKeys[TestKey(t.Suite, t.Name)]:
		tails:
			for _, tail := range nameTails(t.Name) {
				for _, m := range byName[tail] {
					if m.sameSuite(t) {
						mark(i, "the runner's output shows it retried before it passed: "+boundRunes(m.line, maxMatchedBytes))
						break tails
					}
				}
			}
		}
	}
	if out == nil {
		return tests
	}
	return out
}

// passedAfter reports whether the test of key passed in a result reported after index i.
func passedAfter(lastPassed map[string]int, key string, i int) bool {
	j, ok := lastPassed[key]
	return ok && j > i
}
