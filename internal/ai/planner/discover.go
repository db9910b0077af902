package planner

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

// Options narrows a discovery. ProjectID is only echoed in the result: the caller reads the
// project's cases.
type Options struct {
	ProjectID string
	Suite     string // only this suite (any case, extra spaces ignored); "" for all
	Tag       string // only cases with this tag (the same way); "" for all
}

// Discovery is the first stage's answer: the project's tests grouped by suite, the riskiest
// suite first.
type Discovery struct {
	ProjectID    string  `json:"projectId"`
	TotalScanned int     `json:"totalScanned"` // cases that passed the filters
	Groups       []Group `json:"groups"`
}

// Group is one suite of a discovery.
type Group struct {
	Suite     string `json:"suite"`
	RiskLevel Level  `json:"riskLevel"`
	Rationale string `json:"rationale"` // one sentence naming the evidence
	Tests     []Test `json:"tests"`     // the riskiest first
}

// Test is one test of a group.
type Test struct {
	ID        string `json:"id"`
	Title     string `json:"title"`
	RiskLevel Level  `json:"riskLevel"`
}

// suiteName is the name a case is grouped under: its suite on one line, or NoSuite.
func suiteName(c Case) string {
	if s := oneLine(c.Suite); s != "" {
		return s
	}
	return NoSuite
}

// Discover groups cases by suite and rates every test and every suite, with the project's
// failure history (see the package comment). Groups are ordered by risk, the highest first,
// then by suite name; the tests of a group by risk (level, then score), then by title and
// ID. The answer depends only on its input, not on the order of cases.
func Discover(cases []Case, history History, opts Options) Discovery {
	suiteFailures := normalized(history.Suites)
	testFailures := normalized(history.Tests)
	wantSuite, wantTag := key(opts.Suite), key(opts.Tag)

	bySuite := map[string][]rated{}
	total := 0
	for _, c := range cases {
		if wantSuite != "" && key(suiteName(c)) != wantSuite {
			continue
		}
		if wantTag != "" && !slices.ContainsFunc(c.Tags, func(t string) bool { return key(t) == wantTag }) {
			continue
		}
		total++
		s := suiteName(c)
		k := key(c.Title)
		bySuite[s] = append(bySuite[s], rated{c, assess(c, testFailures[k]), k})
	}

	d := Discovery{ProjectID: opts.ProjectID, TotalScanned: total, Groups: []Group{}}
	for suite, tests := range bySuite {
		sortRated(tests)
		g := Group{Suite: suite, Tests: make([]Test, len(tests))}
		for i, t := range tests {
			g.Tests[i] = Test{ID: t.c.ID, Title: t.c.Title, RiskLevel: t.r.Level}
		}
		sf := 0
		if suite != NoSuite {
			sf = suiteFailures[key(suite)]
		}
		// The riskiest test comes first.
		g.RiskLevel = levelOf(tests[0].r.Score + min(sf*suiteFailure, suiteFailureCap))
		g.Rationale = rationale(tests, sf, history)
		d.Groups = append(d.Groups, g)
	}
	slices.SortFunc(d.Groups, func(a, b Group) int {
		return cmp.Or(a.RiskLevel.rank()-b.RiskLevel.rank(), strings.Compare(key(a.Suite), key(b.Suite)), strings.Compare(a.Suite, b.Suite))
	})
	return d
}

// rated is a case, its risk and its title as names are compared.
type rated struct {
	c     Case
	r     Risk
	title string
}

// sortRated orders tests by risk (the highest score first), then title and ID.
func sortRated(ts []rated) {
	slices.SortFunc(ts, func(a, b rated) int {
		return cmp.Or(a.r.Level.rank()-b.r.Level.rank(), b.r.Score-a.r.Score,
			strings.Compare(a.title, b.title), strings.Compare(a.c.Title, b.c.Title), strings.Compare(a.c.ID, b.c.ID))
	})
}

