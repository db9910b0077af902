package analyzer

import (
	"fmt"
	"slices"
	"strings"

	"verdict/internal/ai"
)

// group is the failures of a run explained the same way (same rule and host, or the same
// person's triage).
type group struct {
	explanation *rule
	target      string
	isBase      bool
	count       int
	weight      float64
	first       *analysed
}

// Phrasing of the verdicts that are not rules.
var (
	retryPassRule = &rule{
		id: "passed-on-retry", category: ai.Flaky,
		one: "a test that passed on retry", many: "tests that passed on retry",
		gist:  "they fail and pass without a change",
		cause: "Tests failed and then passed on retry without a change: they are flaky (timing, state left by other tests, or test order).",
		fix:   flakyFix,
	}
	alternatingRule = &rule{
		id: "alternating-history", category: ai.Flaky,
		one: "a test whose recent runs alternate between pass and fail", many: "tests whose recent runs alternate between pass and fail",
		gist:  "they fail and pass without a change",
		cause: "The failing tests alternate between passing and failing across recent runs: they are flaky (timing, state left by other tests, or test order).",
		fix:   flakyFix,
	}
)

const flakyFix = "Make the test deterministic: wait for conditions instead of fixed times, give it its own data, and quarantine it until fixed."

// categoryFixes are the fixes of a triaged category, when no rule of that category matched.
var categoryFixes = map[ai.Category]string{
	ai.ProductBug:  "Fix the application: the failing assertion shows the behaviour that is wrong.",
	ai.TestBug:     "Fix the test code at the frame the failure shows.",
	ai.Environment: "Fix the environment the run depends on (the application's deployment, services, resources).",
	ai.Flaky:       flakyFix,
}

// explanation returns how the verdict on a failure is phrased and grouped.
func (a *analysed) explanation() *rule {
	switch {
	case a.reason.Rule == retryPassRule.id:
		return retryPassRule
	case a.reason.Rule == alternatingRule.id:
		return alternatingRule
	case a.triage == nil && a.category == ai.Unknown && a.match.rule.category != ai.Unknown:
		return untrusted(a.match.rule)
	case a.triage != nil:
		t := a.triage
		r := &rule{
			id: a.reason.Rule, category: t.Category,
			one:  fmt.Sprintf("a failure %s triaged as %s%s", triageWho(t), categoryName(t.Category), triageWhere(t)),
			many: fmt.Sprintf("failures %s triaged as %s%s", triageWho(t), categoryName(t.Category), triageWhere(t)),
			gist: "a person decided it before",
		}
		r.cause = fmt.Sprintf("%s triaged this failure as %s%s.", triageWho(t), categoryName(t.Category), triageWhere(t))
		r.fix = categoryFixes[t.Category]
		if m := a.match.rule; m.category == t.Category {
			r.cause += " " + m.cause
			r.fix = m.fix
		}
		return r
	}
	return a.match.rule
}

func groupFailures(failures []*analysed) []*group {
	byKey := map[string]*group{}
	var groups []*group
	for _, a := range failures {
		e := a.explanation()
		key := string(a.category) + "\x00" + e.id + "\x00" + e.one
		target, isBase := "", false
		if a.triage == nil && a.match.rule == e && e.aboutTarget {
			target, isBase = a.match.target, a.match.isBase
			key += "\x00" + target
		}
		g := byKey[key]
		if g == nil {
			g = &group{explanation: e, target: target, isBase: isBase, first: a}
			byKey[key] = g
			groups = append(groups, g)
		}
		g.count++
		g.weight += a.confidence
	}
	return groups
}

// categoryOrder breaks ties between categories of equal weight: the one that explains other
// failures (a broken environment) first.
var categoryOrder = []ai.Category{ai.Environment, ai.ProductBug, ai.TestBug, ai.Flaky, ai.Unknown}

// unknownWeight scales unrecognised failures: they should not outvote a few recognised ones.
const unknownWeight = 0.5

