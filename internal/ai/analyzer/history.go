package analyzer

import (
	"fmt"
	"strings"

	"verdict/internal/domain"
)

// History is what the caller found in the organization's earlier runs for this run's
// failures (Signatures and TestKeys say what to look up). This run is not in it.
type History struct {
	// Signatures maps a signature to its earlier occurrences.
	Signatures map[string]SignatureHistory `json:"signatures,omitempty"`
	// Tests maps a TestKey to the test's outcomes in recent earlier runs, oldest first.
	Tests map[string][]domain.TestStatus `json:"tests,omitempty"`
}

// SignatureHistory is one signature's past.
type SignatureHistory struct {
	Occurrences     int    `json:"occurrences"`     // failures with it in earlier runs
	FirstSeenTaskID string `json:"firstSeenTaskId"` // the run it first appeared in
}

// TestKey names a test across runs for History.Tests: its suite and name.
func TestKey(suite, name string) string {
	if suite == "" {
		return name
	}
	return suite + " › " + name
}

// Flakiness by history: of a test's last recentOutcomes outcomes (this run's included), at
// least minFlips changes between pass and fail, or minRetryPasses passes on retry.
const (
	recentOutcomes = 10
	minFlips       = 3
	minRetryPasses = 2
)

// alternation says whether a test's recent outcomes, ending with now, alternate between pass
// and fail, and describes them.
func alternation(past []domain.TestStatus, now domain.TestStatus) (bool, string) {
	var seq []domain.TestStatus
	for _, s := range past {
		if s == domain.TestPassed || s == domain.TestFailed || s == domain.TestFlaky {
			seq = append(seq, s)
		}
	}
	seq = append(seq, now)
	if len(seq) > recentOutcomes {
		seq = seq[len(seq)-recentOutcomes:]
	}
	flips, retryPasses := 0, 0
	for i, s := range seq {
		if s == domain.TestFlaky {
			retryPasses++
		}
		if i > 0 && (s == domain.TestFailed) != (seq[i-1] == domain.TestFailed) {
			flips++
		}
	}
	if flips < minFlips && retryPasses < minRetryPasses {
		return false, ""
	}
	words := make([]string, len(seq))
	for i, s := range seq {
		words[i] = string(s)
	}
	return true, fmt.Sprintf("its last %d outcomes were %s (oldest first, this run last): %d changes between pass and fail, %d passes on retry",
		len(seq), strings.Join(words, ", "), flips, retryPasses)
}
