package analyzer

import (
	"strings"

	"verdict/internal/ai"
	"verdict/internal/domain"
)

// Bounds of the evidence: it is a model's prompt, so it stays small whatever the run (about
// 60 KiB of text at most; 24 KiB of JSON for a run of 200 failures).
const (
	MaxEvidenceFailures   = 12
	maxEvidenceMessage    = 1 << 10
	maxEvidenceStack      = 1 << 10
	maxEvidenceReasons    = 12
	maxEvidenceTestName   = 200
	maxEvidenceStackLines = 12
)

// Evidence is what a model provider is given to analyse a run: the failing tests (one per
// distinct signature first), the built-in finding and its reasons, the signatures' history and
// the log around the errors, all bounded.
type Evidence struct {
	TaskID          string            `json:"taskId"`
	BaseURL         string            `json:"baseUrl,omitempty"`
	ExitCode        *int              `json:"exitCode,omitempty"`
	RunError        string            `json:"runError,omitempty"`
	Tests           domain.Summary    `json:"tests"`
	Builtin         ai.Finding        `json:"builtin"`
	Reasons         []Reason          `json:"reasons,omitempty"`
	Failures        []EvidenceFailure `json:"failures"`
	OmittedFailures int               `json:"omittedFailures,omitempty"` // failures not listed
	LogExcerpt      string            `json:"logExcerpt,omitempty"`
}

// EvidenceFailure is one failure as a model sees it.
type EvidenceFailure struct {
	Test            string      `json:"test"`
	Suite           string      `json:"suite,omitempty"`
	Status          string      `json:"status"`
	Retries         int         `json:"retries,omitempty"`
	Message         string      `json:"message"`
	Stack           string      `json:"stack,omitempty"`
	Signature       string      `json:"signature"`
	SameInRun       int         `json:"sameInRun"` // failures of this run with this signature
	Occurrences     int         `json:"occurrences"`
	FirstSeenTaskID string      `json:"firstSeenTaskId"`
	Category        ai.Category `json:"category"`
	Reason          Reason      `json:"reason"`
}

// buildEvidence picks the failures a model should read: one of each signature, in order of
// first appearance, then more of the same if there is room.
func buildEvidence(in *Input, res *Result, failures []*analysed, logExcerpt string) Evidence {
	tests := make([]domain.TestResult, len(in.Tests))
	for i := range in.Tests {
		tests[i] = in.Tests[i].TestResult
	}
	ev := Evidence{
		TaskID: in.TaskID, BaseURL: boundRunes(in.BaseURL, maxMatchedBytes), ExitCode: in.ExitCode,
		RunError: boundRunes(in.RunError, maxMatchedBytes), Tests: domain.Summarize(tests),
		Builtin: res.Finding, LogExcerpt: logExcerpt,
	}
	ev.Reasons = res.Reasons
	if len(ev.Reasons) > maxEvidenceReasons {
		ev.Reasons = ev.Reasons[:maxEvidenceReasons]
	}
	sameInRun := map[string]int{}
	for _, a := range failures {
		sameInRun[a.signature]++
	}
	picked := make([]bool, len(failures))
	seen := map[string]bool{}
	for pass := 0; pass < 2; pass++ {
		for i, a := range failures {
			if len(ev.Failures) == MaxEvidenceFailures {
				break
			}
			if picked[i] || pass == 0 && seen[a.signature] {
				continue
			}
			picked[i], seen[a.signature] = true, true
			f := res.Failures[i]
			ev.Failures = append(ev.Failures, EvidenceFailure{
				Test: boundRunes(a.test.Name, maxEvidenceTestName), Suite: boundRunes(a.test.Suite, maxEvidenceTestName),
				Status: string(a.test.Status), Retries: a.test.Retries,
				Message: boundRunes(a.message, maxEvidenceMessage), Stack: stackHead(a.stack),
				Signature: a.signature, SameInRun: sameInRun[a.signature], Occurrences: f.Occurrences,
				FirstSeenTaskID: f.FirstSeenTaskID, Category: f.Category, Reason: f.Reason,
			})
		}
	}
	ev.OmittedFailures = len(failures) - len(ev.Failures) + res.OmittedFailures
	return ev
}

// stackHead is a stack's first lines, bounded.
func stackHead(stack string) string {
	end, lines := 0, 0
	for end < len(stack) && lines < maxEvidenceStackLines {
		i := strings.IndexByte(stack[end:], '\n')
		if i < 0 {
			end = len(stack)
			break
		}
		end += i + 1
		lines++
	}
	return boundRunes(stack[:end], maxEvidenceStack)
}