// conclude decides the run: a run-level cause (its own error, an OOM kill, no results) decides
// alone; otherwise the category with the most confident failures does.
func conclude(in *Input, failures []*analysed, stored []Failure, rc *runContext, logExcerpt string) (ai.Finding, []Reason) {
	groups := groupFailures(failures)
	failed := 0
	for _, a := range failures {
		if !isRetryPass(a.test) {
			failed++
		}
	}
	if f, reasons, ok := runLevel(in, failed, groups, rc, logExcerpt); ok {
		return f, reasons
	}
	if len(failures) == 0 {
		return ai.Finding{Category: ai.Unknown, Summary: "Nothing failed in this run.",
			RootCause: "No test failed and the run ended without an error.", SuggestedFix: "Nothing to fix."}, nil
	}
	// Tests passed on retry count only when nothing failed outright: they did not fail the run.
	counted := func(g *group) bool { return failed == 0 || g.explanation != retryPassRule }
	v := weigh(groups, counted)
	v.dominant = v.mostSevere()
	slices.SortStableFunc(groups, func(a, b *group) int {
		for _, first := range []func(*group) bool{counted, func(g *group) bool { return g.explanation.category == v.dominant }} {
			if first(a) != first(b) {
				if first(a) {
					return -1
				}
				return 1
			}
		}
		return b.count - a.count
	})
	top := groups[0]

	var summary strings.Builder
	summary.WriteString(shareSentence(top, v.total))
	var others []string
	for _, g := range groups[1:] {
		if !counted(g) {
			continue
		}
		if len(others) == 3 {
			others = append(others, "and more")
			break
		}
		others = append(others, fmt.Sprintf("%s (%s)", countPhrase(g.count, g.explanation), categoryName(g.explanation.category)))
	}
	if len(others) > 0 {
		summary.WriteString(" Also: " + strings.Join(others, ", ") + ".")
	}
	if n := len(failures) - failed; failed > 0 && n > 0 {
		fmt.Fprintf(&summary, " %s passed only on retry (flaky).", plural(n, "more test", "more tests"))
	}
	cause := fill(top.explanation.cause, top)
	if h := historySentence(top.first, stored); h != "" {
		cause += " " + h
	}
	return ai.Finding{
		Category:     v.dominant,
		Summary:      boundRunes(summary.String(), maxSummaryBytes),
		RootCause:    boundRunes(cause, maxSummaryBytes),
		SuggestedFix: top.explanation.fix,
		Confidence:   v.confidence(),
	}, groupReasons(groups, counted)
}

// severity orders categories for a run's label: a product bug is what a run most needs to
// say, then a broken environment, a test's own error, a flaky test; unknown last.
var severity = []ai.Category{ai.ProductBug, ai.Environment, ai.TestBug, ai.Flaky, ai.Unknown}

// mostSevere is the run's category: the most severe category of its counted failures, except
// that an environment broken for most of them explains the rest (a refused connection fails
// the assertions after it).
func (v vote) mostSevere() ai.Category {
	if 2*v.counts[ai.Environment] > v.total {
		return ai.Environment
	}
	for _, c := range severity {
		if v.counts[c] > 0 {
			return c
		}
	}
	return ai.Unknown
}

// otherCategories lists the categories of a run's failures other than its own, most severe
// first, with how many failures each has.
func otherCategories(stored []Failure, run ai.Category) []CategoryCount {
	counts := map[ai.Category]int{}
	for _, f := range stored {
		counts[f.Category]++
	}
	var out []CategoryCount
	for _, c := range severity {
		if c != run && counts[c] > 0 {
			out = append(out, CategoryCount{Category: c, Failures: counts[c]})
		}
	}
	return out
}

// vote is the weight of each category across a run's counted failures.
type vote struct {
	weights     map[ai.Category]float64
	counts      map[ai.Category]int
	total       int
	totalWeight float64
	dominant    ai.Category
}

// weigh sums the groups' confidences per category and finds the dominant one.
func weigh(groups []*group, counted func(*group) bool) vote {
	v := vote{weights: map[ai.Category]float64{}, counts: map[ai.Category]int{}}
	for _, g := range groups {
		if !counted(g) {
			continue
		}
		w := g.weight
		if g.explanation.category == ai.Unknown {
			w *= unknownWeight
		}
		v.weights[g.explanation.category] += w
		v.counts[g.explanation.category] += g.count
		v.total += g.count
		v.totalWeight += w
	}
	v.dominant = categoryOrder[0]
	for _, c := range categoryOrder[1:] {
		if v.weights[c] > v.weights[v.dominant] || v.weights[c] == v.weights[v.dominant] && v.counts[c] > v.counts[v.dominant] {
			v.dominant = c
		}
	}
	return v
}

