package analyzer

import (
	"fmt"
	"strings"

	"verdict/internal/ai"
)

// exitKilled is a container's exit code when it was killed (128 + SIGKILL): the kernel's OOM
// killer, or the engine at the memory limit.
const exitKilled = 137

// oomMarkers in a log show the run ran out of memory (lower-case).
var oomMarkers = []string{"oomkilled", "out of memory", "outofmemoryerror", "killed process", "cannot allocate memory"}

// outOfMemoryLine returns the first line of a log excerpt that shows an out-of-memory failure:
// one with a marker, or the shell's bare "Killed".
func outOfMemoryLine(logExcerpt string) string {
	for _, l := range strings.Split(logExcerpt, "\n") {
		t := strings.TrimSpace(l)
		if t == "Killed" || containsAny(asciiLower(t), oomMarkers) {
			return boundRunes(t, maxMatchedBytes)
		}
	}
	return ""
}

// runLevel decides a run by what happened to the run as a whole, which outweighs any test:
// its own error (a timeout), an OOM kill, or a failed run without results.
func runLevel(in *Input, failed int, groups []*group, rc *runContext, logExcerpt string) (ai.Finding, []Reason, bool) {
	oomLine := outOfMemoryLine(logExcerpt)
	exit := -1
	if in.ExitCode != nil {
		exit = *in.ExitCode
	}
	var f ai.Finding
	var why Reason
	switch {
	case in.RunError != "":
		f = ai.Finding{Category: ai.Environment, Confidence: 0.75,
			Summary:      "The run itself ended with an error: " + boundRunes(in.RunError, maxMatchedBytes) + ".",
			RootCause:    "The run did not finish normally (" + boundRunes(in.RunError, maxMatchedBytes) + "); its test results are incomplete.",
			SuggestedFix: "Fix what stopped the run (raise its timeout if the suite needs longer, check the runner), then run it again."}
		if t := asciiLower(in.RunError); strings.Contains(t, "timeout") || strings.Contains(t, "timed out") {
			f.Confidence = 0.8
			f.Summary = "The run hit its time limit (" + boundRunes(in.RunError, maxMatchedBytes) + ") and was stopped."
			f.RootCause = "The suite ran longer than the run's timeout: tests hung or the application was slow, and the tests after that point never ran."
			f.SuggestedFix = "Find where the log stops progressing; fix the hang or the slowness, or raise the run's timeout if the suite needs longer."
		}
		why = Reason{Rule: "run-error", Matched: boundRunes(in.RunError, maxMatchedBytes), Detail: "the run ended with its own error, not only failed tests"}
	case exit == exitKilled:
		f = ai.Finding{Category: ai.Environment, Confidence: 0.85,
			Summary:      "The test container was killed (exit code 137), most likely for running out of memory.",
			RootCause:    "The container was killed with SIGKILL (exit code 137): the kernel's OOM killer or the memory limit of the run stopped it mid-suite.",
			SuggestedFix: "Raise the run's memory limit, or lower the suite's parallelism (workers, forks) and memory use."}
		detail := "exit code 137 is SIGKILL, what an out-of-memory kill gives"
		if oomLine != "" {
			f.Confidence = 0.9
			detail += "; the log confirms it"
		}
		why = Reason{Rule: "killed", Matched: firstNonEmpty(oomLine, "exit code 137"), Detail: detail}
	case oomLine != "" && (failed > 0 || exit > 0):
		f = ai.Finding{Category: ai.Environment, Confidence: 0.85,
			Summary:      "The run ran out of memory.",
			RootCause:    "The log shows an out-of-memory failure: " + oomLine,
			SuggestedFix: "Raise the run's memory limit, or lower the suite's parallelism (workers, forks) and memory use."}
		why = Reason{Rule: "out-of-memory", Matched: oomLine, Detail: "the log shows the run ran out of memory"}
	case len(in.Tests) == 0:
		f = ai.Finding{Category: ai.Environment, Confidence: 0.65,
			Summary:      "The run produced no test results" + exitPhrase(exit) + ".",
			RootCause:    "No result file was found or parsed: the suite did not start, crashed before writing its report, or wrote it outside the run's report folders.",
			SuggestedFix: "Check that the suite writes JUnit, Allure or Playwright JSON results into one of the project's report folders under /app, and read the log for why it stopped."}
		if exit == 0 {
			f.Confidence = 0.5
		}
		why = Reason{Rule: "missing-results", Matched: fmt.Sprintf("0 tests parsed%s", exitPhrase(exit)), Detail: "no test results were parsed from the run's reports"}
		f = fromLog(f, logExcerpt, rc)
	case failed == 0 && len(groups) == 0 && exit > 0:
		f = ai.Finding{Category: ai.Environment, Confidence: 0.5,
			Summary:      fmt.Sprintf("The suite exited with code %d although no parsed test failed.", exit),
			RootCause:    "The test process failed outside the tests (setup, teardown, reporter or a crash), or some results were not reported.",
			SuggestedFix: "Read the end of the log for the error after the last test, and check that every project of the suite writes its results."}
		why = Reason{Rule: "nonzero-exit", Matched: fmt.Sprintf("exit code %d", exit), Detail: "the suite failed but no test did"}
		f = fromLog(f, logExcerpt, rc)
	default:
		return ai.Finding{}, nil, false
	}
	reasons := []Reason{why}
	if len(groups) > 0 {
		total := 0
		for _, g := range groups {
			total += g.count
		}
		f.Summary += " Of the tests, " + lowerFirst(shareSentence(groups[0], total))
		reasons = append(reasons, groupReasons(groups, func(*group) bool { return true })...)
	}
	f.Summary = boundRunes(f.Summary, maxSummaryBytes)
	f.RootCause = boundRunes(f.RootCause, maxSummaryBytes)
	return f, reasons, true
}

// fromLog refines a finding about a run without results by what its log shows: an error in
// the test code or a broken environment explains the missing results.
func fromLog(f ai.Finding, logExcerpt string, rc *runContext) ai.Finding {
	if logExcerpt == "" {
		return f
	}
	m := applyRules(newFailureText(logExcerpt, ""), rc)
	if m.rule.category != ai.TestBug && m.rule.category != ai.Environment {
		return f
	}
	g := &group{explanation: m.rule, target: m.target, isBase: m.isBase}
	f.Category = m.rule.category
	f.Confidence = min(m.strength, 0.75)
	f.Summary += " The log shows " + m.rule.one + ": " + m.matched
	f.RootCause = fill(m.rule.cause, g) + " " + f.RootCause
	f.SuggestedFix = m.rule.fix
	return f
}

func exitPhrase(exit int) string {
	if exit < 0 {
		return ""
	}
	return fmt.Sprintf(" (exit code %d)", exit)
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// lowerFirst lower-cases a sentence's first letter, to continue another sentence with it.
func lowerFirst(s string) string {
	if s != "" && s[0] >= 'A' && s[0] <= 'Z' {
		return string(s[0]+'a'-'A') + s[1:]
	}
	return s
}