// normalized keys counts by key, adding the counts of names that differ only in case or
// spaces; counts below one are left out.
func normalized(m map[string]int) map[string]int {
	out := make(map[string]int, len(m))
	for name, n := range m {
		if n > 0 {
			out[key(name)] += n
		}
	}
	return out
}

// maxTerms is how many risky words a rationale names.
const maxTerms = 3

// rationale is one sentence on why a suite has its level: how many of its tests touch risky
// areas and by which words, how many are marked critical or high, and how many failed.
func rationale(tests []rated, suiteFailures int, h History) string {
	n := len(tests)
	var touching, critical, high, failing, failures int
	termTests := map[string]int{}
	for _, t := range tests {
		if len(t.r.Terms) > 0 {
			touching++
		}
		// A word in a title or a tag says more than one in a step.
		for _, w := range t.r.Terms {
			termTests[w]++
		}
		for _, w := range t.r.headTerms {
			termTests[w]++
		}
		switch t.r.Priority {
		case "critical":
			critical++
		case "high":
			high++
		}
		if t.r.Failures > 0 {
			failing++
			failures += t.r.Failures
		}
	}
	window := "recently"
	if h.Runs > 0 {
		window = "in the last " + plural(h.Runs, "run", "runs")
	}
	one := n == 1

	var parts []string
	if touching > 0 {
		terms := make([]string, 0, len(termTests))
		for w := range termTests {
			terms = append(terms, w)
		}
		slices.SortFunc(terms, func(a, b string) int { return cmp.Or(termTests[b]-termTests[a], strings.Compare(a, b)) })
		if len(terms) > maxTerms {
			terms = terms[:maxTerms]
		}
		switch {
		case one:
			parts = append(parts, "its only test touches "+andList(terms))
		case touching == 2 && n == 2:
			parts = append(parts, "both tests touch "+andList(terms))
		case touching == n:
			parts = append(parts, "all "+itoa(n)+" tests touch "+andList(terms))
		case touching == 1:
			parts = append(parts, "1 of "+itoa(n)+" tests touches "+andList(terms))
		default:
			parts = append(parts, itoa(touching)+" of "+itoa(n)+" tests touch "+andList(terms))
		}
	}
	switch {
	case one && critical > 0:
		parts = append(parts, "it is marked critical")
	case one && high > 0:
		parts = append(parts, "it is marked high priority")
	case critical > 0 && high > 0:
		parts = append(parts, itoa(critical)+" "+isAre(critical)+" marked critical and "+itoa(high)+" high")
	case critical > 0:
		parts = append(parts, itoa(critical)+" "+isAre(critical)+" marked critical")
	case high > 0:
		parts = append(parts, itoa(high)+" "+isAre(high)+" marked high priority")
	}
	var failed string
	switch {
	case one && failing > 0:
		failed = "it failed " + times(failures)
	case failing > 0:
		failed = itoa(failing) + " failed"
	}
	switch {
	case failed != "" && suiteFailures > 0:
		parts = append(parts, failed+" and the suite had "+plural(suiteFailures, "failure", "failures")+" "+window)
	case failed != "":
		parts = append(parts, failed+" "+window)
	case suiteFailures > 0:
		parts = append(parts, "the suite had "+plural(suiteFailures, "failure", "failures")+" "+window)
	}
	if len(parts) > 0 {
		return capitalize(strings.Join(parts, "; ")) + "."
	}

	known := h.Runs > 0 || len(h.Tests) > 0 || len(h.Suites) > 0
	switch {
	case one && known:
		return "Its only test touches no payments, security or data, is not marked critical or high and did not fail " + window + "."
	case one:
		return "Its only test touches no payments, security or data and is not marked critical or high."
	case known:
		return "No test touches payments, security or data, none is marked critical or high and none failed " + window + "."
	}
	return "No test touches payments, security or data and none is marked critical or high."
}

func times(n int) string {
	if n == 1 {
		return "once"
	}
	return itoa(n) + " times"
}

func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

func itoa(n int) string { return strconv.Itoa(n) }