// confidence is the dominant category's mean confidence scaled by its share of the run's
// weight: the whole mean when every failure agrees, less the more of them disagree.
func (v vote) confidence() float64 {
	mean := v.weights[v.dominant] / float64(v.counts[v.dominant])
	if v.dominant == ai.Unknown {
		mean /= unknownWeight
	}
	share := v.weights[v.dominant] / v.totalWeight
	return round2(clamp01(mean * (0.5 + 0.5*share)))
}

// maxSummaryBytes bounds the finding's sentences.
const maxSummaryBytes = 1000

// shareSentence says how many failures a group explains: "3 of 5 failures are connection
// refusals (http://app:3000, the run's BASE_URL): the application under test was not reachable."
func shareSentence(g *group, total int) string {
	e := g.explanation
	var s string
	switch {
	case total == 1:
		s = "The failure is " + e.one
	case g.count == total && total == 2:
		s = "Both failures are " + e.many
	case g.count == total:
		s = fmt.Sprintf("All %d failures are %s", total, e.many)
	case g.count == 1:
		s = fmt.Sprintf("1 of %d failures is %s", total, e.one)
	default:
		s = fmt.Sprintf("%d of %d failures are %s", g.count, total, e.many)
	}
	if g.target != "" {
		s += " at " + targetPhrase(match{target: g.target, isBase: g.isBase})
	}
	return s + ": " + e.gist + "."
}

func countPhrase(n int, e *rule) string {
	if n == 1 {
		return "1 is " + e.one
	}
	return fmt.Sprintf("%d are %s", n, e.many)
}

// fill puts a group's host into a cause.
func fill(cause string, g *group) string {
	target := "the application under test"
	if g.target != "" {
		target = targetPhrase(match{target: g.target, isBase: g.isBase})
	}
	return strings.ReplaceAll(cause, "{target}", target)
}

// historySentence tells how often a failure was seen before, from its stored failure.
func historySentence(a *analysed, stored []Failure) string {
	for _, f := range stored {
		if f.Signature != a.signature {
			continue
		}
		inRun := 0
		for _, g := range stored {
			if g.Signature == f.Signature {
				inRun++
			}
		}
		if f.Occurrences > inRun {
			return fmt.Sprintf("The same failure (signature %s) has occurred %s in this organization's runs, first in %s.",
				f.Signature, plural(f.Occurrences, "time", "times"), f.FirstSeenTaskID)
		}
		return fmt.Sprintf("This failure (signature %s) is new: it was not seen in earlier runs.", f.Signature)
	}
	return ""
}

// maxReasonGroups bounds the run-level reasons.
const maxReasonGroups = 10

func groupReasons(groups []*group, counted func(*group) bool) []Reason {
	var out []Reason
	for _, g := range groups {
		if len(out) == maxReasonGroups {
			out = append(out, Reason{Rule: "more", Detail: fmt.Sprintf("%d more groups of failures", len(groups)-maxReasonGroups)})
			break
		}
		phrase := g.explanation.many
		if g.count == 1 {
			phrase = g.explanation.one
		}
		detail := fmt.Sprintf("%s: %s (%s)", plural(g.count, "failure", "failures"), phrase, categoryName(g.explanation.category))
		if g.target != "" {
			detail += " at " + targetPhrase(match{target: g.target, isBase: g.isBase})
		}
		if !counted(g) {
			detail += "; not counted in the run's category: passed on retry"
		}
		out = append(out, Reason{Rule: g.explanation.id, Matched: g.first.reason.Matched, Detail: detail})
	}
	return out
}

func clamp01(f float64) float64 {
	return max(0, min(1, f))
}

// untrusted is how a failure is phrased when the rule that matched it is too often wrong on
// the corpus of real failures to decide: unknown, with what the rule saw.
func untrusted(m *rule) *rule {
	return &rule{
		id: m.id, category: ai.Unknown,
		one: m.one + " (a pattern too often wrong to decide)", many: m.many + " (a pattern too often wrong to decide)",
		gist:  "what it shows does not decide a category reliably",
		cause: "The failure matches a pattern (" + m.id + ") that is wrong too often on real failures to decide its category: " + m.cause,
		fix:   "Read the failing test and the value it got, and triage the failure so later runs learn its category. " + m.fix,
	}
}
