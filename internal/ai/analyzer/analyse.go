package analyzer

import (
	"fmt"
	"strings"

	"verdict/internal/ai"
	"verdict/internal/domain"
)

// What the caller stores as the analysis's provider and model.
const (
	Provider = "builtin"
	Model    = "builtin"
)

// MaxFailures bounds the failures one analysis looks at (failed tests first, then tests passed
// on retry); the rest are counted in Result.OmittedFailures.
const MaxFailures = 500

// Input is a finished run as the analyser sees it.
type Input struct {
	TaskID   string `json:"taskId"`
	BaseURL  string `json:"baseUrl,omitempty"`
	ExitCode *int   `json:"exitCode,omitempty"` // nil: the container never exited (or never ran)
	RunError string `json:"runError,omitempty"` // the run's own error (its timeout, a lost runner)
	Tests    []Test `json:"tests"`
	// Log is the run's log, already masked. Only its last MaxLogBytes are read.
	Log string `json:"-"`
}

// Test is one parsed test. Stack is set when a report keeps the stack apart from the error;
// otherwise the error text is split with SplitError.
type Test struct {
	domain.TestResult
	Stack string `json:"stack,omitempty"`
	// rerun, set by the analyser, says why a failed or passed result is a test that failed and
	// then passed within the run.
	rerun string
}

// FromExecution makes the input of a finished execution and its log.
func FromExecution(e *domain.Execution, log string) Input {
	in := Input{TaskID: e.TaskID, BaseURL: e.BaseURL, ExitCode: e.ExitCode, RunError: e.Error, Log: log}
	in.Tests = make([]Test, len(e.Tests))
	for i, t := range e.Tests {
		in.Tests[i] = Test{TestResult: t}
	}
	return in
}

// Result is the analysis of a run: the finding, each failure with its signature, history and
// category, and the evidence behind the run's category.
type Result struct {
	ai.Finding
	Failures        []Failure `json:"failures"`
	OmittedFailures int       `json:"omittedFailures,omitempty"` // failures past MaxFailures
	Reasons         []Reason  `json:"reasons"`                   // why the run got its category
	// OtherCategories are the categories of the run's other failures, most severe first: a
	// run is labelled by its most severe category, and a mixed run lists the rest here.
	OtherCategories []CategoryCount `json:"otherCategories,omitempty"`
	// Evidence is the bounded, structured input for a model provider; it is not part of the
	// stored analysis.
	Evidence Evidence `json:"-"`
}

// Failure is one failed test, or one that passed only on retry.
type Failure struct {
	Test            string      `json:"test"`
	Suite           string      `json:"suite,omitempty"`
	Status          string      `json:"status"`
	Signature       string      `json:"signature"`
	Occurrences     int         `json:"occurrences"`     // in the organization's runs, this one included
	FirstSeenTaskID string      `json:"firstSeenTaskId"` // this run's when it is new
	Category        ai.Category `json:"category"`
	Confidence      float64     `json:"confidence"`
	Reason          Reason      `json:"reason"`
	// Normalized is the text the signature is made of, for recording a triage of this failure.
	Normalized string `json:"-"`
	// proposed is the category the deciding rule gives, before a rule too often wrong is
	// turned into unknown: what the benchmark measures rules by.
	proposed ai.Category
}

// CategoryCount is how many of a run's failures fell in a category.
type CategoryCount struct {
	Category ai.Category `json:"category"`
	Failures int         `json:"failures"`
}

// Reason is a piece of evidence: which rule decided, the text it matched, and a sentence.
type Reason struct {
	Rule    string `json:"rule"`
	Matched string `json:"matched,omitempty"`
	Detail  string `json:"detail"`
}

// Signatures returns the distinct signatures of the run's failures, for the caller to look up
// in History.Signatures before calling Analyse.
func Signatures(in Input) []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range selectFailures(markRetries(&in)) {
		msg, stack := t.messageAndStack()
		if s := signatureOf(normalizeTest(t, msg, stack)); !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// TestKeys returns the TestKey of each of the run's failures, for the caller to look up in
// History.Tests before calling Analyse.
func TestKeys(in Input) []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range selectFailures(markRetries(&in)) {
		if k := TestKey(t.Suite, t.Name); !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

func (t *Test) messageAndStack() (string, string) {
	if t.Stack != "" {
		return t.Error, t.Stack
	}
	return SplitError(clip(t.Error, MaxMessageBytes+MaxStackBytes))
}

// normalizeTest is the signature text of a test's failure; a failure without any message is
// told apart by its test's name, or all of them would share one signature.
func normalizeTest(t *Test, message, stack string) string {
	if n := Normalize(message, stack); n != "" {
		return n
	}
	return Normalize("no error message: "+TestKey(t.Suite, t.Name), "")
}

// isRetryPass reports whether a test passed only after failing.
func isRetryPass(t *Test) bool {
	return t.rerun != "" || t.Status == domain.TestFlaky || t.Status == domain.TestPassed && t.Retries > 0
}

// selectFailures returns the tests to analyse: failed ones first, then those passed on retry,
// at most MaxFailures.
func selectFailures(tests []Test) []*Test {
	var out []*Test
	for _, retried := range []bool{false, true} {
		for i := range tests {
			t := &tests[i]
			if len(out) == MaxFailures {
				return out
			}
			if retried && isRetryPass(t) || !retried && t.Status == domain.TestFailed && t.rerun == "" {
				out = append(out, t)
			}
		}
	}
	return out
}

// countFailures counts the tests selectFailures would take without a bound.
func countFailures(tests []Test) int {
	n := 0
	for i := range tests {
		if tests[i].Status == domain.TestFailed && tests[i].rerun == "" || isRetryPass(&tests[i]) {
			n++
		}
	}
	return n
}

// analysed is one failure under analysis.
type analysed struct {
	test       *Test
	message    string
	stack      string
	normalized string
	signature  string
	match      match       // the rules' reading, kept even when a triage or history decides
	proposed   ai.Category // the deciding rule's category, before an untrusted one is unknown
	triage     *Triage     // the triage that decided, if any
	category   ai.Category
	confidence float64
	reason     Reason
}

// Analyse explains a run from its input, the history the caller looked up for its
// Signatures and TestKeys, and the organization's triages.
func Analyse(in Input, history History, triages []Triage) Result {
	rc := newRunContext(in.BaseURL)
	index := newTriageIndex(triages)
	in.Tests = markRetries(&in)
	selected := selectFailures(in.Tests)
	failures := make([]*analysed, 0, len(selected))
	inRun := map[string]int{}
	for _, t := range selected {
		a := &analysed{test: t}
		a.message, a.stack = t.messageAndStack()
		a.normalized = normalizeTest(t, a.message, a.stack)
		a.signature = signatureOf(a.normalized)
		inRun[a.signature]++
		failures = append(failures, a)
	}
	for _, a := range failures {
		ft := newFailureText(a.message, a.stack)
		ft.suite = a.test.Suite
		a.match = applyRules(ft, rc)
		a.decide(index, history)
	}

	res := Result{OmittedFailures: countFailures(in.Tests) - len(failures)}
	res.Failures = make([]Failure, len(failures))
	for i, a := range failures {
		past := history.Signatures[a.signature]
		first := past.FirstSeenTaskID
		if first == "" {
			first = in.TaskID
		}
		res.Failures[i] = Failure{
			Test: a.test.Name, Suite: a.test.Suite, Status: string(a.test.Status),
			Signature: a.signature, Occurrences: max(past.Occurrences, 0) + inRun[a.signature],
			FirstSeenTaskID: first, Category: a.category, Confidence: round2(a.confidence),
			Reason: a.reason, Normalized: a.normalized, proposed: a.proposed,
		}
	}
	logExcerpt := LogExcerpt(in.Log)
	res.Finding, res.Reasons = conclude(&in, failures, res.Failures, rc, logExcerpt)
	res.OtherCategories = otherCategories(res.Failures, res.Category)
	res.Evidence = buildEvidence(&in, &res, failures, logExcerpt)
	return res
}

// decide gives a failure its category from its rules' match (a.match, the suite's package
// known to the rules): passed on retry, then a person's triage, then the rules, which a test's
// alternating history overrides unless they found the environment broken.
func (a *analysed) decide(index *triageIndex, history History) {
	t := a.test
	defer a.calibrate()
	if isRetryPass(t) {
		a.category, a.confidence = ai.Flaky, 0.9
		a.reason = Reason{Rule: "passed-on-retry", Matched: firstLine(a.message),
			Detail: fmt.Sprintf("passed after %s", plural(max(t.Retries, 1), "retry", "retries"))}
		if t.rerun != "" {
			a.reason.Detail = "failed and then passed within the run: " + t.rerun
			if a.reason.Matched == "" {
				a.reason.Matched = boundRunes(t.rerun, maxMatchedBytes)
			}
		}
		return
	}
	if tr, sim := index.lookup(a.signature, func() []string { return Tokens(a.normalized) }); tr != nil {
		a.triage, a.category = tr, tr.Category
		if sim == 1 {
			a.confidence = 0.95
			a.reason = Reason{Rule: "triage", Matched: tr.Signature,
				Detail: fmt.Sprintf("%s triaged this failure (signature %s) as %s%s", triageWho(tr), tr.Signature, categoryName(tr.Category), triageWhere(tr))}
		} else {
			a.confidence = 0.6 + 0.3*(sim-NearThreshold)/(1-NearThreshold)
			a.reason = Reason{Rule: "triage-near", Matched: tr.Signature,
				Detail: fmt.Sprintf("resembles (%.0f%% of words in common) a failure %s triaged as %s%s", sim*100, triageWho(tr), categoryName(tr.Category), triageWhere(tr))}
		}
		return
	}
	if !a.match.rule.brokenEnvironment() {
		if flaky, why := alternation(history.Tests[TestKey(t.Suite, t.Name)], t.Status); flaky {
			a.category, a.confidence = ai.Flaky, 0.8
			a.reason = Reason{Rule: "alternating-history", Matched: a.match.matched, Detail: why}
			return
		}
	}
	m := a.match
	a.category, a.confidence = m.rule.category, m.strength
	detail := fmt.Sprintf("rule %s: %s", m.rule.id, m.rule.one)
	if m.target != "" {
		detail += " at " + targetPhrase(m)
	}
	a.reason = Reason{Rule: m.rule.id, Matched: m.matched, Detail: detail}
}

// brokenEnvironment reports whether a rule shows the environment itself broken, which
// explains a failure better than the test's flaky past does.
func (r *rule) brokenEnvironment() bool {
	switch r.id {
	case "out-of-memory", "connection-refused", "dns-failure", "browser-failure":
		return true
	}
	return false
}

// triageWho names the person of a triage, bounded: it is the caller's text.
func triageWho(t *Triage) string {
	if t.By == "" {
		return "someone"
	}
	return boundRunes(t.By, maxPersonBytes)
}

const maxPersonBytes = 100

// triageWhere tells the run and day of a triage: " in run-3 on 2025-03-14".
func triageWhere(t *Triage) string {
	s := ""
	if t.TaskID != "" {
		s += " in " + boundRunes(t.TaskID, maxPersonBytes)
	}
	if !t.At.IsZero() {
		s += " on " + t.At.UTC().Format("2006-01-02")
	}
	return s
}

// targetPhrase names a network failure's host for people.
func targetPhrase(m match) string {
	if m.isBase {
		return m.target + " (the run's BASE_URL)"
	}
	return m.target
}

// categoryName is a category as prose: "product bug".
func categoryName(c ai.Category) string {
	return strings.ReplaceAll(string(c), "_", " ")
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return boundRunes(strings.TrimSpace(s), maxMatchedBytes)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func round2(f float64) float64 {
	return float64(int(f*100+0.5)) / 100
}
